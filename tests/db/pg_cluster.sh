#!/usr/bin/env bash
# Starts or stops the throwaway PostgreSQL cluster that the db tests run against (a ctest
# fixture: tests/db/CMakeLists.txt). It listens only on a Unix socket in DIR, so two build
# trees never collide. The role "atvoss" logs in with a password (SCRAM), which the tests
# read from DIR/pgpass (PGPASSFILE); the password is never on a command line.
#   pg_cluster.sh start DIR [PORT [durable]]  |  restart DIR  |  stop DIR
# "durable" keeps fsync on (the benchmarks measure durable inserts); the tests turn it off.
# As root, the server runs as the "postgres" user (initdb refuses root), as pg_virtualenv does.
set -euo pipefail
cmd=$1
dir=$2
port=${3:-54329}
fsync=off
if [ "${4:-}" = durable ]; then fsync=on; fi
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bin" ]; then
  echo "pg_cluster.sh: no PostgreSQL server found under /usr/lib/postgresql (install the postgresql package; scripts/setup.sh does)" >&2
  exit 1
fi
as_server() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
stop() {
  if [ -f "$dir/data/postmaster.pid" ]; then as_server "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true; fi
}
case "$cmd" in
  start)
    stop
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
    chmod 755 "$dir"
    pw=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    as_server "$bin/initdb" -D "$dir/data" -U atvoss_admin -E UTF8 --locale=C --auth-local=trust \
      --no-sync >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    printf 'local all atvoss_admin trust\nlocal all all scram-sha-256\n' | as_server tee "$dir/data/pg_hba.conf" >/dev/null
    # fsync off for tests: a test cluster is thrown away; the tests kill clients and restart
    # the server cleanly, never the machine.
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-k $dir -p $port -c listen_addresses= -c fsync=$fsync -c max_connections=200" start >/dev/null \
      || { cat "$dir/server.log" >&2; exit 1; }
    "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U atvoss_admin -d postgres <<SQL
CREATE ROLE atvoss LOGIN PASSWORD '$pw';
CREATE DATABASE atvoss OWNER atvoss;
SQL
    umask 077
    printf '*:*:*:atvoss:%s\n' "$pw" >"$dir/pgpass"
    echo "PostgreSQL test cluster up: postgresql://atvoss@/atvoss?host=$dir&port=$port"
    ;;
  restart)
    as_server "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 -m fast restart >/dev/null
    ;;
  stop)
    stop
    rm -rf "$dir"
    ;;
  *)
    echo "usage: pg_cluster.sh start DIR [PORT [durable]] | restart DIR | stop DIR" >&2
    exit 2
    ;;
esac
