#!/usr/bin/env bash
# The long exactly-once soak, outside the test command: the crash tests of
# tests/integration/elt_crash_test.cc with many records and many kills, against their own
# broker, S3 server and PostgreSQL cluster (started here, stopped at the end).
#
#   bash scripts/crash_test.sh [RECORDS [KILLS [WINDOW [GTEST_FILTER]]]]
#
# Defaults: 200000 records, 30 kills, windows of 500 records, every sink. Needs a dev build (scripts/test.sh or
# `cmake --preset dev && cmake --build build/dev`); builds the test target itself.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

RECORDS="${1:-200000}"
KILLS="${2:-30}"
WINDOW="${3:-500}"
FILTER="${4:-*}"
BUILD="$KELT_ROOT/build/dev"
WORK="$KELT_ROOT/build/crash"

cmake --build "$BUILD" --target elt_crash_test elt_child -j"$(nproc)"
mkdir -p "$WORK"
cleanup() {
  bash "$KELT_ROOT/scripts/kafka.sh" stop --dir "$WORK/kafka" || true
  bash "$KELT_ROOT/scripts/s3.sh" stop --dir "$WORK/s3" || true
  bash "$KELT_ROOT/scripts/postgres.sh" stop --dir "$WORK/postgres" || true
}
trap cleanup EXIT
bash "$KELT_ROOT/scripts/kafka.sh" start --dir "$WORK/kafka" >/dev/null
bash "$KELT_ROOT/scripts/s3.sh" start --dir "$WORK/s3" >/dev/null
bash "$KELT_ROOT/scripts/postgres.sh" start --dir "$WORK/postgres" >/dev/null

KELT_CRASH_N="$RECORDS" KELT_CRASH_KILLS="$KILLS" KELT_CRASH_WINDOW="$WINDOW" \
  KELT_KAFKA_ENV="$WORK/kafka/env" KELT_S3_ENV="$WORK/s3/env" KELT_PG_ENV="$WORK/postgres/env" \
  "$BUILD/tests/elt_crash_test" --gtest_filter="EltCrashTest.$FILTER"
