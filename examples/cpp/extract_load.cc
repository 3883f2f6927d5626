// Extract → Load with kelt's windowed consumer: read a topic until caught up (the high
// watermarks at start), load each window into a typed Arrow batch, commit after each
// window. The C++ half of RDP's kafka_elt_stream example; landing to Parquet/DuckDB and
// the SQL step arrive with the landing and transform stages.
//
// Usage: extract_load BOOTSTRAP TOPIC GROUP
// Payloads look like {"id":1,"name":"row 1"}.
#include <arrow/api.h>

#include <iostream>

#include "kelt/kafka.h"
#include "kelt/load.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: extract_load BOOTSTRAP TOPIC GROUP\n";
    return 2;
  }
  kelt::ConsumerOptions options;
  options.brokers = argv[1];
  options.topics = {argv[2]};
  options.group_id = argv[3];
  kelt::Schema landing({{"id", kelt::TypeId::kInt64},
                        {"name", kelt::TypeId::kUtf8},
                        {"_kafka_partition", kelt::TypeId::kInt64},
                        {"_kafka_offset", kelt::TypeId::kInt64}});

  auto consumer = kelt::Consumer::Make(options);
  auto loader = kelt::Loader::Make(landing);
  if (!consumer.ok() || !loader.ok()) {
    std::cerr << (consumer.ok() ? loader.status() : consumer.status()).ToString() << "\n";
    return 1;
  }
  kelt::WindowOptions window_options;
  window_options.max_records = 1000;
  int64_t total = 0;
  bool catching_up = false;
  while (!(*consumer)->caught_up()) {
    auto window = (*consumer)->Poll(window_options);  // Extract
    if (!window.ok()) {
      std::cerr << window.status().ToString() << "\n";
      return 1;
    }
    for (size_t i = 0; i < window->size(); ++i) {  // Load
      auto st = (*loader)->Append(window->record(i));
      if (!st.ok()) {
        std::cerr << st.message() << "\n";
        return 1;
      }
    }
    auto landed = (*loader)->Finish();
    if (!landed.ok()) return 1;
    // Land landed->batch durably here (Parquet, PostgreSQL, DuckDB) — then commit.
    if (!(*consumer)->Commit(*window).ok()) return 1;
    total += landed->batch->num_rows();
    std::cout << "window: " << landed->batch->num_rows() << " rows ("
              << kelt::WindowEndName(window->end_reason()) << ")\n";
    if (!catching_up && !(*consumer)->Assignment().empty()) {
      // Stop at the end as it is now, even if producers keep writing.
      if (!(*consumer)->StartCatchUp().ok()) return 1;
      catching_up = true;
    }
  }
  std::cout << "landed " << total << " rows\n";
  return (*consumer)->Close().ok() ? 0 : 1;
}
