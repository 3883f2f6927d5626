// The stream loop of RDP's kafka_elt_stream example, with durable landing: Extract →
// Load → Parquet, until caught up, committing only what the Parquet files hold. Run it
// twice: the second run finds its resume point in the file names and lands nothing new.
//
// Usage: elt_parquet BOOTSTRAP TOPIC GROUP DIRECTORY
// Payloads look like {"id":1,"name":"row 1"}.
#include <iostream>

#include "kelt/elt.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: elt_parquet BOOTSTRAP TOPIC GROUP DIRECTORY\n";
    return 2;
  }
  kelt::EltOptions options;
  options.consumer.brokers = argv[1];
  options.consumer.topics = {argv[2]};
  options.consumer.group_id = argv[3];
  options.landing = kelt::Schema({{"id", kelt::TypeId::kInt64},
                                  {"name", kelt::TypeId::kUtf8},
                                  {"_kafka_timestamp", kelt::TypeId::kTimestamp}});
  options.until_caught_up = true;  // the bounded backfill: stop at the start's end

  kelt::ParquetSinkOptions parquet;
  parquet.root = argv[4];  // or "s3://bucket/prefix" with parquet.s3_* set
  auto sink = kelt::MakeParquetSink(parquet);
  if (!sink.ok()) {
    std::cerr << sink.status().ToString() << "\n";
    return 1;
  }
  std::vector<std::unique_ptr<kelt::Sink>> sinks;
  sinks.push_back(std::move(*sink));

  auto loop = kelt::EltLoop::Make(std::move(options), std::move(sinks));
  if (!loop.ok()) {
    std::cerr << loop.status().ToString() << "\n";
    return 1;
  }
  auto stats = (*loop)->Run();  // flushes the sink and commits before returning
  if (!stats.ok()) {
    std::cerr << stats.status().ToString() << "\n";
    return 1;
  }
  std::cout << "landed " << stats->rows << " rows from " << stats->records
            << " records in " << stats->windows << " windows, " << stats->bad_records
            << " bad\n";
  for (const auto& [tp, next] : stats->committed) {
    std::cout << "  " << kelt::ToString(tp) << " durable up to offset " << next << "\n";
  }
  return 0;
}
