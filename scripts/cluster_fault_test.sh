#!/usr/bin/env bash
# The long variant of the cluster fault tests (tests/faults/test_cluster.py), outside the
# test command: leader kill -9 mid-run and mid-produce, and a rolling bounce, against a
# 3-node KRaft cluster of its own (kafka.sh start --brokers 3; stopped at the end).
#
#   bash scripts/cluster_fault_test.sh [RECORDS [ROUNDS [PYTEST_FILTER]]]
#
# Defaults: 200000 records per test (the mid-produce test writes 6x as many), 3 rounds,
# every test. Uses build/dev/cli/kelt (or $KELT_BIN); builds it when it is missing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

RECORDS="${1:-200000}"
ROUNDS="${2:-3}"
FILTER="${3:-}"
WORK="${KELT_CLUSTER_FAULT_DIR:-$KELT_ROOT/build/cluster-fault}"
KELT_BIN="${KELT_BIN:-$KELT_ROOT/build/dev/cli/kelt}"
[[ -x "$KELT_BIN" ]] || cmake --build "$KELT_ROOT/build/dev" --target kelt_cli
export KELT_BIN KELT_CLI="$KELT_BIN" KELT_FAULT_RECORDS="$RECORDS"
export KELT_KAFKA_ENV="$WORK/kafka/env"

mkdir -p "$WORK"
trap 'bash "$KELT_ROOT/scripts/kafka.sh" stop --dir "$WORK/kafka" || true' EXIT
bash "$KELT_ROOT/scripts/kafka.sh" start --brokers 3 --dir "$WORK/kafka" >/dev/null

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS ($RECORDS records)"
  "$KELT_VENV/bin/python" -m pytest -q -s -p no:cacheprovider --durations=0 \
    ${FILTER:+-k "$FILTER"} "$KELT_ROOT/tests/faults/test_cluster.py"
done
