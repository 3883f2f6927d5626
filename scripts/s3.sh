#!/usr/bin/env bash
# A local S3-compatible object store on 127.0.0.1 for tests and the demo: moto's server
# mode (Apache-2.0, from PyPI; scripts/bootstrap.sh installs it into the venv).
#
#   bash scripts/s3.sh start [--dir DIR] [--bucket NAME]
#   bash scripts/s3.sh stop [--dir DIR]
#   bash scripts/s3.sh status [--dir DIR]
#
# start   Starts moto_server on a free loopback port, waits until it answers (bounded by
#         KELT_S3_START_TIMEOUT, 30 s), creates the bucket (default `kelt`) and writes
#         DIR/env (default DIR: $KELT_ROOT/build/s3): KELT_S3_ENDPOINT=http://127.0.0.1:PORT,
#         KELT_S3_BUCKET, KELT_S3_PID, and the fixed test credentials AWS_ACCESS_KEY_ID /
#         AWS_SECRET_ACCESS_KEY (`testing`) with AWS_REGION=us-east-1. Prints the endpoint
#         line. Already running in DIR: prints it again and exits 0. Data lives in memory.
# stop    SIGTERM, then SIGKILL after 10 s. Fine when not running.
# status  Exit 0 printing the endpoint line when DIR's server answers, else 1.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

START_TIMEOUT="${KELT_S3_START_TIMEOUT:-30}"
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }
say() { printf '[s3] %s\n' "$*" >&2; }
die() { printf '[s3] ERROR: %s\n' "$*" >&2; exit 1; }

CMD="${1:-}"
[[ -n "$CMD" ]] || { usage >&2; exit 2; }
shift
DIR="$KELT_ROOT/build/s3"
BUCKET=kelt
while (($#)); do
  case "$1" in
    --dir) [[ $# -ge 2 && -n "$2" ]] || die "--dir needs a directory"; DIR="$2"; shift 2 ;;
    --bucket) [[ $# -ge 2 && "$2" =~ ^[a-z0-9][a-z0-9.-]{2,62}$ ]] || die "--bucket needs an S3 bucket name"; BUCKET="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
ENVFILE="$DIR/env"
MOTO="$KELT_VENV/bin/moto_server"
PY="$KELT_VENV/bin/python"

envval() { sed -n "s/^$1=//p" "$ENVFILE" 2>/dev/null | tail -n1; }
answers() { curl -fsS -o /dev/null --max-time 2 "$1/" 2>/dev/null; }
alive() { local pid; pid="$(envval KELT_S3_PID)"; [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; }

case "$CMD" in
  start)
    [[ -x "$MOTO" ]] || die "no $MOTO; run scripts/bootstrap.sh"
    mkdir -p "$DIR"
    if alive && answers "$(envval KELT_S3_ENDPOINT)"; then
      echo "KELT_S3_ENDPOINT=$(envval KELT_S3_ENDPOINT)"
      exit 0
    fi
    port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    endpoint="http://127.0.0.1:$port"
    setsid "$MOTO" -H 127.0.0.1 -p "$port" >"$DIR/moto.log" 2>&1 </dev/null &
    pid=$!
    deadline=$((SECONDS + START_TIMEOUT))
    until answers "$endpoint"; do
      kill -0 "$pid" 2>/dev/null || die "moto_server exited (see $DIR/moto.log)"
      ((SECONDS < deadline)) || { kill "$pid" 2>/dev/null; die "moto_server did not answer within ${START_TIMEOUT}s"; }
      sleep 0.2
    done
    umask 077
    cat >"$ENVFILE" <<ENV
KELT_S3_ENDPOINT=$endpoint
KELT_S3_BUCKET=$BUCKET
KELT_S3_PID=$pid
AWS_ACCESS_KEY_ID=testing
AWS_SECRET_ACCESS_KEY=testing
AWS_REGION=us-east-1
ENV
    # Create the bucket (an unsigned PUT is accepted by moto).
    curl -fsS -o /dev/null -X PUT "$endpoint/$BUCKET" || die "creating bucket $BUCKET failed"
    say "moto_server on $endpoint, bucket $BUCKET"
    echo "KELT_S3_ENDPOINT=$endpoint"
    ;;
  stop)
    if alive; then
      pid="$(envval KELT_S3_PID)"
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
      kill -9 "$pid" 2>/dev/null || true
      say "stopped"
    else
      say "not running"
    fi
    ;;
  status)
    if alive && answers "$(envval KELT_S3_ENDPOINT)"; then
      echo "KELT_S3_ENDPOINT=$(envval KELT_S3_ENDPOINT)"
    else
      exit 1
    fi
    ;;
  *) usage >&2; exit 2 ;;
esac
