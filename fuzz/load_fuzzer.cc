// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Fuzz the Load step with arbitrary payload bytes against a mixed landing schema,
// under every bad-record policy and both payload modes, and the records-JSON parser.
// Invariants checked: no crash/UB (sanitizers), a valid batch, rows + bad = records,
// and the On-Demand fast path lands exactly what the DOM path lands.
#include <arrow/api.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kelt/load.h"
#include "kelt/load/loader_testing.h"

namespace {

// kind 0: mixed types, "a" both a column and the parent of "a.b" (DOM path only);
// kind 1: a single raw payload column; kind 2: mixed types the On-Demand path can take.
// "s\\" and "key_9_to_16" exercise the On-Demand path's matching of keys in the input
// text (a name with a backslash, a name compared in two 8-byte words).
kelt::Schema MakeSchema(int kind) {
  if (kind == 1) return kelt::Schema({{"raw", kelt::TypeId::kInt64}});
  kelt::Schema s({{"a", kelt::TypeId::kInt64},
                  {"b", kelt::TypeId::kFloat64},
                  {"c", kelt::TypeId::kBool},
                  {"d", kelt::TypeId::kUtf8},
                  {"e", kelt::TypeId::kTimestamp},
                  {"f", kelt::TypeId::kDate},
                  {"g", kelt::TypeId::kBinary},
                  {"s\\", kelt::TypeId::kInt64},
                  {"key_9_to_16", kelt::TypeId::kUtf8},
                  {"_kafka_offset", kelt::TypeId::kInt64},
                  {"_kafka_headers", kelt::TypeId::kUtf8},
                  {"_kafka_key", kelt::TypeId::kUtf8}});
  s.fields.emplace_back("nested", kelt::TypeId::kUtf8);
  s.fields.back().source =
      kind == 0 ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"o", "n"};
  return s;
}

// A broken invariant: say which, then abort (libFuzzer keeps the input).
void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "load_fuzzer: not true: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t mode = data[0];
  std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  // Two records: the bytes around the first 0x1E (never valid JSON outside a string), or
  // the same bytes twice. Different records check keys predicted from the first one.
  std::string_view payloads[2] = {payload, payload};
  if (size_t sep = payload.find('\x1e'); sep != std::string_view::npos) {
    payloads[0] = payload.substr(0, sep);
    payloads[1] = payload.substr(sep + 1);
  }

  kelt::LoadOptions options;
  options.on_bad_record = static_cast<kelt::BadRecordPolicy>(mode % 3);
  options.strict_payload = (mode & 4) != 0;
  auto loader = kelt::Loader::Make(MakeSchema((mode >> 3) % 3), options);
  Check(loader.ok(), "the loader is made");
  // The same records through the DOM path only: both paths must agree exactly.
  auto dom = kelt::Loader::Make(MakeSchema((mode >> 3) % 3), options);
  Check(dom.ok(), "the DOM-path loader is made");
  kelt::LoaderTesting::ForceDomPath(dom->get(), true);

  kelt::HeaderView headers[2] = {{"h", payload.substr(0, 4)}, {"h", std::nullopt}};
  kelt::RecordView view;
  view.topic = "fuzz";
  view.offset = 1;
  view.value = payload;
  view.key = payload.substr(0, payload.size() / 2);
  view.headers = headers;
  int64_t appended = 0;
  for (int i = 0; i < 2; ++i) {
    view.value = payloads[i];
    auto st = (*loader)->Append(view);
    auto st_dom = (*dom)->Append(view);
    Check(st.ToString() == st_dom.ToString(), "both paths return the same status");
    if (st.ok()) ++appended;
  }
  auto w = (*loader)->Finish();
  Check(w.ok(), "Finish succeeds");
  auto w_dom = (*dom)->Finish();
  Check(w_dom.ok(), "Finish succeeds (DOM path)");
  Check(w->batch->Equals(*w_dom->batch), "both paths land the same rows");
  Check(w->dead_letters->Equals(*w_dom->dead_letters),
        "both paths write the same dead letters");
  Check(w->batch->ValidateFull().ok(), "the batch is valid");
  Check(w->dead_letters->ValidateFull().ok(), "the dead letters are valid");
  Check(w->stats.rows + w->stats.bad_records == w->stats.records,
        "rows + bad records == records");
  Check(w->stats.records == appended, "records == appended");

  // The same bytes as a records-JSON document.
  auto parsed = kelt::LoadRecordsJson(payload, MakeSchema(false), options);
  if (parsed.ok())
    Check(parsed->batch->ValidateFull().ok(), "the records-JSON batch is valid");
  return 0;
}
