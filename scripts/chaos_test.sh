#!/usr/bin/env bash
# The chaos group (issue 17, item 4), long, outside the test command: 3 `kelt run` workers
# (one group, static members) on a topic of 12 partitions while a producer writes, for
# MINUTES (default 10) of random kill -9, SIGTERM + restart and SIGSTOP/SIGCONT; then
# every offset must be in the shared Parquet directory, the shared Iceberg table (SQLite
# catalog, local warehouse; read by pyiceberg; no leftover file after a clean start) and
# the shared PostgreSQL table exactly once (tests/faults/chaos.py prints each fault and the
# check). Its own broker and PostgreSQL (stopped at the end); the work directory is kept
# (chaos.json, worker logs, the Iceberg table).
# The test command runs 60 s of it (ctest chaos_group_tests).
#
#   bash scripts/chaos_test.sh [MINUTES [RATE [SEED]]]
#
# RATE: records/s (default 500). Uses build/dev/cli/kelt (or $KELT_BIN).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

MINUTES="${1:-10}"
RATE="${2:-500}"
SEED="${3:-}"
WORK="${KELT_CHAOS_DIR:-$KELT_ROOT/build/chaos}"
KELT_BIN="${KELT_BIN:-$KELT_ROOT/build/dev/cli/kelt}"
[[ -x "$KELT_BIN" ]] || cmake --build "$KELT_ROOT/build/dev" --target kelt_cli
export KELT_CLI="$KELT_BIN"

rm -rf "$WORK/run"
mkdir -p "$WORK"
stop_services() {
  bash "$KELT_ROOT/scripts/kafka.sh" stop --dir "$WORK/kafka" >/dev/null 2>&1 || true
  bash "$KELT_ROOT/scripts/postgres.sh" stop --dir "$WORK/postgres" >/dev/null 2>&1 || true
}
trap stop_services EXIT
bash "$KELT_ROOT/scripts/kafka.sh" start --dir "$WORK/kafka" >/dev/null
bash "$KELT_ROOT/scripts/postgres.sh" start --dir "$WORK/postgres" >/dev/null
brokers="$(sed -n 's/^KELT_KAFKA_BOOTSTRAP=//p' "$WORK/kafka/env")"
conninfo="$(sed -n 's/^KELT_PG_CONNINFO=//p' "$WORK/postgres/env")"
"$KELT_VENV/bin/python" "$KELT_ROOT/tests/faults/chaos.py" --kelt "$KELT_BIN" \
  --brokers "$brokers" --pg-conninfo "$conninfo" --work "$WORK/run" \
  --seconds "$((MINUTES * 60))" --rate "$RATE" ${SEED:+--seed "$SEED"}
