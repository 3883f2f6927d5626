// Bring your own records → Load: the C++ version of RDP's kafka_elt_byo_load example.
// Build: cmake --build --preset release --target byo_load; run:
// build/release/examples/byo_load
#include <arrow/api.h>

#include <iostream>

#include "kelt/dataset.h"
#include "kelt/load.h"

int main() {
  kelt::Schema landing({{"user_id", kelt::TypeId::kInt64},
                        {"event", kelt::TypeId::kUtf8},
                        {"_kafka_offset", kelt::TypeId::kInt64}});
  const char* json = R"({"records":[
    {"topic":"events","partition":0,"offset":1,
     "value":"{\"user_id\":1,\"event\":\"click\"}"}
  ]})";
  auto landed = kelt::LoadRecordsJson(json, landing);
  if (!landed.ok()) {
    std::cerr << landed.status().ToString() << "\n";
    return 1;
  }
  std::cout << landed->batch->ToString();
  // Next: land it (Parquet / PostgreSQL / DuckDB), then Transform separately.
  return 0;
}
