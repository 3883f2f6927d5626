#!/usr/bin/env bash
# A single-node Apache Kafka broker (KRaft) on 127.0.0.1 for tests, benchmarks and the demo.
#
#   bash scripts/kafka.sh start [--dir DIR] [--secure] [--keep] [--kafka-version V]
#   bash scripts/kafka.sh stop [--dir DIR]
#   bash scripts/kafka.sh status [--dir DIR]
#   bash scripts/kafka.sh create-topic NAME PARTITIONS [--dir DIR]
#   bash scripts/kafka.sh describe-topic NAME [--dir DIR]
#
# A thin wrapper: scripts/kelt_services/kafka.py does the work (`--help` for details).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
# shellcheck source-path=SCRIPTDIR source=lib/services.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/services.sh"
kelt_services kafka "$@"
