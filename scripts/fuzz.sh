#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan+UBSan) and run each in turn for N seconds
# (default 3600: the long run, outside CI; the test command's smoke passes 20).
#
# Inputs of a target: its committed corpus fuzz/corpus/<target>/ (grown by earlier runs,
# kept minimal), its hand-written seeds fuzz/seeds/<target>/ (named, read-only here; a
# crash's minimized input goes there as a regression seed) and build/fuzz/scratch/<target>/,
# where libFuzzer writes what it finds. At the end of a target's run the scratch folder is
# merged (libFuzzer -merge=1) with the committed corpus into a fresh folder seeded with the
# seeds, the seeds are taken out again, and the result replaces fuzz/corpus/<target>/:
# only inputs that add coverage beyond the seeds stay, so the corpus stays minimal.
# Crashes are written to build/fuzz/artifacts/, each target's output to build/fuzz/<target>.log.
#
# One record line per target is appended to the run log (fuzz/runs.log; with --no-merge
# build/fuzz/runs.log, so a smoke run changes no committed file):
#   <UTC time> commit=<sha>[+changes] target=<t> seconds=<wall> cpu_seconds=<user+sys>
#   execs=<N> new_files=<added to the corpus> corpus_files=<after> result=clean|<failure>
# seconds is the wall time observed (a fuzzer paused with SIGSTOP counts), cpu_seconds the
# time it actually ran; +changes: the sources differed from the commit.
#
# Usage: scripts/fuzz.sh [--seconds N | N] [--targets a,b,...] [--no-merge] [--log FILE]
#                        [--no-build]
#   --targets   a comma-separated subset (default: all eight, listed below)
#   --no-merge  leave fuzz/corpus untouched (the test command's smoke run)
#   --log FILE  where the record lines go
#   --no-build  use the fuzz preset's binaries as they are
# Exit status 1 if any target failed (its log's tail is printed), 2 on a usage error.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"

all_targets=(load_fuzzer dataset_json_fuzzer pipeline_json_fuzzer config_fuzzer avro_fuzzer
  protobuf_fuzzer json_schema_fuzzer capi_json_fuzzer)
usage() {
  echo "usage: $0 [--seconds N | N] [--targets a,b,...] [--no-merge] [--log FILE] [--no-build]" >&2
  echo "targets: ${all_targets[*]}" >&2
  exit 2
}

seconds=3600
targets=("${all_targets[@]}")
merge=1
build=1
log=""
while (($#)); do
  case "$1" in
    --seconds) (($# >= 2)) || usage; seconds="$2"; shift 2 ;;
    --targets) (($# >= 2)) || usage; IFS=, read -r -a targets <<<"$2"; shift 2 ;;
    --no-merge) merge=0; shift ;;
    --no-build) build=0; shift ;;
    --log) (($# >= 2)) || usage; log="$2"; shift 2 ;;
    -h | --help) usage ;;
    [0-9]*) seconds="$1"; shift ;;
    *) echo "fuzz.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: seconds must be a positive integer, not '$seconds'" >&2; usage; }
((${#targets[@]})) || usage
for target in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $target "* ]] || { echo "fuzz.sh: unknown target '$target'" >&2; usage; }
done
if [[ -z "$log" ]]; then
  if ((merge)); then log=fuzz/runs.log; else log=build/fuzz/runs.log; fi
fi

if ((build)); then
  cmake --preset fuzz -DKELT_PYTHON="$KELT_VENV/bin/python" >/dev/null
  cmake --build --preset fuzz
fi
mkdir -p build/fuzz/artifacts "$(dirname "$log")"

# The commit the binaries were built from; "+changes" when the files they are built from
# (the sources, the targets, the build files) differ from it.
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [[ "$commit" != unknown ]] && ! git diff --quiet HEAD -- src capi include fuzz/'*.cc' \
    fuzz/CMakeLists.txt cmake CMakeLists.txt CMakePresets.json; then
  commit+="+changes"
fi

count_files() { find "$1" -maxdepth 1 -type f 2>/dev/null | wc -l; }

status=0
for target in "${targets[@]}"; do
  binary="build/fuzz/fuzz/$target"
  corpus="fuzz/corpus/$target"
  seeds="fuzz/seeds/$target"
  scratch="build/fuzz/scratch/$target"
  mkdir -p "$corpus" "$scratch"
  flags=(-max_len=65536 -timeout=60)
  # Avro C leaks on many inputs (suppressed in the target, fuzz/README.md): a leak check
  # after each of them made it 30x slower, so its leaks are checked at exit only.
  if [ "$target" = avro_fuzzer ]; then flags+=(-detect_leaks=0); fi
  echo "fuzzing $target for ${seconds}s (corpus: $(count_files "$corpus") files, seeds: $(count_files "$seeds"))"
  scratch_before=$(count_files "$scratch")
  start=$(date +%s)
  TIMEFORMAT='%U %S'
  ok=1
  # libFuzzer writes new inputs to the first folder (the scratch one) only.
  { time ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$binary" "${flags[@]}" \
      -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix=build/fuzz/artifacts/ \
      "$scratch" "$corpus" "$seeds" >"build/fuzz/$target.log" 2>&1 || ok=0; } 2>"build/fuzz/$target.time"
  wall=$(($(date +%s) - start))
  cpu=$(awk '{printf "%d", $1 + $2 + 0.5}' "build/fuzz/$target.time")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "build/fuzz/$target.log" | tail -1)
  if [[ -z "$execs" ]]; then  # a crash prints no final stats: take the last status line
    execs=$(sed -n 's/^#\([0-9][0-9]*\)[[:space:]].*/\1/p' "build/fuzz/$target.log" | tail -1)
  fi
  result=clean
  if ((!ok)); then
    kind=$(grep -oE 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer): [a-z-]+' "build/fuzz/$target.log" | head -1 | awk '{print $NF}')
    [[ "$kind" != detected ]] || kind=leak  # "LeakSanitizer: detected memory leaks"
    [[ "$kind" != deadly ]] || kind=deadly-signal  # an abort: an invariant failed, or a signal
    [[ -n "$kind" ]] || kind=$(grep -qE 'runtime error:' "build/fuzz/$target.log" && echo ubsan || echo failed)
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "build/fuzz/$target.log" | tail -1)
    result="$kind${artifact:+:$artifact}"
    echo "FAILED: $target ($result; see build/fuzz/$target.log)" >&2
    tail -40 "build/fuzz/$target.log" >&2
    status=1
  fi

  new_files=0
  if ((merge)); then
    # A fresh folder seeded with the seeds; merging keeps an input of the old corpus or of
    # the scratch folder only if it adds coverage to what is there already.
    merged="build/fuzz/merge/$target"
    rm -rf "$merged"
    mkdir -p "$merged"
    if [ -d "$seeds" ]; then cp "$seeds"/* "$merged"/ 2>/dev/null || true; fi
    if ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "$binary" "${flags[@]}" -merge=1 \
        "$merged" "$corpus" "$scratch" >"build/fuzz/$target.merge.log" 2>&1; then
      if [ -d "$seeds" ]; then
        for seed in "$seeds"/*; do rm -f "$merged/$(basename "$seed")"; done
      fi
      for file in "$merged"/*; do
        [ -e "$file" ] || continue
        [ -e "$corpus/$(basename "$file")" ] || new_files=$((new_files + 1))
      done
      rm -rf "$corpus"
      mkdir -p "$corpus"
      cp "$merged"/* "$corpus"/ 2>/dev/null || true
      rm -rf "$scratch" "$merged"
    else
      echo "FAILED: merging $target's corpus (see build/fuzz/$target.merge.log); fuzz/corpus untouched," \
        "the new inputs kept in $scratch for the next run" >&2
      new_files=merge-failed
      tail -20 "build/fuzz/$target.merge.log" >&2
      status=1
    fi
  else
    new_files=$(($(count_files "$scratch") - scratch_before))
  fi
  line="$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$commit target=$target seconds=$wall cpu_seconds=$cpu"
  line+=" execs=${execs:-0} new_files=$new_files corpus_files=$(count_files "$corpus") result=$result"
  echo "$line" | tee -a "$log"
done
exit $status
