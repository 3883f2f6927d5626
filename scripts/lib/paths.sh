# shellcheck shell=bash
# Common locations and pinned versions for kelt's scripts.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"     # from a script in scripts/
#
# Every variable keeps a value that is already set in the environment, so a caller can
# point the scripts elsewhere (e.g. KELT_CACHE=/some/disk bash scripts/bootstrap.sh).
# Downloads live in $KELT_CACHE, outside the repository; only the Python venv is inside it.
# This file only sets variables: it changes no shell option and runs nothing that can fail.

if [[ -z "${KELT_ROOT:-}" ]]; then
  KELT_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)"
fi
export KELT_ROOT

export KELT_CACHE="${KELT_CACHE:-${HOME:-/root}/.cache/kelt}"
export KELT_VENV="${KELT_VENV:-$KELT_ROOT/.venv}"

# DuckDB C API, static libraries, taken from the Go module proxy
# (github.com/duckdb/duckdb-go-bindings/lib/linux-amd64, module v0.1MMPP.0 = DuckDB M.MM.PP).
export KELT_DUCKDB_VERSION="${KELT_DUCKDB_VERSION:-1.5.6}"
export KELT_DUCKDB_GO_MODULE_VERSION="${KELT_DUCKDB_GO_MODULE_VERSION:-v0.10506.0}"
export KELT_DUCKDB_ROOT="${KELT_DUCKDB_ROOT:-$KELT_CACHE/duckdb/$KELT_DUCKDB_VERSION}"   # include/duckdb.h, lib/*.a

# librdkafka, the Kafka client: a static library built by Confluent (OpenSSL, SASL/SCRAM,
# OAUTHBEARER/OIDC, zstd, lz4 and curl inside), taken from the Go module proxy
# (github.com/confluentinc/confluent-kafka-go/v2, folder kafka/librdkafka_vendor/).
# $KELT_RDKAFKA_ROOT holds include/librdkafka/rdkafka.h (+ rdkafka_mock.h) and lib/librdkafka.a.
export KELT_RDKAFKA_VERSION="${KELT_RDKAFKA_VERSION:-2.11.1}"
export KELT_RDKAFKA_GO_MODULE_VERSION="${KELT_RDKAFKA_GO_MODULE_VERSION:-v$KELT_RDKAFKA_VERSION}"
export KELT_RDKAFKA_ROOT="${KELT_RDKAFKA_ROOT:-$KELT_CACHE/librdkafka/$KELT_RDKAFKA_VERSION}"

# Apache Kafka broker jars from Maven Central (scripts/kafka/pom.xml). scripts/kafka.sh runs
# this version for every test broker, the SCRAM/TLS one (`start --secure`) included; another
# version's jars go to $KELT_CACHE/kafka/<version>/libs (KELT_KAFKA_VERSION=V bootstrap.sh).
export KELT_KAFKA_VERSION="${KELT_KAFKA_VERSION:-4.1.1}"
export KELT_KAFKA_LIBS="${KELT_KAFKA_LIBS:-$KELT_CACHE/kafka/$KELT_KAFKA_VERSION/libs}"

# Apicurio Registry, the Schema Registry of the tests (scripts/registry.sh): its prebuilt
# Quarkus app from Maven Central, unpacked here by bootstrap.sh. It needs Java 21 or newer
# (KELT_JAVA21_HOME, else found as `registry.sh java` says).
export KELT_REGISTRY_VERSION="${KELT_REGISTRY_VERSION:-3.3.3}"
export KELT_REGISTRY_HOME="${KELT_REGISTRY_HOME:-$KELT_CACHE/apicurio-registry/$KELT_REGISTRY_VERSION}"

# A Java 25 JDK (for the Java wrapper); empty when the machine has none.
if [[ -z "${KELT_JAVA25_HOME:-}" ]]; then
  if [[ -d /usr/lib/jvm/temurin-25-jdk-amd64 ]]; then
    KELT_JAVA25_HOME=/usr/lib/jvm/temurin-25-jdk-amd64
  else
    for _kelt_jdk in /usr/lib/jvm/*25*; do
      if [[ -d "$_kelt_jdk" ]]; then KELT_JAVA25_HOME="$_kelt_jdk"; break; fi
    done
    unset _kelt_jdk
  fi
fi
export KELT_JAVA25_HOME="${KELT_JAVA25_HOME:-}"

export KELT_PYARROW_VERSION="${KELT_PYARROW_VERSION:-26.0.1}"

# Compiler cache for every build the scripts run: outside the repo, and keyed on paths
# relative to the checkout so a fresh clone elsewhere (CI) still hits it.
export CCACHE_DIR="${CCACHE_DIR:-$KELT_CACHE/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$KELT_ROOT}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
