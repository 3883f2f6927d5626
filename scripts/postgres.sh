#!/usr/bin/env bash
# A private PostgreSQL cluster on 127.0.0.1 for tests, benchmarks and the demo.
#
#   bash scripts/postgres.sh start [--dir DIR] [--keep] [--host ADDR]
#   bash scripts/postgres.sh stop [--dir DIR]
#   bash scripts/postgres.sh status [--dir DIR]
#
# A thin wrapper: scripts/kelt_services/postgres.py does the work (`--help` for details).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
# shellcheck source-path=SCRIPTDIR source=lib/services.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/services.sh"
kelt_services postgres "$@"
