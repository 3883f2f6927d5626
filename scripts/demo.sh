#!/usr/bin/env bash
# The main job end to end on local defaults: provision and build, start a local Kafka
# broker, then `kelt demo`: produce the Uber April 2014 pickups sample
# (tests/fixtures/uber, CSV rows → JSON objects) to a 3-partition topic, run the ELT loop
# until caught up into Parquet files and a DuckDB database (offsets stored with the data,
# committed after), answer a SQL question over the landed Parquet, and say where the
# files are. The broker is stopped at the end; the landing and the config file kelt
# wrote (build/demo/kelt.yaml) stay in build/demo/.
#
#   bash scripts/demo.sh [ROWS]        (default: all 3,000 rows of the sample)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"
ROWS="${1:-0}"
DEMO="$KELT_ROOT/build/demo"
KELT="$KELT_ROOT/build/release/cli/kelt"

bash scripts/bootstrap.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release --target kelt_cli >/dev/null

mkdir -p "$DEMO"
start=$SECONDS
trap 'bash scripts/kafka.sh stop --dir "$DEMO/kafka" >/dev/null 2>&1 || true' EXIT
bootstrap_line="$(bash scripts/kafka.sh start --dir "$DEMO/kafka" 2>/dev/null)"
BROKERS="${bootstrap_line#KELT_KAFKA_BOOTSTRAP=}"
KELT_CLI="$KELT" bash scripts/kafka.sh create-topic rides 3 --dir "$DEMO/kafka" >/dev/null
echo "== broker on $BROKERS, topic rides (3 partitions)"

"$KELT" demo --brokers "$BROKERS" --topic rides --csv tests/fixtures/uber/uber_apr14_sample.csv \
  --rows "$ROWS" --dir "$DEMO"
echo "== demo took $((SECONDS - start)) s after setup (broker start included)"
