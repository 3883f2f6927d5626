#!/usr/bin/env bash
# Fail unless libkelt.so exports exactly the C ABI: rdp_* and kelt_* symbols, and all
# of the RDP set (RDP_COMPATIBILITY.md §5).
set -euo pipefail
lib="$1"
syms="$(nm -D --defined-only "$lib" | awk '{print $NF}' | sort -u)"
bad="$(grep -Ev '^(rdp_|kelt_)' <<<"$syms" || true)"
if [ -n "$bad" ]; then
  echo "unexpected exported symbols in $lib:" >&2
  echo "$bad" >&2
  exit 1
fi
for s in rdp_ffi_abi_version rdp_json_slice_free rdp_kafka_elt_load_records_json \
         rdp_kafka_poll_window_json rdp_kafka_poll_window_loaded_json \
         rdp_kafka_export_dataset_json rdp_run_pipeline_json kelt_consumer_new \
         kelt_consumer_poll kelt_consumer_commit kelt_window_to_arrow_stream kelt_pipeline_new kelt_pipeline_run \
         kelt_mock_cluster_new kelt_mock_cluster_bootstraps \
         kelt_mock_cluster_create_topic kelt_mock_cluster_free kelt_version kelt_abi_version \
         kelt_c_api_version; do
  grep -qx "$s" <<<"$syms" || { echo "$lib does not export $s" >&2; exit 1; }
done
echo "$(wc -l <<<"$syms") symbols, all rdp_*/kelt_*"
