#!/usr/bin/env bash
# Build the libFuzzer targets (clang, ASan+UBSan) and run each for N seconds (default 60)
# from the seed corpus in fuzz/seeds/<target>/. Crashes are written to build/fuzz/artifacts/.
# Usage: scripts/fuzz.sh [seconds]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/paths.sh"
cd "$KELT_ROOT"
seconds="${1:-60}"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz
mkdir -p build/fuzz/artifacts
status=0
for target in load_fuzzer dataset_json_fuzzer pipeline_json_fuzzer config_fuzzer avro_fuzzer \
    protobuf_fuzzer json_schema_fuzzer capi_json_fuzzer; do
  corpus="build/fuzz/corpus/$target"
  mkdir -p "$corpus"
  echo "fuzzing $target for ${seconds}s"
  extra=()
  # Avro C leaks on many inputs (suppressed in the target, fuzz/README.md): a leak check
  # after each of them made it 30x slower, so its leaks are checked at exit only.
  if [ "$target" = avro_fuzzer ]; then extra=(-detect_leaks=0); fi
  if ! ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 "build/fuzz/fuzz/$target" "${extra[@]}" \
      -max_total_time="$seconds" -max_len=65536 -print_final_stats=1 \
      -artifact_prefix=build/fuzz/artifacts/ "$corpus" "fuzz/seeds/$target" \
      > "build/fuzz/$target.log" 2>&1; then
    echo "FAILED: $target (see build/fuzz/$target.log)" >&2
    tail -40 "build/fuzz/$target.log" >&2
    status=1
  else
    grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' "build/fuzz/$target.log" | tail -2
  fi
done
exit $status
