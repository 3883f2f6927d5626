#!/usr/bin/env bash
# Consume one JSON topic into arrow-java vectors: kelt's Java API against the Java Kafka
# client + Jackson + arrow-java, in one JVM (bench/java/ConsumeBench.java; bench/README.md).
#
#   bash bench/java/consume_benchmark.sh [--records 1000000] [--window 100000]
#       [--partitions 4] [--repetitions 3] [--warmup 100000] [--bootstrap HOST:PORT]
#       [--topic NAME]
#
# The broker comes from --bootstrap, KELT_KAFKA_BOOTSTRAP or the KELT_KAFKA_ENV file
# (`bash scripts/kafka.sh start --dir DIR` writes DIR/env). Needs the release build's
# libkelt.so (KELT_LIBRARY to use another), a Java 25 JDK ($KELT_JAVA25_HOME) and Maven:
# it compiles the wrapper (java/, `mvn compile`) unless its classes are up to date, resolves
# bench/java/pom.xml's dependencies (Maven Central, the first time; the class path is kept in
# build/java-bench/cp.txt until the pom changes) and compiles ConsumeBench.java into
# build/java-bench/classes.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=../../scripts/lib/paths.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/paths.sh"
cd "$KELT_ROOT"

die() {
  echo "consume_benchmark.sh: $*" >&2
  exit 1
}
lib="${KELT_LIBRARY:-$KELT_ROOT/build/release/capi/libkelt.so}"
[[ -f "$lib" ]] \
  || die "no $lib: build it (cmake --build --preset release --target kelt_c) or set KELT_LIBRARY"
[[ -x "${KELT_JAVA25_HOME:-}/bin/java" ]] || die "no Java 25 JDK (KELT_JAVA25_HOME)"
export JAVA_HOME="$KELT_JAVA25_HOME"
out="$KELT_ROOT/build/java-bench"
mkdir -p "$out"

# Maven on JDK 25: quiet about its own sun.misc.Unsafe use.
export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
mvn_q() { mvn -q -B -Dstyle.color=never "$@"; }
# The wrapper's classes, unless java/target/classes is newer than every source (as right
# after scripts/test.sh's `mvn package`).
classes="$KELT_ROOT/java/target/classes"
stamp="$classes/dev/kelt/KeltConsumer.class"
if [[ ! -f "$stamp" ]] \
  || [[ -n "$(find java/src/main java/pom.xml -newer "$stamp" -type f -print -quit)" ]]; then
  (cd java && mvn_q compile) || die "compiling the Java wrapper (java/) failed"
fi
cp_ok() {  # the kept class path is newer than the pom and its jars are all there
  [[ -f "$out/cp.txt" && ! bench/java/pom.xml -nt "$out/cp.txt" ]] || return 1
  local jar
  while IFS= read -r -d: jar || [[ -n "$jar" ]]; do [[ -f "$jar" ]] || return 1; done <"$out/cp.txt"
}
if ! cp_ok; then
  mvn_q -f bench/java/pom.xml dependency:build-classpath -Dmdep.outputFile="$out/cp.txt" \
    >/dev/null || die "resolving bench/java/pom.xml's dependencies failed"
fi
cp="$classes:$(cat "$out/cp.txt")"
src=bench/java/ConsumeBench.java
bench_class="$out/classes/ConsumeBench.class"
if [[ ! -f "$bench_class" || "$src" -nt "$bench_class" || "$stamp" -nt "$bench_class" ]]; then
  rm -rf "$out/classes"
  "$JAVA_HOME/bin/javac" -Xlint:all,-classfile -d "$out/classes" -cp "$cp" "$src"
fi

exec "$JAVA_HOME/bin/java" -Xmx1g --enable-native-access=ALL-UNNAMED \
  --add-opens=java.base/java.nio=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow \
  -Dkelt.library="$lib" -cp "$out/classes:$cp" ConsumeBench "$@"
