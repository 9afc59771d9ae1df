#!/usr/bin/env bash
# Runs the database benchmarks (bench_db, and bench_farm's logged dispatch) on SQLite and on
# PostgreSQL side by side: starts a throwaway
# durable PostgreSQL server (fsync on, as a real one) on a Unix socket, points bench_db at
# it, and removes it afterwards.
#   bench/db_postgres.sh [BUILD_DIR] [extra bench_db flags...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
shift || true
dir="/tmp/atvoss-pg-bench-$$"
cluster="$root/tests/db/pg_cluster.sh"
trap 'bash "$cluster" stop "$dir"' EXIT
bash "$cluster" start "$dir" 54331 durable >/dev/null
export PGPASSFILE="$dir/pgpass"
export ATVOSS_BENCH_PG_URL="postgresql://atvoss@/atvoss?host=$dir&port=54331"
"$build/bin/bench_db" --benchmark_filter='InsertShared|BestK_1M' "$@"
"$build/bin/bench_farm" --benchmark_filter='DispatchLogged' "$@"
