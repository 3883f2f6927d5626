#!/usr/bin/env bash
# Run every test on this machine, provisioning first (fresh Debian 12 is fine):
#   1. scripts/bootstrap.sh        packages, venv, DuckDB, Kafka jars (cached, idempotent);
#      scripts/lint.sh             clang-format check
#   2. dev build (Debug, ASan+UBSan) and every GoogleTest suite through ctest
#   3. release build of the CLI, examples and benchmarks; smoke-run them on small inputs;
#      the install test (tests/install/install_test.sh: the installed CLI and C/C++ SDK,
#      the .tar.gz and .deb); the Java suite, then the jar (libkelt.so inside) alone in a
#      JVM with the checkout hidden (tests/install/jar_test.sh); the Python wheel (auditwheel)
#      and the Python suite against it in a fresh venv (tests/install/wheel_test.sh); the
#      Python benchmark; a 2-minute soak of the release `kelt run`
#   4. the ThreadSanitizer build (tsan preset) and a subset of the concurrent tests
#      (`ctest --preset tsan` runs them all)
#   5. a short libFuzzer run of each fuzz target (clang, ASan+UBSan) from its committed
#      corpus (fuzz/corpus/); the hour-long run is scripts/fuzz.sh with no arguments
# Each step prints how long it took. On 2 cores a first run is long: provisioning a fresh
# machine takes about 5 minutes, the dev build about 9 and the release build about 10
# (the tsan build: 14 min of CPU, 47 min of wall time on a machine shared with four other
# builds); ccache makes later builds much faster (tsan: 53 s from an empty build folder
# with a warm cache, then about 75 s of tests).
# Usage: scripts/test.sh [--no-fuzz]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"

fuzz=1
for arg in "$@"; do
  case "$arg" in
    --no-fuzz) fuzz=0 ;;
    *) echo "usage: $0 [--no-fuzz]" >&2; exit 2 ;;
  esac
done

# step NAME: end the current step (printing how long it took) and start NAME.
STEP_NAME=""
STEP_START=$SECONDS
duration() { if (($1 < 60)); then echo "$1 s"; else printf '%d min %02d s\n' $(($1 / 60)) $(($1 % 60)); fi; }
end_step() {
  [[ -z "$STEP_NAME" ]] || printf '==> %s: done in %s\n' "$STEP_NAME" "$(duration $((SECONDS - STEP_START)))"
  STEP_NAME=""
}
step() {
  end_step
  STEP_NAME="$*"
  STEP_START=$SECONDS
  printf '\n==> %s\n' "$*"
}

plan="provisioning, lint, dev build + unit tests, release build + smoke runs, install test, Java suite + jar test, Python wheel + its suite, a 2-minute soak, ThreadSanitizer"
if [ "$fuzz" = 1 ]; then plan+=", fuzzing"; fi
echo "scripts/test.sh: $plan."
echo "On 2 cores a first run is long: provisioning a fresh machine takes about 5 minutes," \
  "the dev build about 9 and the release build about 10 (ccache makes later builds faster)."

step "bootstrap"
bash scripts/bootstrap.sh

step "lint (clang-format)"
bash scripts/lint.sh

# Arrow's wheel libraries are not built with sanitizers; their allocations are fine.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

step "dev build (Debug, ASan+UBSan)"
cmake --preset dev >/dev/null
cmake --build --preset dev

step "unit tests (ctest)"
ctest --preset dev

step "release build: CLI, examples, benchmarks"
cmake --preset release >/dev/null
cmake --build --preset release

step "smoke: the main job, the example and the Load and Avro benchmarks on small inputs"
build/release/cli/kelt load --records tests/fixtures/kafka/stream_records.json \
  --schema tests/fixtures/kafka/landing_schema.json --output json \
  | grep -q '"rows":\[\[{"Int64":100},{"Utf8":"alpha"}' || { echo "kelt load smoke failed" >&2; exit 1; }
build/release/examples/byo_load | grep -q click || { echo "byo_load example failed" >&2; exit 1; }
build/release/bench/load_benchmark --records=20000 --benchmark_min_time=0.05 >/dev/null
build/release/bench/avro_benchmark --records=20000 --benchmark_min_time=0.05 >/dev/null
# The README's main command, on a small sample: every row landed, the SQL answers.
demo_out="$(bash scripts/demo.sh 900)"
echo "$demo_out" | grep -q '"rows":900,"bad_records":0,"caught_up":true' \
  || { echo "$demo_out" >&2; echo "demo: not every row landed" >&2; exit 1; }
echo "$demo_out" | grep -q '^5 rows$' || { echo "$demo_out" >&2; echo "demo: SQL answer missing" >&2; exit 1; }

# What a user installs: cmake --install into a temporary prefix, the C and C++ examples
# built against it (find_package and pkg-config), the installed kelt --version and kelt
# demo with the checkout hidden, the .tar.gz and .deb (dpkg -i, then dpkg -r).
step "install test: cmake --install, the C/C++ SDK, CPack .tar.gz and .deb"
bash tests/install/install_test.sh build/release

# The language wrappers over the release build, against one local broker for all of them
# (stopped on exit, whatever happens). Each suite fails, never skips, without the broker.
step "wrapper suites: Java (libkelt.so via Panama FFM) against a local broker and registry"
wrappers_kafka="$KELT_ROOT/build/release/kafka-wrappers"
bash scripts/kafka.sh start --dir "$wrappers_kafka" >/dev/null
trap 'bash scripts/kafka.sh stop --dir "$wrappers_kafka" >/dev/null 2>&1 || true' EXIT
export KELT_KAFKA_ENV="$wrappers_kafka/env"
# A Schema Registry for the Java and Python registry tests (stopped with the broker).
wrappers_registry="$KELT_ROOT/build/release/registry-wrappers"
bash scripts/registry.sh start --dir "$wrappers_registry" >/dev/null
trap 'bash scripts/kafka.sh stop --dir "$wrappers_kafka" >/dev/null 2>&1 || true
      bash scripts/registry.sh stop --dir "$wrappers_registry" >/dev/null 2>&1 || true' EXIT
export KELT_REGISTRY_ENV="$wrappers_registry/env"
[ -x "${KELT_JAVA25_HOME:-}/bin/java" ] || { echo "no Java 25 JDK (KELT_JAVA25_HOME)" >&2; exit 1; }
# The suite runs on the build tree's library (-Dkelt.library); `package` then makes the
# jar with libkelt.so and the libraries it needs inside (java/stage_native.sh), and
# copy-dependencies puts its runtime dependencies in java/target/dependency/, for the jar
# test below.
bash java/stage_native.sh build/release build/release/java-native
(cd java && JAVA_HOME="$KELT_JAVA25_HOME" mvn -q -B clean package \
  dependency:copy-dependencies -DincludeScope=runtime \
  -Dkelt.library="$KELT_ROOT/build/release/capi/libkelt.so" \
  -Dkelt.native.dir="$KELT_ROOT/build/release/java-native")
cat java/target/surefire-reports/TEST-*.xml | grep -o '<testsuite [^>]*' \
  | sed -E 's/.* name="([^"]+)".* tests="([0-9]+)".*/  java \1: \2 tests passed/'

# The jar on its own: only it and org.json on the classpath, no RDP_JVM_SYS, the checkout
# hidden; the tri-language scenario's Java leg loads libkelt.so from the jar.
step "jar test: the Java leg of the tri-language scenario from the jar alone; the Java consume benchmark on 20k records"
bash tests/install/jar_test.sh "java/target/kelt-$(head -n1 VERSION).jar" java/target/dependency
# The Java consume benchmark (kelt vs KafkaConsumer + Jackson + arrow-java) on 20,000
# records: both read the topic, their column sums equal the produced ones, the ratio prints.
java_bench_out="$(bash bench/java/consume_benchmark.sh --records 20000 --window 5000 \
  --repetitions 1 --warmup 0)"
echo "$java_bench_out" | grep -q '^kelt / baseline: ' \
  || { echo "$java_bench_out" >&2; echo "java consume benchmark: no ratio" >&2; exit 1; }

# The wheel: pip wheel + auditwheel repair (python/build_wheel.sh), then the whole Python
# suite against it in a fresh venv with the checkout hidden (tests/install/wheel_test.sh).
step "wrapper suites: Python (the wheel, its suite in a fresh venv, the consume benchmark on 100k records)"
# Reuses build/python/<tag> and ccache: fast after the first build.
wheel="$(bash python/build_wheel.sh build/release/wheel)"
bash tests/install/wheel_test.sh "$wheel"
# The same wheel in $KELT_VENV, for the registry tests that need this tree's Python package
# (ctest leaves them out) and the benchmark.
"$KELT_VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
KELT_BIN="$KELT_ROOT/build/release/cli/kelt" \
  "$KELT_VENV/bin/python" -m pytest -q -p no:cacheprovider -m python_package \
  tests/registry/test_kelt_produce.py
bash scripts/registry.sh stop --dir "$wrappers_registry" >/dev/null
"$KELT_VENV/bin/python" bench/python/consume_benchmark.py --records 100000 --repetitions 1
# kafka_benchmark's ELT-vs-drain pair, its Iceberg-vs-Parquet pair (issue 15) and its
# scale mode (issue 18) on small inputs: the children run, every record lands and is
# committed, each Iceberg window reports its commit, the ratios print.
wrappers_bootstrap="$(sed -n 's/^KELT_KAFKA_BOOTSTRAP=//p' "$KELT_KAFKA_ENV")"
bench_out="$(build/release/bench/kafka_benchmark --bootstrap "$wrappers_bootstrap" \
  --dir "$wrappers_kafka" --produce-once --consumers drain,elt,elt-iceberg --records 20000 \
  --window 5000 --repetitions 1)"
{ grep -q '^ratio ELT -> Parquet / bare drain' <<<"$bench_out" \
  && grep -q '^ratio ELT -> Iceberg / ELT -> Parquet' <<<"$bench_out" \
  && grep -q '^Iceberg commit per window' <<<"$bench_out"; } \
  || { echo "$bench_out" >&2; echo "kafka_benchmark smoke failed" >&2; exit 1; }
bench_out="$(build/release/bench/kafka_benchmark --bootstrap "$wrappers_bootstrap" \
  --dir "$wrappers_kafka" --scale --scale-partitions 2,16 --scale-topics 3 \
  --scale-topic-partitions 1 --records 20000 --window 5000 --repetitions 1)"
grep -q '^ratio ELT throughput 16 / 2 partitions' <<<"$bench_out" \
  || { echo "$bench_out" >&2; echo "kafka_benchmark --scale smoke failed" >&2; exit 1; }

# The short soak (the long one is scripts/soak_test.sh): the release `kelt run` as a
# service for 2 minutes at 2,000 records/s; RSS, open files and threads flat after the
# warm-up, every offset landed once.
step "soak, short: kelt run for 2 minutes at a steady rate (RSS, fds, threads flat)"
"$KELT_VENV/bin/python" tests/faults/soak.py --kelt build/release/cli/kelt \
  --brokers "$(sed -n 's/^KELT_KAFKA_BOOTSTRAP=//p' "$KELT_KAFKA_ENV")" --minutes 2
bash scripts/kafka.sh stop --dir "$wrappers_kafka" >/dev/null
trap - EXIT

# The concurrent paths under ThreadSanitizer (issue 17): the ELT loop's writer thread
# and a second loop's revocation, the Parquet sink's parallel writes, and the Python
# module called from several threads with libtsan preloaded. Suppressions (uninstrumented
# librdkafka, DuckDB, Arrow, CPython only) are in tests/tsan.supp; the test preset sets
# TSAN_OPTIONS. The full set (every consumer, loop, sink and C ABI test, the Python
# mock-cluster suite): `ctest --preset tsan` after this build.
step "ThreadSanitizer: tsan build, the loop, Parquet sink and Python thread tests"
cmake --preset tsan >/dev/null
cmake --build --preset tsan
# The subset: the ELT loop (writer thread; a second loop joining mid-write), the Parquet
# sink's parallel rotations, two members rebalancing, the Python module's threads.
ctest --preset tsan -R '^(EltLoopTest\.|PollLoadTest\.|ParquetSink\.EveryRotation|Protocols/ConsumerGroupProtocolTest\.TwoMembers|python_tsan_threads$)'

if [ "$fuzz" = 1 ]; then
  step "fuzz smoke (libFuzzer, ${KELT_FUZZ_SECONDS:-20}s per target)"
  # --no-merge: the smoke run starts from the committed corpus but changes no committed file.
  bash scripts/fuzz.sh --no-merge "${KELT_FUZZ_SECONDS:-20}"
fi

end_step
echo
echo "scripts/test.sh: all steps passed in $(duration "$SECONDS")"
