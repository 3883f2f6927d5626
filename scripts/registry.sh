#!/usr/bin/env bash
# A Schema Registry (Apicurio Registry, Confluent-compatible API) on 127.0.0.1 for tests.
#
#   bash scripts/registry.sh start [--dir DIR]
#   bash scripts/registry.sh stop [--dir DIR]
#   bash scripts/registry.sh status [--dir DIR]
#   bash scripts/registry.sh java
#
# A thin wrapper: scripts/kelt_services/registry.py does the work (`--help` for details).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
# shellcheck source-path=SCRIPTDIR source=lib/services.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/services.sh"
kelt_services registry "$@"
