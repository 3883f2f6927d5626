#!/usr/bin/env bash
# The main job on local defaults. For now: provision, build the kelt command, and run the
# Load step over the shipped RDP fixture, printing the landed window as a table and as
# DataSet JSON. Later issues grow this into broker → Parquet/DuckDB → SQL.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"
bash scripts/bootstrap.sh >/dev/null
cmake --preset release >/dev/null
cmake --build --preset release --target kelt_cli >/dev/null
exec build/release/cli/kelt load \
  --records tests/fixtures/kafka/stream_records.json \
  --schema tests/fixtures/kafka/landing_schema.json "$@"
