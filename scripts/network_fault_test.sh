#!/usr/bin/env bash
# The long variant of the network fault tests, outside the test command: between kelt and
# the broker (tests/faults/test_network.py) latency with jitter, a connection cut, a
# partition longer than the session timeout (with librdkafka's default socket.timeout.ms
# of 60 s) and a 1 MB/s link; between kelt and PostgreSQL or S3
# (tests/faults/test_network_sinks.py) a connection cut under a steady producer, a
# PostgreSQL partition past the sink's TCP timeouts, latency and a 1 MB/s link. Each against services and a network namespace of the test's own.
# Needs root.
#
#   bash scripts/network_fault_test.sh [RECORDS [CUT_S [PARTITION_S [ROUNDS [SINK_RECORDS]]]]]
#
# Defaults: 40000 records (broker tests), a 30 s cut (both files), a 60 s partition,
# 1 round, 10000 records of ~1,000 B in the sinks' slow-link tests (half of it in their
# latency tests). Uses build/dev/cli/kelt (or $KELT_BIN); builds it when it is missing.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

RECORDS="${1:-40000}"
CUT_S="${2:-30}"
PARTITION_S="${3:-60}"
ROUNDS="${4:-1}"
SINK_RECORDS="${5:-10000}"
KELT_BIN="${KELT_BIN:-$KELT_ROOT/build/dev/cli/kelt}"
[[ -x "$KELT_BIN" ]] || cmake --build "$KELT_ROOT/build/dev" --target kelt_cli
export KELT_BIN KELT_CLI="$KELT_BIN" KELT_NET_RECORDS="$RECORDS" KELT_NET_CUT_S="$CUT_S"
export KELT_NET_PARTITION_S="$PARTITION_S" KELT_NET_SOCKET_TIMEOUT_MS=""
# The PostgreSQL partition: 90 s (KELT_NET_SINK_PARTITION_S), past the sink's default
# TCP timeouts (keepalives after 30 s idle, tcp_user_timeout 60 s), which it keeps.
export KELT_NET_SINK_RECORDS="$SINK_RECORDS" KELT_NET_SINK_CUT_S="$CUT_S"
export KELT_NET_SINK_PARTITION_S="${KELT_NET_SINK_PARTITION_S:-90}" KELT_NET_SINK_PG_TIMEOUTS=""

for round in $(seq 1 "$ROUNDS"); do
  echo "== round $round of $ROUNDS ($RECORDS records, cut ${CUT_S}s, partition ${PARTITION_S}s)"
  "$KELT_VENV/bin/python" -m pytest -q -s -p no:cacheprovider --durations=0 \
    "$KELT_ROOT/tests/faults/test_network.py" "$KELT_ROOT/tests/faults/test_network_sinks.py" \
    2>&1 | grep -v '^progress '
done
