#!/usr/bin/env bash
# `make services`: the servers a team runs beside the pipeline, for the services test tier
# (`make test-services`) and for trying the team setup by hand (docs/team.md):
#   - PostgreSQL, the MLflow tracking server's backend store;
#   - MariaDB (MySQL's protocol), ML Metadata's store.
# Both come from Debian's packages (as `make browser` installs Chromium) and run as private
# instances under $SERVICES_DIR, listening on loopback ports only, with trust authentication for
# the `tfxt` user on loopback (a test instance: docs/team.md says what a team's needs).
# Idempotent: an instance that answers is kept. `scripts/services.sh stop` stops both.
set -euo pipefail

SERVICES_DIR=${SERVICES_DIR:-/tmp/tfx-transformers-services}
PG_PORT=${TFXT_POSTGRES_PORT:-55432}
MYSQL_PORT=${TFXT_MYSQL_PORT:-53306}
SERVICE_USER=tfxt
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

# Runs a command as the service's own system user when root (PostgreSQL refuses to run as
# root), else as the caller.
as() {
  local user=$1
  shift
  if [ "$(id -u)" = 0 ]; then runuser -u "$user" -- "$@"; else "$@"; fi
}

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1; }

install() {
  if [ -n "$(pg_bin)" ] && command -v mariadbd >/dev/null; then return; fi
  echo "Installing PostgreSQL and MariaDB from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y --no-install-recommends postgresql mariadb-server \
    || { $SUDO apt-get update && $SUDO apt-get install -y --no-install-recommends postgresql mariadb-server; }
}

start_postgres() {
  local bin data=$SERVICES_DIR/postgresql
  bin=$(pg_bin)
  if "$bin/pg_isready" -q -h 127.0.0.1 -p "$PG_PORT"; then
    echo "PostgreSQL already answers on 127.0.0.1:$PG_PORT"
    return
  fi
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres: "$data"
  chmod 700 "$data"
  # A killed server leaves its lock file; after a restart of the machine its PID may name
  # another process, which PostgreSQL would take for a live server.
  if [ -f "$data/postmaster.pid" ] \
    && ! ps -p "$(head -1 "$data/postmaster.pid")" -o comm= 2>/dev/null | grep -q postgres; then
    rm -f "$data/postmaster.pid"
  fi
  if [ ! -f "$data/PG_VERSION" ]; then
    as postgres "$bin/initdb" -D "$data" -U "$SERVICE_USER" --auth-local=trust --auth-host=trust \
      -E UTF8 >"$SERVICES_DIR/postgresql-init.log"
  fi
  as postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w start -o \
    "-p $PG_PORT -c listen_addresses=127.0.0.1 -c unix_socket_directories=$data -c max_connections=200"
  "$bin/psql" -h 127.0.0.1 -p "$PG_PORT" -U "$SERVICE_USER" -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname = 'mlflow'" | grep -q 1 \
    || "$bin/createdb" -h 127.0.0.1 -p "$PG_PORT" -U "$SERVICE_USER" mlflow
  echo "PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT"
}

mariadb_ping() {
  mariadb-admin --protocol=tcp -h 127.0.0.1 -P "$MYSQL_PORT" -u "$SERVICE_USER" ping >/dev/null 2>&1
}

start_mariadb() {
  local data=$SERVICES_DIR/mariadb socket=$SERVICES_DIR/mariadb.sock owner=mysql
  if mariadb_ping; then
    echo "MariaDB already answers on 127.0.0.1:$MYSQL_PORT"
    return
  fi
  [ "$(id -u)" = 0 ] || owner=$(id -un)
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown mysql: "$data"
  if [ ! -d "$data/mysql" ]; then
    mariadb-install-db --datadir="$data" --user="$owner" --auth-root-authentication-method=socket \
      --skip-test-db >"$SERVICES_DIR/mariadb-init.log" 2>&1
  fi
  [ "$(id -u)" = 0 ] && chown mysql: "$SERVICES_DIR"
  # A killed instance leaves its socket and pid file behind: nothing answers on them.
  rm -f "$socket" "$SERVICES_DIR/mariadb.pid"
  setsid mariadbd --no-defaults --datadir="$data" --user="$owner" --port="$MYSQL_PORT" \
    --bind-address=127.0.0.1 --socket="$socket" --pid-file="$SERVICES_DIR/mariadb.pid" \
    --log-error="$SERVICES_DIR/mariadb.log" --skip-name-resolve --max-connections=200 \
    </dev/null >/dev/null 2>&1 &
  # The instance's own administrator is the OS user that installed it (socket authentication).
  local admin
  admin=$([ "$(id -u)" = 0 ] && echo root || id -un)
  for _ in $(seq 120); do
    mariadb --socket="$socket" -u "$admin" -e "SELECT 1" >/dev/null 2>&1 && break
    sleep 0.5
  done
  mariadb --socket="$socket" -u "$admin" -e "
    CREATE USER IF NOT EXISTS '$SERVICE_USER'@'127.0.0.1';
    GRANT ALL PRIVILEGES ON *.* TO '$SERVICE_USER'@'127.0.0.1' WITH GRANT OPTION;
    CREATE DATABASE IF NOT EXISTS mlmd;"
  mariadb_ping || { echo "MariaDB did not start: see $SERVICES_DIR/mariadb.log" >&2; exit 1; }
  echo "MariaDB $(mariadbd --version | awk '{print $3}') on 127.0.0.1:$MYSQL_PORT"
}

stop() {
  local bin
  bin=$(pg_bin)
  [ -n "$bin" ] && [ -f "$SERVICES_DIR/postgresql/postmaster.pid" ] \
    && as postgres "$bin/pg_ctl" -D "$SERVICES_DIR/postgresql" -m fast stop || true
  [ -f "$SERVICES_DIR/mariadb.pid" ] && kill "$(cat "$SERVICES_DIR/mariadb.pid")" || true
}

case "${1:-start}" in
  start)
    mkdir -p "$SERVICES_DIR"
    [ "$(id -u)" = 0 ] && chmod 755 "$SERVICES_DIR"
    install
    start_postgres
    start_mariadb
    cat <<EOF
The services tier reads these (their defaults):
  TFXT_POSTGRES_URI=postgresql://$SERVICE_USER@127.0.0.1:$PG_PORT/mlflow
  TFXT_MYSQL_URI=mysql://$SERVICE_USER@127.0.0.1:$MYSQL_PORT/mlmd
EOF
    ;;
  stop) stop ;;
  *)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac
