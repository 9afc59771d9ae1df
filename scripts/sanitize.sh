#!/usr/bin/env bash
# CI's sanitizer run (.ci/run calls it after scripts/test.sh has installed the packages):
# address and undefined-behaviour sanitizers (ATVOSS_SANITIZE) over the unit suites of the
# code that reads untrusted input — core (JSON, schedules, workloads), db (database files,
# truncated ones too) and rpc (network frames, nesting bounds, the farm's state machine).
# A nightly-style subset: the other suites run unsanitized in scripts/test.sh.
# SANITIZE_BUILD_DIR (default build-sanitize) and SANITIZE_SUITES may be overridden.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${SANITIZE_BUILD_DIR:-$ROOT/build-sanitize}"
SUITES="${SANITIZE_SUITES:-atvoss_core_tests atvoss_db_tests atvoss_rpc_tests}"
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  # -O1: the sanitizers' usual level, and a third less compile time than -O3.
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DATVOSS_SANITIZE=ON -DATVOSS_BUILD_BENCH=OFF -DATVOSS_BUILD_PYTHON=OFF >&2
fi
targets=()
for s in $SUITES; do targets+=(--target "$s"); done
cmake --build "$BUILD" -j "$(nproc)" "${targets[@]}" >&2
# halt_on_error: undefined behaviour fails the test instead of printing and going on.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
ctest --test-dir "$BUILD" -L "^($(echo "$SUITES" | tr ' ' '|'))\$" -j "$(nproc)" --output-on-failure --timeout 900
