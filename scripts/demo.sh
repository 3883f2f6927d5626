#!/usr/bin/env bash
# The main job end to end on local defaults: provision and build, start a local Kafka
# broker, produce a sample of Uber-style pickups (generated, deterministic), run the ELT
# loop until caught up into Parquet files and a DuckDB database (offsets stored with the
# data, committed after), answer a SQL question over the landed Parquet, and say where
# the files are. The broker is stopped at the end; the landing stays in build/demo/.
#
#   bash scripts/demo.sh [ROWS]        (default 5000)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"
ROWS="${1:-5000}"
DEMO="$KELT_ROOT/build/demo"
KELT="$KELT_ROOT/build/release/cli/kelt"

bash scripts/bootstrap.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release --target kelt_cli >/dev/null

rm -rf "$DEMO/landing" "$DEMO/landing.duckdb" "$DEMO/landing.duckdb.wal"
mkdir -p "$DEMO"
trap 'bash scripts/kafka.sh stop --dir "$DEMO/kafka" >/dev/null 2>&1 || true' EXIT
bootstrap_line="$(bash scripts/kafka.sh start --dir "$DEMO/kafka" 2>/dev/null)"
BROKERS="${bootstrap_line#KELT_KAFKA_BOOTSTRAP=}"
bash scripts/kafka.sh create-topic rides 3 --dir "$DEMO/kafka" >/dev/null
echo "== broker on $BROKERS, topic rides (3 partitions)"

# Pickups like the public Uber April 2014 sample: time, position, dispatch base.
"$KELT_VENV/bin/python" - "$ROWS" >"$DEMO/rides.ndjson" <<'PY'
import json, random, sys
rng = random.Random(2014)
bases = ["B02512", "B02598", "B02617", "B02682", "B02764"]
for i in range(int(sys.argv[1])):
    minute = i * 43200 // int(sys.argv[1])
    print(json.dumps({
        "pickup_at": f"2014-04-{1 + minute // 1440:02d}T{minute % 1440 // 60:02d}:{minute % 60:02d}:00Z",
        "lat": round(40.7 + rng.gauss(0, 0.04), 4),
        "lon": round(-73.97 + rng.gauss(0, 0.05), 4),
        "base": rng.choices(bases, weights=[3, 6, 5, 7, 2])[0],
    }))
PY
"$KELT" produce --brokers "$BROKERS" --topic rides --file "$DEMO/rides.ndjson"

echo "== kelt run --until-caught-up → Parquet + DuckDB"
"$KELT" run --brokers "$BROKERS" --topic rides --group demo \
  --schema tests/fixtures/demo/rides_schema.json \
  --parquet "$DEMO/landing" --duckdb "$DEMO/landing.duckdb" --duckdb-table rides \
  --until-caught-up

echo "== kelt sql over the landed Parquet"
"$KELT" sql --parquet "$DEMO/landing" --topic rides \
  "SELECT base, count(*) AS pickups, round(avg(lat), 4) AS avg_lat,
          min(pickup_at) AS first, max(_kafka_offset) AS last_offset
   FROM landing GROUP BY base ORDER BY pickups DESC"

echo "== landed"
find "$DEMO/landing" -name '*.parquet' | sort | sed "s|^$KELT_ROOT/||"
echo "build/demo/landing.duckdb (table rides, offsets in _kelt_offsets)"
