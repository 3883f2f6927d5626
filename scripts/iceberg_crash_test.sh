#!/usr/bin/env bash
# The long variant of the Iceberg kill -9 test (tests/iceberg/test_iceberg.py
# ::test_kill_9_mid_run_then_rerun_lands_each_record_once), outside the test command:
# `kelt run` into an Iceberg table (SQLite catalog, local warehouse) killed with kill -9
# at random moments ROUNDS times, then a final run; pyiceberg must read every offset
# exactly once, and the next start must leave no file of a crashed commit. Against a
# broker of its own (started here, stopped at the end).
#
#   bash scripts/iceberg_crash_test.sh [ROUNDS [RECORDS [SEED]]]
#
# Defaults: 30 rounds, 60000 records, a random seed (printed; pass it to replay the
# kill moments). Uses build/dev/cli/kelt (or $KELT_BIN); builds it when it is missing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

ROUNDS="${1:-30}"
RECORDS="${2:-60000}"
SEED="${3:-}"
WORK="${KELT_ICEBERG_CRASH_DIR:-$KELT_ROOT/build/iceberg-crash}"
KELT_BIN="${KELT_BIN:-$KELT_ROOT/build/dev/cli/kelt}"
[[ -x "$KELT_BIN" ]] || cmake --build "$KELT_ROOT/build/dev" --target kelt_cli
export KELT_BIN KELT_CLI="$KELT_BIN"
export KELT_KAFKA_ENV="$WORK/kafka/env"
export KELT_ICEBERG_CRASH_ROUNDS="$ROUNDS" KELT_ICEBERG_CRASH_RECORDS="$RECORDS"
[[ -n "$SEED" ]] && export KELT_ICEBERG_CRASH_SEED="$SEED"

mkdir -p "$WORK"
trap 'bash "$KELT_ROOT/scripts/kafka.sh" stop --dir "$WORK/kafka" || true' EXIT
bash "$KELT_ROOT/scripts/kafka.sh" start --dir "$WORK/kafka" >/dev/null

"$KELT_VENV/bin/python" -m pytest -q -s -p no:cacheprovider --durations=0 \
  -k test_kill_9_mid_run_then_rerun_lands_each_record_once \
  "$KELT_ROOT/tests/iceberg/test_iceberg.py"
