#!/usr/bin/env bash
# A local S3-compatible object store (moto's server mode) on 127.0.0.1 for tests and the demo.
#
#   bash scripts/s3.sh start [--dir DIR] [--bucket NAME] [--host ADDR]
#   bash scripts/s3.sh stop [--dir DIR]
#   bash scripts/s3.sh status [--dir DIR]
#
# A thin wrapper: scripts/kelt_services/s3.py does the work (`--help` for details).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
# shellcheck source-path=SCRIPTDIR source=lib/services.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/services.sh"
kelt_services s3 "$@"
