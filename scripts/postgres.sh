#!/usr/bin/env bash
# A private PostgreSQL cluster on 127.0.0.1 for tests, benchmarks and the demo, run from
# Debian's postgresql package (scripts/bootstrap.sh installs it).
#
#   bash scripts/postgres.sh start [--dir DIR] [--keep]
#   bash scripts/postgres.sh stop [--dir DIR]
#   bash scripts/postgres.sh status [--dir DIR]
#
# start    Runs initdb into DIR/data (default DIR: $KELT_ROOT/build/postgres) and starts the
#          server on a free loopback port with its unix socket in DIR/sock, waits until it
#          accepts connections (KELT_PG_START_TIMEOUT, 60 s) and creates database `kelt`.
#          Superuser `kelt`, trust authentication from loopback and the socket, except role
#          `kelt_password` (random password, scram-sha-256) for tests of password logins.
#          A stopped DIR from an earlier run is wiped first unless --keep is given (--keep
#          reuses its data, port and password). Prints KELT_PG_CONNINFO=postgresql://... on
#          stdout; DIR/env (mode 600, KEY=value lines, no spaces or quotes in values) also
#          holds KELT_PG_HOST, KELT_PG_PORT, KELT_PG_USER, KELT_PG_DB, KELT_PG_SOCKET_DIR,
#          KELT_PG_PID, KELT_PG_DIR, KELT_PG_PASSWORD_USER and KELT_PG_PASSWORD.
#          Use it with: set -a; source DIR/env; set +a
#          Already running in DIR: prints the same line and exits 0.
#          As root (initdb and postgres refuse root) the cluster runs as the OS user
#          $KELT_PG_OS_USER (default `postgres`, which Debian's package creates; another name
#          is created as a system user if missing). That user must be able to reach DIR.
#          The cluster is for tests: fsync is off.
# stop     pg_ctl stop -m fast, then -m immediate, then SIGKILL, within
#          KELT_PG_STOP_TIMEOUT (30 s) each. Fine when not running.
# status   Exit 0 printing the conninfo line when DIR's server accepts connections, else 1.
# DIR holds data/ (the cluster), sock/, postgres.log, env and a .kelt-postgres marker.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

START_TIMEOUT="${KELT_PG_START_TIMEOUT:-60}"
STOP_TIMEOUT="${KELT_PG_STOP_TIMEOUT:-30}"
OS_USER="${KELT_PG_OS_USER:-postgres}"
SUPERUSER=kelt
DATABASE=kelt
PASSWORD_USER=kelt_password
MARKER=.kelt-postgres   # a DIR holding this file (or an empty one) may be wiped by start

usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }
say() { printf '[postgres] %s\n' "$*" >&2; }
die() { printf '[postgres] ERROR: %s\n' "$*" >&2; exit 1; }
now_ms() { date +%s%3N; }
secs_since() { awk -v a="$1" -v b="$(now_ms)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
is_uint() { [[ "$1" =~ ^[0-9]+$ ]]; }

# ---- arguments ------------------------------------------------------------------------------
CMD="${1:-}"
[[ -n "$CMD" ]] || { usage >&2; exit 2; }
shift
DIR="$KELT_ROOT/build/postgres"
KEEP=0
while (($#)); do
  case "$1" in
    --dir) [[ $# -ge 2 && -n "$2" ]] || die "--dir needs a directory"; DIR="$2"; shift 2 ;;
    --dir=*) DIR="${1#--dir=}"; [[ -n "$DIR" ]] || die "--dir needs a directory"; shift ;;
    --keep) KEEP=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
for v in START_TIMEOUT STOP_TIMEOUT; do
  if ! is_uint "${!v}" || ((${!v} == 0)); then
    die "KELT_PG_${v} must be a positive number of seconds"
  fi
done

# The DIR path goes into postgresql.conf and the env file unquoted.
[[ "$DIR" =~ ^[A-Za-z0-9._/+,:@=~-]+$ ]] \
  || die "--dir '$DIR': use a path without spaces, quotes, backslashes or other shell specials"
if [[ "$CMD" == start ]]; then
  mkdir -p -- "$DIR" || die "cannot create $DIR"
fi
if [[ -d "$DIR" ]]; then
  DIR="$(cd -- "$DIR" && pwd -P)"
elif [[ "$CMD" == stop || "$CMD" == status ]]; then
  say "not running ($DIR does not exist)"
  [[ "$CMD" == stop ]] && exit 0
  exit 1
fi

DATA="$DIR/data"
SOCK="$DIR/sock"
LOG="$DIR/postgres.log"
ENVFILE="$DIR/env"

# ---- helpers --------------------------------------------------------------------------------
# The newest installed PostgreSQL (Debian: /usr/lib/postgresql/<major>/bin), or $KELT_PG_BIN.
find_bin() {
  if [[ -n "${KELT_PG_BIN:-}" ]]; then echo "$KELT_PG_BIN"; return; fi
  local d best="" bestv=0 v
  for d in /usr/lib/postgresql/*/bin; do
    [[ -x "$d/initdb" ]] || continue
    v="$(basename "$(dirname "$d")")"
    is_uint "$v" && ((v > bestv)) && { best="$d"; bestv="$v"; }
  done
  [[ -n "$best" ]] || best="$(dirname "$(command -v initdb 2>/dev/null || echo /nonexistent/x)")"
  echo "$best"
}
BIN="$(find_bin)"
need_tools() {
  [[ -x "$BIN/initdb" && -x "$BIN/pg_ctl" && -x "$BIN/psql" ]] \
    || die "no PostgreSQL server binaries in '$BIN' (run: bash scripts/bootstrap.sh)"
  command -v python3 >/dev/null 2>&1 || die "python3 not found"
}

# as_pg CMD...: runs CMD as the cluster's OS user (root cannot run initdb, pg_ctl, postgres).
as_pg() {
  if ((EUID == 0)); then
    runuser -u "$OS_USER" -- "$@"
  else
    "$@"
  fi
}

# Makes sure the OS user exists (as root) and can reach DIR.
prepare_os_user() {
  ((EUID == 0)) || return 0
  command -v runuser >/dev/null 2>&1 || die "runuser not found (util-linux)"
  if ! id -u "$OS_USER" >/dev/null 2>&1; then
    say "creating system user $OS_USER"
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
      "$OS_USER" 2>/dev/null || id -u "$OS_USER" >/dev/null 2>&1 \
      || die "cannot create OS user $OS_USER"
  fi
  runuser -u "$OS_USER" -- test -x "$DIR" \
    || die "OS user $OS_USER cannot enter $DIR (a parent directory is not searchable);" \
           "use another --dir"
}

# alive PID: the process exists and is not a zombie.
alive() {
  local stat
  kill -0 "$1" 2>/dev/null || return 1
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
  stat="${stat##*) }"
  [[ "${stat:0:1}" != Z ]]
}

# The postmaster pid of DIR's cluster when it runs, else nothing and rc 1: the first line of
# postmaster.pid, checked against the process's command line (a stale file after a crash or
# reboot can name an unrelated process).
running_pid() {
  local pid cmdline
  [[ -f "$DATA/postmaster.pid" ]] || return 1
  pid="$(head -n1 "$DATA/postmaster.pid" 2>/dev/null)" || return 1
  is_uint "$pid" && alive "$pid" || return 1
  cmdline="$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)" || return 1
  [[ "$cmdline" == *"postgres"*" -D $DATA "* || "$cmdline" == *"postgres"*" -D $DATA" ]] \
    || return 1
  echo "$pid"
}

# conf_port: the port in DIR's postgresql.conf (empty when absent).
conf_port() { sed -n "s/^port = \([0-9]*\).*/\1/p" "$DATA/postgresql.conf" 2>/dev/null | tail -n1; }
envval() { sed -n "s/^$1=//p" "$ENVFILE" 2>/dev/null | tail -n1; }

conninfo() { echo "postgresql://$SUPERUSER@127.0.0.1:$(conf_port)/$DATABASE"; }
print_conninfo() { echo "KELT_PG_CONNINFO=$(conninfo)"; }

# psql_admin ARGS...: psql as the superuser over TCP, bounded, quiet, stopping on errors.
psql_admin() {
  PGCONNECT_TIMEOUT=10 timeout 60 "$BIN/psql" -X -q -v ON_ERROR_STOP=1 \
    -h 127.0.0.1 -p "$(conf_port)" -U "$SUPERUSER" "$@" 9<&-
}

accepting() {
  PGCONNECT_TIMEOUT=5 timeout 10 "$BIN/pg_isready" -q -h 127.0.0.1 -p "$1" -U "$SUPERUSER" \
    -d postgres 9<&- >/dev/null 2>&1
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

random_password() {
  local pw=""
  while ((${#pw} < 32)); do
    pw+="$(LC_ALL=C tr -dc 'A-Za-z0-9' < <(head -c 256 /dev/urandom))"
  done
  printf '%s' "${pw:0:32}"
}

# Holds a lock on DIR (fd 9) so that two start/stop calls on one DIR do not interleave.
lock_dir() {
  exec 9<"$DIR"
  flock -w "$((START_TIMEOUT + 3 * STOP_TIMEOUT + 30))" 9 \
    || die "another postgres.sh holds $DIR (timed out waiting for it)"
}

# Empties DIR (only a DIR that postgres.sh made, or an empty one).
wipe_dir() {
  if [[ -n "$(ls -A -- "$DIR")" && ! -f "$DIR/$MARKER" ]]; then
    die "$DIR is not empty and was not made by postgres.sh (no $MARKER); refusing to wipe it"
  fi
  find "$DIR" -mindepth 1 -maxdepth 1 -exec rm -rf -- {} +
  : >"$DIR/$MARKER"
}

show_log_tail() {
  if [[ -f "$LOG" ]]; then
    printf '[postgres] last 30 lines of %s:\n' "$LOG" >&2
    tail -n 30 "$LOG" >&2
  fi
}

write_env() {
  local pid="$1" pw="$2" tmp="$ENVFILE.tmp.$$" port
  port="$(conf_port)"
  (
    umask 077
    {
      echo "KELT_PG_CONNINFO=$(conninfo)"
      echo "KELT_PG_HOST=127.0.0.1"
      echo "KELT_PG_PORT=$port"
      echo "KELT_PG_USER=$SUPERUSER"
      echo "KELT_PG_DB=$DATABASE"
      echo "KELT_PG_SOCKET_DIR=$SOCK"
      echo "KELT_PG_PID=$pid"
      echo "KELT_PG_DIR=$DIR"
      echo "KELT_PG_PASSWORD_USER=$PASSWORD_USER"
      echo "KELT_PG_PASSWORD=$pw"
    } >"$tmp"
  )
  chmod 600 "$tmp"
  mv -f "$tmp" "$ENVFILE"
}

# ---- start ----------------------------------------------------------------------------------
init_cluster() {
  local out
  mkdir -p "$DATA" "$SOCK"
  : >"$LOG"
  if ((EUID == 0)); then chown "$OS_USER:" "$DATA" "$SOCK" "$LOG"; fi
  chmod 700 "$DATA"
  if ! out="$(cd / && as_pg timeout 120 "$BIN/initdb" -D "$DATA" -U "$SUPERUSER" \
                 --auth=trust --encoding=UTF8 --locale=C.UTF-8 --no-sync 2>&1 9<&-)"; then
    printf '%s\n' "$out" >&2
    die "initdb failed"
  fi
  # Trust on loopback and the socket only; the password role logs in with SCRAM (first
  # matching line wins, so its line comes first).
  cat >"$DATA/pg_hba.conf" <<EOF
# Written by scripts/postgres.sh: a test cluster reachable from this machine only.
# TYPE  DATABASE  USER            ADDRESS        METHOD
local   all       $PASSWORD_USER                 scram-sha-256
host    all       $PASSWORD_USER  127.0.0.1/32   scram-sha-256
local   all       all                            trust
host    all       all             127.0.0.1/32   trust
EOF
  if ((EUID == 0)); then chown "$OS_USER:" "$DATA/pg_hba.conf"; fi
}

# set_port PORT: (re)writes kelt's settings at the end of postgresql.conf.
set_port() {
  local conf="$DATA/postgresql.conf" sockdir="$SOCK"
  sed -i '/^# kelt settings/,$d' "$conf"
  # A unix socket path longer than 107 bytes cannot be bound: then TCP only.
  ((${#SOCK} + 20 < 107)) || sockdir=""
  cat >>"$conf" <<EOF
# kelt settings (scripts/postgres.sh)
port = $1
listen_addresses = '127.0.0.1'
unix_socket_directories = '$sockdir'
fsync = off
full_page_writes = off
max_connections = 50
shared_buffers = 64MB
log_min_messages = warning
EOF
}

# launch_and_wait: pg_ctl start (which setsid()s the postmaster, so a test runner's group
# kill does not take it down) and wait until it accepts connections. Returns 0 when ready
# (pid in SERVER_PID), 2 when the port was taken meanwhile (the caller retries), else 1.
SERVER_PID=""
launch_and_wait() {
  local t0 deadline pid="" port
  port="$(conf_port)"
  t0="$(now_ms)"
  deadline=$((t0 + START_TIMEOUT * 1000))
  if ! (cd / && as_pg "$BIN/pg_ctl" start -D "$DATA" -l "$LOG" -w -t "$START_TIMEOUT" \
          >/dev/null 2>&1 9<&-); then
    if grep -q 'could not bind\|Address already in use' "$LOG"; then return 2; fi
    say "pg_ctl start failed"
    show_log_tail
    pid="$(running_pid)" && kill -KILL "$pid" 2>/dev/null
    return 1
  fi
  while ! accepting "$port"; do
    if (($(now_ms) > deadline)); then
      say "the server did not accept connections within ${START_TIMEOUT}s"
      show_log_tail
      return 1
    fi
    sleep 0.1
  done
  pid="$(running_pid)" || { say "the server is up but its pid was not found"; return 1; }
  say "server pid $pid (PostgreSQL $("$BIN/postgres" --version | awk '{print $3}')) on" \
      "127.0.0.1:$port up in $(secs_since "$t0")s (log: $LOG)"
  SERVER_PID="$pid"
}

# Creates database kelt and the password role (idempotent). The password goes through stdin.
provision() {
  local pw="$1" exists
  exists="$(psql_admin -d postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DATABASE'")"
  [[ "$exists" == 1 ]] || psql_admin -d postgres -c "CREATE DATABASE $DATABASE" \
    || die "could not create database $DATABASE"
  psql_admin -d postgres -v "pw=$pw" >/dev/null <<EOF || die "could not create role $PASSWORD_USER"
SET password_encryption = 'scram-sha-256';
SELECT format('CREATE ROLE %I LOGIN', '$PASSWORD_USER')
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PASSWORD_USER') \gexec
ALTER ROLE $PASSWORD_USER PASSWORD :'pw';
GRANT ALL ON DATABASE $DATABASE TO $PASSWORD_USER;
\\connect $DATABASE
GRANT USAGE, CREATE ON SCHEMA public TO $PASSWORD_USER;
EOF
}

cmd_start() {
  need_tools
  lock_dir
  prepare_os_user
  local t0 pid pw="" attempt rc=1
  t0="$(now_ms)"
  if pid="$(running_pid)"; then
    say "already running in $DIR (pid $pid)"
    print_conninfo
    return 0
  fi
  if ((KEEP)) && [[ -f "$DATA/PG_VERSION" && -n "$(conf_port)" ]]; then
    say "keeping $DIR (same port and data)"
    pw="$(envval KELT_PG_PASSWORD)"
    launch_and_wait || { rc=$?; ((rc != 2)) || show_log_tail; die "start failed"; }
  else
    wipe_dir
    init_cluster
    for attempt in 1 2 3; do
      set_port "$(free_port)" || die "could not pick a free port (python3)"
      rc=0
      launch_and_wait || rc=$?
      ((rc == 2)) || break
      say "the port was taken meanwhile (attempt $attempt); trying another"
    done
    if ((rc == 2)); then show_log_tail; die "start failed: ports kept being taken"; fi
    ((rc == 0)) || die "start failed"
  fi
  [[ -n "$pw" ]] || pw="$(random_password)"
  provision "$pw"
  write_env "$SERVER_PID" "$pw"
  say "start took $(secs_since "$t0")s in total"
  print_conninfo
}

# ---- stop / status --------------------------------------------------------------------------
cmd_stop() {
  lock_dir
  local pid i mode
  if ! pid="$(running_pid)"; then
    say "not running ($DIR)"
    return 0
  fi
  for mode in fast immediate; do
    (cd / && as_pg "$BIN/pg_ctl" stop -D "$DATA" -m "$mode" -w -t "$STOP_TIMEOUT" \
       >/dev/null 2>&1 9<&-) || true
    alive "$pid" || break
    say "pid $pid still running after pg_ctl stop -m $mode"
  done
  if alive "$pid"; then
    say "SIGKILL pid $pid"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_TIMEOUT * 10; i++)); do alive "$pid" || break; sleep 0.1; done
    alive "$pid" && die "pid $pid survives SIGKILL"
  fi
  say "stopped (pid $pid)"
}

cmd_status() {
  local pid
  if pid="$(running_pid)" && accepting "$(conf_port)"; then
    print_conninfo
    return 0
  fi
  say "not running ($DIR)"
  return 1
}

case "$CMD" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  -h|--help|help) usage ;;
  *) usage >&2; exit 2 ;;
esac
