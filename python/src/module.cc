// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// kelt._kelt: the private native module behind the Python package. Every function calls
// kelt's public C++ API (include/kelt/*.h) and converts at the boundary only: strings
// and dicts in, Arrow (PyCapsules), strings and dicts out. The GIL is released around
// every call that can block (Kafka, sinks, SQL, Load). The facade (python/kelt) owns the
// user-facing names, defaults and docs.
#include <arrow/api.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "arrow_interop.h"
#include "errors.h"
#include "kelt/common/memory_pool.h"
#include "kelt/config.h"
#include "kelt/dataset.h"
#include "kelt/elt.h"
#include "kelt/kafka.h"
#include "kelt/load.h"
#include "kelt/log.h"
#include "kelt/mock_cluster.h"
#include "kelt/pipeline_json.h"
#include "kelt/poll_load.h"
#include "kelt/rdp.h"
#include "kelt/record.h"
#include "kelt/schema.h"
#include "kelt/serde.h"
#include "kelt/sink.h"
#include "kelt/transform.h"
#include "kelt/version.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace kelt::python {
namespace {

// --- small conversions
// ------------------------------------------------------------------

Schema ParseLandingSchema(const std::string& schema_json) {
  return ValueOrThrow(ParseSchemaJson(schema_json, SchemaDialect::kLenient));
}

LoadOptions MakeLoadOptions(const std::string& on_bad_record, bool strict_payload) {
  std::optional<BadRecordPolicy> policy = ParseBadRecordPolicy(on_bad_record);
  if (!policy) {
    throw StatusError(
        Status::Invalid("on_bad_record: expected 'fail', 'skip' or "
                        "'dead_letter', got '" +
                        on_bad_record + "'"));
  }
  LoadOptions o;
  o.on_bad_record = *policy;
  o.strict_payload = strict_payload;
  return o;
}

nb::tuple TopicPartitionTuple(const TopicPartition& tp) {
  return nb::make_tuple(nb::str(tp.topic.c_str(), tp.topic.size()), tp.partition);
}

nb::dict OffsetMapDict(const OffsetMap& offsets) {
  nb::dict out;
  for (const auto& [tp, next] : offsets) out[TopicPartitionTuple(tp)] = next;
  return out;
}

// Typed reads from a config dict built by the facade; errors name the key.
class DictReader {
 public:
  DictReader(nb::dict d, std::string where)
      : d_(std::move(d)), where_(std::move(where)) {}

  bool Has(const char* key) const { return d_.contains(key) && !d_[key].is_none(); }

  template <typename T>
  void Get(const char* key, T* out) const {
    if (!Has(key)) return;
    nb::object v = d_[key];
    if (!nb::try_cast<T>(v, *out)) Fail(key, v);
  }
  template <typename T>
  void Get(const char* key, std::optional<T>* out) const {
    if (!Has(key)) return;
    T value{};
    Get(key, &value);
    *out = value;
  }
  void Get(const char* key, GroupProtocol* out) const {
    if (!Has(key)) return;
    std::string text;
    Get(key, &text);
    *out = ValueOrThrow(ParseGroupProtocol(text, where_ + ": " + key));
  }
  void Get(const char* key, std::map<std::string, std::string>* out) const {
    if (!Has(key)) return;
    nb::object v = d_[key];
    if (!nb::isinstance<nb::dict>(v)) Fail(key, v);
    for (auto [k, val] : nb::borrow<nb::dict>(v)) {
      (*out)[nb::cast<std::string>(nb::str(k))] = nb::cast<std::string>(nb::str(val));
    }
  }

 private:
  [[noreturn]] void Fail(const char* key, nb::handle v) const {
    throw StatusError(Status::Invalid(where_ + ": " + key +
                                      ": unexpected value of type " +
                                      nb::type_name(v.type()).c_str()));
  }
  nb::dict d_;
  std::string where_;
};

// --- landed windows
// ---------------------------------------------------------------------

/// One loaded window: the landed rows, the dead letters and how the window went.
struct Landed {
  std::optional<ArrowTable> rows;
  std::optional<ArrowTable> dead_letters;
  LoadStats stats;
  std::vector<PartitionSpan> spans;
  std::string end_reason;  // empty when not from a consumer
  bool caught_up = false;
  int64_t bytes = 0;
};

Landed MakeLanded(LoadedWindow&& w) {
  Landed out;
  out.rows = ArrowTable::FromBatch(w.batch);
  std::shared_ptr<arrow::RecordBatch> dead = w.dead_letters;
  if (dead == nullptr) {
    auto empty = arrow::RecordBatch::MakeEmpty(DeadLetterSchema());
    dead = empty.ok() ? *empty : nullptr;
  }
  if (dead != nullptr) out.dead_letters = ArrowTable::FromBatch(dead);
  out.stats = w.stats;
  return out;
}

// A window loaded in parts (LoadWindowParallel): one table of all their batches, in
// order, without copying them.
Landed MakeLandedParts(std::vector<LoadedWindow>&& parts) {
  if (parts.size() == 1) return MakeLanded(std::move(parts[0]));
  Landed out;
  std::vector<std::shared_ptr<arrow::RecordBatch>> rows, dead;
  for (LoadedWindow& part : parts) {
    rows.push_back(part.batch);
    if (part.dead_letters != nullptr) dead.push_back(part.dead_letters);
    out.stats += part.stats;
  }
  out.rows = ArrowTable::FromBatches(rows[0]->schema(), rows);
  out.dead_letters = ArrowTable::FromBatches(DeadLetterSchema(), dead);
  return out;
}

nb::dict StatsDict(const LoadStats& s) {
  nb::dict d;
  d["records"] = s.records;
  d["rows"] = s.rows;
  d["bad_records"] = s.bad_records;
  d["skipped"] = s.skipped;
  d["dead_lettered"] = s.dead_lettered;
  d["tombstones"] = s.tombstones;
  d["payload_bytes"] = s.payload_bytes;
  return d;
}

nb::list SpansList(const std::vector<PartitionSpan>& spans) {
  nb::list out;
  for (const auto& s : spans) {
    out.append(nb::make_tuple(nb::str(s.tp.topic.c_str(), s.tp.topic.size()),
                              s.tp.partition, s.first_offset, s.last_offset, s.count));
  }
  return out;
}

// --- RDP's stateless calls
// ----------------------------------------------------------------

Landed LoadRecordsJsonCall(const std::string& records_json,
                           const std::string& schema_json,
                           const std::string& on_bad_record, bool strict_payload) {
  Schema landing = ParseLandingSchema(schema_json);
  LoadOptions options = MakeLoadOptions(on_bad_record, strict_payload);
  Result<LoadedWindow> loaded = [&] {
    nb::gil_scoped_release release;
    return LoadRecordsJson(records_json, landing, options);
  }();
  return MakeLanded(ValueOrThrow(std::move(loaded)));
}

std::string PollWindowCall(const std::string& config_json) {
  rdp::PollCall call = ValueOrThrow(rdp::ParseConsumerConfigJson(config_json));
  nb::gil_scoped_release release;
  auto records = ValueOrThrow(rdp::PollKafkaWindow(call));
  return RecordsToJson(records);
}

Landed PollWindowLoadedCall(const std::string& config_json,
                            const std::string& schema_json,
                            const std::string& on_bad_record, bool strict_payload) {
  rdp::PollCall call = ValueOrThrow(rdp::ParseConsumerConfigJson(config_json));
  Schema landing = ParseLandingSchema(schema_json);
  LoadOptions options = MakeLoadOptions(on_bad_record, strict_payload);
  Result<LoadedWindow> loaded = [&] {
    nb::gil_scoped_release release;
    return rdp::PollKafkaWindowLoaded(call, landing, options);
  }();
  return MakeLanded(ValueOrThrow(std::move(loaded)));
}

// The producer config's options, with its value format's encoder (value_format, subject,
// registry: include/kelt/serde.h); the registry is asked here, with `schema` when known.
ProducerOptions ParseProducerConfig(const std::string& producer_json,
                                    std::shared_ptr<arrow::Schema> schema) {
  ProducerOptions options = ValueOrThrow(rdp::ParseProducerConfigJson(producer_json));
  ValueFormatOptions format = ValueOrThrow(ParseValueFormatJson(producer_json));
  options.value_encoder = ValueOrThrow(MakeValueEncoder(format, std::move(schema)));
  return options;
}

int64_t ExportDataSetJsonCall(const std::string& producer_json,
                              const std::string& dataset_json) {
  nb::gil_scoped_release release;
  ProducerOptions options = ParseProducerConfig(producer_json, nullptr);
  DataSet dataset = ValueOrThrow(ParseDataSetJson(dataset_json, SchemaDialect::kLenient));
  return ValueOrThrow(ExportDataSetToKafka(options, dataset));
}

int64_t ExportArrowCall(const std::string& producer_json, nb::handle data) {
  std::shared_ptr<arrow::Table> table = ImportArrow(data, "dataset");
  nb::gil_scoped_release release;
  ProducerOptions options = ParseProducerConfig(producer_json, table->schema());
  arrow::TableBatchReader reader(table);
  std::unique_ptr<Producer> producer = ValueOrThrow(Producer::Make(options));
  int64_t sent = 0;
  while (true) {
    std::shared_ptr<arrow::RecordBatch> batch;
    arrow::Status st = reader.ReadNext(&batch);
    if (!st.ok()) throw StatusError(Status::Invalid("dataset: " + st.ToString()));
    if (batch == nullptr) break;
    sent += ValueOrThrow(producer->Send(*batch));
  }
  ThrowIfError(producer->Close());
  return sent;
}

std::string NormalizeSchemaCall(const std::string& schema_json) {
  return SchemaToJson(ParseLandingSchema(schema_json));
}

// --- the stateful consumer -------------------------------------------------------------

class PyConsumer {
 public:
  /// From a document of the key table's consumer keys (kelt/_consumer.py builds it from
  /// the keyword arguments): the config parser's names, checks and defaults.
  explicit PyConsumer(const std::string& config_json) {
    nb::gil_scoped_release release;
    ConsumerOptions o = ValueOrThrow(ParseConsumerConfig(config_json));
    consumer_ = ValueOrThrow(Consumer::Make(o));
  }

  Landed Poll(const std::string& schema_json, int64_t max_records, int64_t max_bytes,
              int64_t max_wait_ms, bool stop_at_end, const std::string& on_bad_record,
              bool strict_payload) {
    WindowOptions wo;
    wo.max_records = max_records;
    wo.max_bytes = max_bytes;
    wo.max_wait = std::chrono::milliseconds(max_wait_ms);
    wo.stop_at_end = stop_at_end;
    std::string key = schema_json + '\n' + on_bad_record + (strict_payload ? "1" : "0");
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    Kafka();
    if (loaders_.empty() || key != loader_key_) {
      // Compile the schema once and reuse the loaders (and their parsers) window after
      // window: one per core, since large windows load in parallel.
      Schema landing =
          ValueOrThrow(ParseSchemaJson(schema_json, SchemaDialect::kLenient));
      loaders_ = ValueOrThrow(
          MakeLoaderPerCore(landing, MakeLoadOptions(on_bad_record, strict_payload)));
      loader_key_ = key;
    }
    // A window that fails to load is given back: the next poll reads it again.
    auto [window, parts] = ValueOrThrow(PollLoadedParallel(*consumer_, loaders_, wo));
    Landed out = MakeLandedParts(std::move(parts));
    out.spans = window.spans();
    out.end_reason = std::string(WindowEndName(window.end_reason()));
    out.caught_up = window.caught_up();
    out.bytes = window.bytes();
    return out;
  }

  // Records as RDP's JSON plus the spans to commit them.
  nb::tuple PollRecords(int64_t max_records, int64_t max_bytes, int64_t max_wait_ms,
                        bool stop_at_end) {
    WindowOptions wo;
    wo.max_records = max_records;
    wo.max_bytes = max_bytes;
    wo.max_wait = std::chrono::milliseconds(max_wait_ms);
    wo.stop_at_end = stop_at_end;
    std::string json;
    std::vector<PartitionSpan> spans;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Kafka();
      Window window = ValueOrThrow(consumer_->Poll(wo));
      json = RecordsToJson(window.ToRecords());
      spans = window.spans();
    }
    return nb::make_tuple(nb::str(json.c_str(), json.size()), SpansList(spans));
  }

  void CommitOffsets(const std::vector<std::tuple<std::string, int32_t, int64_t>>& next) {
    OffsetMap offsets;
    for (const auto& [topic, partition, offset] : next) {
      int64_t& v = offsets[TopicPartition{topic, partition}];
      v = std::max(v, offset);
    }
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    Kafka();
    ThrowIfError(consumer_->CommitOffsets(offsets));
  }

  nb::list Lag(int64_t timeout_ms) {
    std::vector<PartitionLag> lag;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Kafka();
      lag = ValueOrThrow(consumer_->Lag(std::chrono::milliseconds(timeout_ms)));
    }
    nb::list out;
    for (const auto& l : lag) {
      nb::dict d;
      d["topic"] = nb::str(l.tp.topic.c_str(), l.tp.topic.size());
      d["partition"] = l.tp.partition;
      d["position"] = l.position;
      d["high_watermark"] = l.high_watermark;
      d["lag"] = l.lag;
      out.append(d);
    }
    return out;
  }

  nb::dict Committed(int64_t timeout_ms) {
    std::vector<std::pair<TopicPartition, int64_t>> committed;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Kafka();
      committed =
          ValueOrThrow(consumer_->Committed(std::chrono::milliseconds(timeout_ms)));
    }
    nb::dict out;
    for (const auto& [tp, offset] : committed) out[TopicPartitionTuple(tp)] = offset;
    return out;
  }

  nb::list Assignment() {
    std::vector<TopicPartition> tps;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Kafka();
      tps = consumer_->Assignment();
    }
    nb::list out;
    for (const auto& tp : tps) out.append(TopicPartitionTuple(tp));
    return out;
  }

  nb::list TakeLostPartitions() {
    std::vector<TopicPartition> tps;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      Kafka();
      tps = consumer_->TakeLostPartitions();
    }
    nb::list out;
    for (const auto& tp : tps) out.append(TopicPartitionTuple(tp));
    return out;
  }

  void StartCatchUp() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    Kafka();
    ThrowIfError(consumer_->StartCatchUp());
  }

  bool CaughtUp() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    return consumer_ != nullptr && consumer_->caught_up();
  }

  // Read with the GIL held and without mu_ (a poll may hold it for seconds): from the
  // flag Close() sets, never from consumer_, which Close() resets without the GIL on
  // another thread (a data race ThreadSanitizer found, tests/test_threads.py).
  bool closed() const { return closed_.load(std::memory_order_acquire); }

  void Close() {
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    if (consumer_ == nullptr) return;
    Status st = consumer_->Close();
    consumer_.reset();
    closed_.store(true, std::memory_order_release);
    loaders_.clear();
    ThrowIfError(st);
  }

  ~PyConsumer() {
    if (consumer_ != nullptr) {
      nb::gil_scoped_release release;  // leaving the group talks to the broker
      (void)consumer_->Close();
      consumer_.reset();
    }
  }

 private:
  void Kafka() const {
    if (consumer_ == nullptr)
      throw StatusError(Status::Invalid("kafka consumer is closed"));
  }

  std::mutex mu_;
  std::unique_ptr<Consumer> consumer_;
  std::atomic<bool> closed_{false};  ///< set by Close() once consumer_ is gone
  std::vector<std::unique_ptr<Loader>> loaders_;
  std::string loader_key_;
};

// --- the ELT loop ----------------------------------------------------------------------

// The config key table (include/kelt/config.h): what the facade maps its keyword
// arguments and sink fields to. `scope` is "" for the loop's keys, the sink kind for a
// sink's; `consumer` marks the keys kelt.Consumer takes too.
nb::list ConfigKeysList() {
  nb::list out;
  for (const auto& k : EltConfigKeys()) {
    nb::dict d;
    const std::string head = k.key.substr(0, k.key.find('.'));
    const bool sink = k.key.find('.') != std::string::npos && ParseSinkKind(head);
    d["key"] = k.key;
    d["scope"] = sink ? head : std::string();
    d["type"] = k.type;
    d["default"] = k.default_value;
    d["env"] = k.env;
    d["flag"] = k.flag;
    d["python"] = k.python;
    d["help"] = k.help;
    d["secret"] = k.secret;
    d["consumer"] = k.consumer;
    out.append(d);
  }
  return out;
}

nb::dict EltStatsDict(const EltStats& s) {
  nb::dict d;
  d["windows"] = s.windows;
  d["records"] = s.records;
  d["bytes"] = s.bytes;
  d["rows"] = s.rows;
  d["bad_records"] = s.bad_records;
  d["dead_lettered"] = s.dead_lettered;
  d["sink_errors"] = s.sink_errors;
  d["caught_up"] = s.caught_up;
  d["committed"] = OffsetMapDict(s.committed);
  nb::dict durable;
  for (const auto& [sink, offsets] : s.durable) {
    durable[nb::str(sink.c_str(), sink.size())] = OffsetMapDict(offsets);
  }
  d["durable"] = durable;
  return d;
}

class PyEltLoop {
 public:
  /// From a `kelt run --config` document (include/kelt/config.h): the same keys, the
  /// same checks, the same sinks as the CLI. `path` non-empty: read that file. The
  /// facade's keyword arguments come here too, as a document (kelt/_elt.py).
  PyEltLoop(const std::string& path, const std::string& text, const std::string& base_dir,
            const std::vector<std::pair<std::string, std::string>>& overrides,
            bool built_by_program) {
    std::vector<ConfigOverride> ov;
    for (const auto& [key, value] : overrides) ov.push_back({key, value, "python"});
    nb::gil_scoped_release release;
    EltConfig config =
        ValueOrThrow(path.empty() ? ParseEltConfig(text, base_dir, ov, built_by_program)
                                  : LoadEltConfig(path, ov));
    std::vector<std::unique_ptr<Sink>> sinks = ValueOrThrow(MakeSinks(config));
    config.elt.should_stop = StopHook();
    loop_ = ValueOrThrow(EltLoop::Make(std::move(config.elt), std::move(sinks)));
  }

  nb::dict Run(nb::object on_window) {
    EltWindowCallback cb = Callback(on_window);
    Result<EltStats> stats = [&] {
      nb::gil_scoped_release release;
      std::lock_guard<std::recursive_mutex> lock(mu_);
      Open();
      return loop_->Run(cb);
    }();
    RethrowPython();
    return EltStatsDict(ValueOrThrow(std::move(stats)));
  }

  bool Step(nb::object on_window) {
    EltWindowCallback cb = Callback(on_window);
    Result<bool> more = [&] {
      nb::gil_scoped_release release;
      std::lock_guard<std::recursive_mutex> lock(mu_);
      Open();
      return loop_->Step(cb);
    }();
    RethrowPython();
    return ValueOrThrow(std::move(more));
  }

  // Release the GIL before waiting for the lock: a run in another thread holds the lock
  // and needs the GIL for its callbacks.
  nb::dict Stats() {
    EltStats stats;
    {
      nb::gil_scoped_release release;
      std::lock_guard<std::recursive_mutex> lock(mu_);
      Open();
      stats = loop_->stats();
    }
    return EltStatsDict(stats);
  }

  std::string Landing() {
    nb::gil_scoped_release release;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    Open();
    return SchemaToJson(loop_->landing());
  }

  void Close() {
    nb::gil_scoped_release release;
    std::lock_guard<std::recursive_mutex> lock(mu_);
    if (loop_ == nullptr) return;
    Status st = loop_->Close();
    loop_.reset();
    ThrowIfError(st);
  }

  ~PyEltLoop() {
    if (loop_ != nullptr) {
      nb::gil_scoped_release release;
      (void)loop_->Close();
      loop_.reset();
    }
  }

 private:
  void Open() const {
    if (loop_ == nullptr) throw StatusError(Status::Invalid("ELT loop is closed"));
  }

  // Ctrl-C: the loop runs without the GIL, so it asks Python between windows.
  std::function<bool()> StopHook() {
    return [this] {
      if (stop_) return true;  // a callback raised
      nb::gil_scoped_acquire acquire;
      if (PyErr_CheckSignals() != 0) {
        interrupted_.emplace();  // takes the KeyboardInterrupt (or the handler's error)
        return true;
      }
      return false;
    };
  }

  // A Python callback runs with the GIL; an exception it raises stops the run and is
  // raised again by Run/Step.
  EltWindowCallback Callback(nb::object on_window) {
    if (on_window.is_none()) return {};
    return [this, on_window](const EltStats& stats, const Window& window) {
      nb::gil_scoped_acquire acquire;
      if (callback_error_) return;
      try {
        nb::dict info;
        info["records"] = static_cast<int64_t>(window.size());
        info["bytes"] = window.bytes();
        info["end_reason"] =
            nb::str(std::string(WindowEndName(window.end_reason())).c_str());
        info["spans"] = SpansList(window.spans());
        on_window(EltStatsDict(stats), info);
      } catch (nb::python_error& e) {
        callback_error_.emplace(std::move(e));
        stop_ = true;
      }
    };
  }

  void RethrowPython() {
    stop_ = false;
    if (callback_error_) {
      nb::python_error e = std::move(*callback_error_);
      callback_error_.reset();
      throw e;
    }
    if (interrupted_) {
      nb::python_error e = std::move(*interrupted_);
      interrupted_.reset();
      throw e;
    }
  }

  // Recursive: an on_window callback may call stats() on the loop that runs it.
  std::recursive_mutex mu_;
  std::unique_ptr<EltLoop> loop_;
  std::optional<nb::python_error> callback_error_;
  std::optional<nb::python_error> interrupted_;
  bool stop_ = false;
};

// --- SQL
// --------------------------------------------------------------------------------

ArrowTable SqlCall(const std::string& query, nb::handle data) {
  std::shared_ptr<arrow::Table> table = ImportArrow(data, "sql table");
  Result<std::shared_ptr<arrow::Table>> out = [&] {
    nb::gil_scoped_release release;
    return QuerySql(query, std::move(table));
  }();
  return ArrowTable(ValueOrThrow(std::move(out)));
}

LandingSource LandingSourceFromDict(nb::dict source);

class PySqlSession {
 public:
  PySqlSession() {
    nb::gil_scoped_release release;
    session_ = ValueOrThrow(SqlSession::Make());
  }

  void RegisterArrow(const std::string& name, nb::handle data) {
    std::shared_ptr<arrow::Table> table = ImportArrow(data, name.c_str());
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    ThrowIfError(session_->RegisterArrow(name, std::move(table)));
  }

  void RegisterLanding(const std::string& name, nb::dict source) {
    LandingSource s = LandingSourceFromDict(source);
    nb::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(mu_);
    ThrowIfError(session_->RegisterLanding(name, s));
  }

  ArrowTable Query(const std::string& sql) {
    Result<std::shared_ptr<arrow::Table>> out = [&] {
      nb::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(mu_);
      return session_->Query(sql);
    }();
    return ArrowTable(ValueOrThrow(std::move(out)));
  }

 private:
  std::mutex mu_;
  std::unique_ptr<SqlSession> session_;
};

LandingSource LandingSourceFromDict(nb::dict source) {
  LandingSource s;
  DictReader r(source, "landing source");
  std::string format = "parquet";
  r.Get("format", &format);
  if (format == "parquet") {
    s.format = LandingSource::Format::kParquet;
  } else if (format == "duckdb") {
    s.format = LandingSource::Format::kDuckDb;
  } else if (format == "iceberg") {
    s.format = LandingSource::Format::kIceberg;
  } else {
    throw StatusError(
        Status::Invalid("landing source: format: expected 'parquet', 'duckdb' or "
                        "'iceberg', got '" +
                        format + "'"));
  }
  r.Get("location", &s.location);
  r.Get("topic", &s.topic);
  r.Get("table", &s.table);
  r.Get("dead_letters", &s.dead_letters);
  r.Get("dead_letter_dir", &s.dead_letter_dir);
  r.Get("s3_endpoint", &s.s3_endpoint);
  r.Get("s3_region", &s.s3_region);
  r.Get("s3_access_key", &s.s3_access_key);
  r.Get("s3_secret_key", &s.s3_secret_key);
  r.Get("catalog_name", &s.catalog_name);
  return s;
}

nb::dict RunIncrementalCall(nb::dict model_dict, nb::dict source) {
  IncrementalModel model;
  DictReader r(model_dict, "incremental model");
  r.Get("name", &model.name);
  r.Get("sql", &model.sql);
  r.Get("output_path", &model.output_path);
  r.Get("output_table", &model.output_table);
  r.Get("state_table", &model.state_table);
  r.Get("key", &model.key);
  model.source = LandingSourceFromDict(source);
  IncrementalRun run;
  {
    nb::gil_scoped_release release;
    run = ValueOrThrow(RunIncremental(model));
  }
  nb::dict d;
  d["files_read"] = run.files_read;
  d["rows_read"] = run.rows_read;
  d["rows_written"] = run.rows_written;
  d["next_offsets"] = OffsetMapDict(run.next_offsets);
  return d;
}

std::string RunPipelineJsonCall(const std::string& doc) {
  nb::gil_scoped_release release;
  return RunPipelineJson(doc);
}

std::string ValidatePipelineJsonCall(const std::string& doc) {
  nb::gil_scoped_release release;
  return PipelineRunResultToJson(ValidatePipeline(doc));
}

// --- the log hook
// --------------------------------------------------------------------------

// The Python handler, set and read under the GIL. Never freed: a librdkafka thread may
// still be inside the hook while the interpreter shuts down.
nb::object* g_log_handler = new nb::object();
// False once the facade's atexit handler ran: no call into a finalizing interpreter.
std::atomic<bool> g_log_enabled{false};

bool InterpreterUsable() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsInitialized() && !Py_IsFinalizing();
#else
  return Py_IsInitialized() && !_Py_IsFinalizing();
#endif
}

void SetLogHandler(nb::object handler, const std::string& min_level) {
  LogLevel level;
  if (min_level == "debug") {
    level = LogLevel::kDebug;
  } else if (min_level == "info") {
    level = LogLevel::kInfo;
  } else if (min_level == "warning") {
    level = LogLevel::kWarning;
  } else if (min_level == "error") {
    level = LogLevel::kError;
  } else {
    throw StatusError(
        Status::Invalid("level: expected 'debug', 'info', 'warning' or 'error', got '" +
                        min_level + "'"));
  }
  if (handler.is_none()) {
    g_log_enabled.store(false);
    SetLogHook(nullptr);
    *g_log_handler = nb::object();
    return;
  }
  *g_log_handler = handler;
  g_log_enabled.store(true);
  SetLogHook(
      [](LogLevel lvl, std::string_view component, std::string_view message) {
        // Called from any thread, librdkafka's included.
        if (!g_log_enabled.load() || !InterpreterUsable()) return;
        nb::gil_scoped_acquire acquire;
        if (!g_log_enabled.load() || !g_log_handler->is_valid()) return;
        try {
          (*g_log_handler)(std::string(LogLevelName(lvl)), std::string(component),
                           std::string(message));
        } catch (nb::python_error& e) {
          e.discard_as_unraisable("kelt log handler");
        }
      },
      level);
}

// --- test support: librdkafka's in-process mock cluster (kelt/mock_cluster.h)
// ------------------------------------

class PyMockCluster {
 public:
  explicit PyMockCluster(int brokers)
      : mc_(ValueOrThrow(kelt::MockCluster::Make(brokers))) {}
  ~PyMockCluster() {
    nb::gil_scoped_release release;
    mc_.reset();
  }
  std::string bootstraps() const { return mc_->bootstraps(); }
  void CreateTopic(const std::string& name, int32_t partitions) {
    ThrowIfError(mc_->CreateTopic(name, partitions));
  }

 private:
  std::unique_ptr<kelt::MockCluster> mc_;
};

}  // namespace
}  // namespace kelt::python

NB_MODULE(_kelt, m) {
  using namespace kelt::python;
  m.doc() = "kelt's native module (private: use the `kelt` package).";
  // pyarrow's pool: kelt's tables count in pa.total_allocated_bytes() like pyarrow's.
  kelt::internal::SetWindowPool(arrow::default_memory_pool());
  RegisterErrors(m);

  nb::class_<ArrowTable>(m, "ArrowTable",
                         "An Arrow table held by kelt (PyCapsule interface).")
      .def_prop_ro("num_rows", &ArrowTable::num_rows)
      .def("column_names", &ArrowTable::column_names)
      .def("__arrow_c_stream__", &ArrowTable::StreamCapsule,
           "requested_schema"_a = nb::none())
      .def("__arrow_c_schema__", &ArrowTable::SchemaCapsule);

  nb::class_<Landed>(m, "Landed", "One loaded window.")
      .def_prop_ro("rows", [](const Landed& l) { return *l.rows; })
      .def_prop_ro("dead_letters", [](const Landed& l) { return l.dead_letters; })
      .def_prop_ro("stats", [](const Landed& l) { return StatsDict(l.stats); })
      .def_prop_ro("spans", [](const Landed& l) { return SpansList(l.spans); })
      .def_prop_ro("end_reason", [](const Landed& l) { return l.end_reason; })
      .def_prop_ro("caught_up", [](const Landed& l) { return l.caught_up; })
      .def_prop_ro("bytes", [](const Landed& l) { return l.bytes; });

  m.def("load_records_json", &LoadRecordsJsonCall, "records_json"_a, "schema_json"_a,
        "on_bad_record"_a, "strict_payload"_a);
  m.def("librdkafka_version", [] { return kelt::KafkaClientVersion(); });
  // The version of the core this module was built from (VERSION, via kelt/version.h).
  m.attr("__version__") = KELT_VERSION_STRING;
  m.def("poll_window", &PollWindowCall, "config_json"_a);
  m.def("poll_window_loaded", &PollWindowLoadedCall, "config_json"_a, "schema_json"_a,
        "on_bad_record"_a, "strict_payload"_a);
  m.def("export_dataset_json", &ExportDataSetJsonCall, "producer_json"_a,
        "dataset_json"_a);
  m.def("export_arrow", &ExportArrowCall, "producer_json"_a, "data"_a);
  m.def("normalize_schema", &NormalizeSchemaCall, "schema_json"_a);

  nb::class_<PyConsumer>(m, "Consumer")
      .def(nb::init<const std::string&>(), "config_json"_a)
      .def("poll", &PyConsumer::Poll, "schema_json"_a, "max_records"_a, "max_bytes"_a,
           "max_wait_ms"_a, "stop_at_end"_a, "on_bad_record"_a, "strict_payload"_a)
      .def("poll_records", &PyConsumer::PollRecords, "max_records"_a, "max_bytes"_a,
           "max_wait_ms"_a, "stop_at_end"_a)
      .def("commit_offsets", &PyConsumer::CommitOffsets, "next_offsets"_a)
      .def("lag", &PyConsumer::Lag, "timeout_ms"_a)
      .def("committed", &PyConsumer::Committed, "timeout_ms"_a)
      .def("assignment", &PyConsumer::Assignment)
      .def("take_lost_partitions", &PyConsumer::TakeLostPartitions)
      .def("start_catch_up", &PyConsumer::StartCatchUp)
      .def_prop_ro("caught_up", &PyConsumer::CaughtUp)
      .def_prop_ro("closed", &PyConsumer::closed)
      .def("close", &PyConsumer::Close);

  m.def("config_keys", &ConfigKeysList);
  nb::class_<PyEltLoop>(m, "EltLoop")
      .def(nb::init<const std::string&, const std::string&, const std::string&,
                    const std::vector<std::pair<std::string, std::string>>&, bool>(),
           "path"_a, "text"_a, "base_dir"_a, "overrides"_a, "built_by_program"_a = false)
      .def("run", &PyEltLoop::Run, "on_window"_a = nb::none())
      .def("step", &PyEltLoop::Step, "on_window"_a = nb::none())
      .def("stats", &PyEltLoop::Stats)
      .def("landing_schema", &PyEltLoop::Landing)
      .def("close", &PyEltLoop::Close);

  m.def("sql", &SqlCall, "query"_a, "data"_a);
  nb::class_<PySqlSession>(m, "SqlSession")
      .def(nb::init<>())
      .def("register_arrow", &PySqlSession::RegisterArrow, "name"_a, "data"_a)
      .def("register_landing", &PySqlSession::RegisterLanding, "name"_a, "source"_a)
      .def("query", &PySqlSession::Query, "sql"_a);
  m.def("run_incremental", &RunIncrementalCall, "model"_a, "source"_a);
  m.def("run_pipeline_json", &RunPipelineJsonCall, "pipeline_json"_a);
  m.def("validate_pipeline_json", &ValidatePipelineJsonCall, "pipeline_json"_a);

  m.def("set_log_handler", &SetLogHandler, "handler"_a.none(), "min_level"_a);

  nb::class_<PyMockCluster>(m, "MockCluster",
                            "librdkafka's in-process mock cluster (tests).")
      .def(nb::init<int>(), "brokers"_a = 1)
      .def_prop_ro("bootstraps", &PyMockCluster::bootstraps)
      .def("create_topic", &PyMockCluster::CreateTopic, "name"_a, "partitions"_a);
}
