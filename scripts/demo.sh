#!/usr/bin/env bash
# The main job end to end on local defaults: provision and build, start a local Kafka
# broker, then `kelt demo`: produce the Uber April 2014 pickups sample
# (tests/fixtures/uber, CSV rows → JSON objects) to a 3-partition topic, run the ELT loop
# until caught up into Parquet files and a DuckDB database (offsets stored with the data,
# committed after), answer a SQL question over the landed Parquet, and say where the
# files are. The broker is stopped at the end; the landing and the config file kelt
# wrote (build/demo/kelt.yaml) stay in build/demo/.
#
#   bash scripts/demo.sh [ROWS]        (default: all 3,000 rows of the sample)
#
# Progress goes to stderr, one line per phase with the time it took: provisioning
# (scripts/bootstrap.sh --quiet), configuring and building the kelt command (a line every
# 10% of the build), starting the broker; the logs of these steps are in build/demo/logs/.
# `kelt demo` then reports producing, running and querying on stdout. The first run
# provisions a fresh machine (about 5 minutes on 2 cores) and builds kelt (up to about
# 10 minutes on 2 cores); later runs take seconds.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"
ROWS="${1:-0}"
DEMO="$KELT_ROOT/build/demo"
KELT="$KELT_ROOT/build/release/cli/kelt"
LOGS="$DEMO/logs"

say() { printf '[demo] %s\n' "$*" >&2; }
now() { date +%s.%N; }
# since T: the time elapsed since T (from now), as "4.2 s" or "3 min 07 s".
since() {
  awk -v a="$1" -v b="$(now)" 'BEGIN { d = b - a
    if (d < 60) printf "%.1f s", d; else printf "%d min %02d s", int(d / 60), int(d) % 60 }'
}
# fail_with LOG MESSAGE: say what failed, show the end of its log, exit 1.
fail_with() {
  say "$2; last lines of $1:"
  tail -n 40 "$1" >&2
  exit 1
}
# build_progress: read ninja's "[k/N] …" lines, print one every 10% of N.
build_progress() {
  awk '/^\[[0-9]+\/[0-9]+\] / {
         split(substr($1, 2), kn, "/"); k = kn[1] + 0; n = kn[2] + 0
         if (n > 0 && k * 100 >= next_pct * n) {
           printf "[demo] build: %3d%% (%d/%d)\n", int(k * 100 / n), k, n; fflush()
           while (k * 100 >= next_pct * n) next_pct += 10
         }
       }'
}

mkdir -p "$DEMO" "$LOGS"
if [[ ! -x "$KELT" ]]; then
  say "first run: provisioning what is missing (about 5 minutes on 2 cores on a fresh machine)," \
      "then a release build of the kelt command (up to about 10 minutes on 2 cores)"
fi

bash scripts/bootstrap.sh --quiet >&2

t="$(now)"
printf '[demo] configuring build/release (cmake --preset release) … ' >&2
cmake --preset release >"$LOGS/configure.log" 2>&1 \
  || { echo >&2; fail_with "$LOGS/configure.log" "cmake --preset release failed"; }
echo "done in $(since "$t")" >&2

# A dry run counts the build steps, so a cold build announces its size before it starts.
t="$(now)"
steps="$(cmake --build --preset release --target kelt_cli -- -n 2>/dev/null | grep -c '^\[' || true)"
if [[ "${steps:-0}" == 0 ]]; then
  cmake --build --preset release --target kelt_cli >"$LOGS/build.log" 2>&1 \
    || fail_with "$LOGS/build.log" "the build failed"
  say "kelt is up to date ($KELT, checked in $(since "$t"))"
else
  say "building the kelt command: $steps build steps (cmake --build --preset release" \
      "--target kelt_cli; output in $LOGS/build.log)"
  cmake --build --preset release --target kelt_cli 2>&1 | tee "$LOGS/build.log" | build_progress >&2 \
    || fail_with "$LOGS/build.log" "the build failed"
  say "built $KELT in $(since "$t")"
fi

start=$SECONDS
t="$(now)"
printf '[demo] starting a Kafka broker in %s … ' "$DEMO/kafka" >&2
trap 'say "stopping the broker"; bash scripts/kafka.sh stop --dir "$DEMO/kafka" >/dev/null 2>&1 || true' EXIT
bootstrap_line="$(bash scripts/kafka.sh start --dir "$DEMO/kafka" 2>"$LOGS/kafka.log")" \
  || { echo >&2; fail_with "$LOGS/kafka.log" "the broker did not start"; }
BROKERS="${bootstrap_line#KELT_KAFKA_BOOTSTRAP=}"
KELT_CLI="$KELT" bash scripts/kafka.sh create-topic rides 3 --dir "$DEMO/kafka" >/dev/null \
  2>>"$LOGS/kafka.log" || { echo >&2; fail_with "$LOGS/kafka.log" "creating the topic failed"; }
echo "done in $(since "$t")" >&2
echo "== broker on $BROKERS, topic rides (3 partitions)"

"$KELT" demo --brokers "$BROKERS" --topic rides --csv tests/fixtures/uber/uber_apr14_sample.csv \
  --rows "$ROWS" --dir "$DEMO"
echo "== demo took $((SECONDS - start)) s after setup (broker start included)"
