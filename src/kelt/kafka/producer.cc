// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Kafka sink. Unlike RDP, every delivery report is checked: Send returns the number
// of rows the broker acknowledged, and fails when any row was not delivered.
#include <librdkafka/rdkafka.h>

#include <arrow/api.h>

#include <unistd.h>

#include <chrono>
#include <functional>
#include <string_view>

#include "kelt/common/mutex.h"
#include "kelt/common/thread_annotations.h"
#include "kelt/kafka.h"
#include "kelt/kafka/client.h"
#include "kelt/log.h"
#include "kelt/model/row_format.h"

namespace kelt {

namespace {

struct TopicDeleter {
  void operator()(rd_kafka_topic_t* t) const { rd_kafka_topic_destroy(t); }
};

// Delivery outcome of one Send call; message opaques carry the row index.
struct Deliveries {
  int64_t delivered = 0;
  int64_t failed = 0;
  int64_t first_failed_row = -1;
  rd_kafka_resp_err_t first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
};

bool Blank(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") == std::string::npos;
}

}  // namespace

class Producer::Impl {
 public:
  explicit Impl(ProducerOptions options) : options_(std::move(options)) {}

  ~Impl() { (void)Close(); }

  Status Open() {
    if (Blank(options_.brokers))
      return Status::Invalid("kafka brokers must not be empty");
    if (Blank(options_.topic)) return Status::Invalid("kafka topic must not be empty");
    if (options_.message_timeout_ms <= 0) {
      return Status::Invalid("kafka message_timeout_ms must be positive");
    }
    if (options_.value_encoder && options_.value_column) {
      return Status::Invalid("kafka value_column and a value encoder are exclusive");
    }
    kafka::ConfPtr conf(rd_kafka_conf_new());
    std::map<std::string, std::string> props = {
        {"bootstrap.servers", options_.brokers},
        {"message.timeout.ms", std::to_string(options_.message_timeout_ms)},
        {"enable.idempotence", "true"},
        {"linger.ms", "5"},
    };
    for (const auto& [k, v] : options_.properties) props[k] = v;
    KELT_RETURN_NOT_OK(kafka::SetProperties(conf.get(), props));
    kafka::InstallLogger(conf.get());
    rd_kafka_conf_set_opaque(conf.get(), this);
    rd_kafka_conf_set_dr_msg_cb(conf.get(), &Impl::DeliveryCallback);
    rd_kafka_conf_set_error_cb(conf.get(), &Impl::ErrorCallback);
    char errstr[512] = {0};
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf.get(), errstr, sizeof(errstr));
    if (rk == nullptr)
      return Status::Kafka(std::string("creating kafka producer: ") + errstr);
    conf.release();
    rk_.reset(rk);
    topic_.reset(rd_kafka_topic_new(rk_.get(), options_.topic.c_str(), nullptr));
    if (!topic_)
      return kafka::KafkaError(rd_kafka_last_error(), "topic '" + options_.topic + "'");
    if (!options_.headers.empty()) {
      headers_.reset(rd_kafka_headers_new(options_.headers.size()));
      for (const auto& [name, value] : options_.headers) {
        rd_kafka_header_add(headers_.get(), name.data(),
                            static_cast<ssize_t>(name.size()), value.data(),
                            static_cast<ssize_t>(value.size()));
      }
    }
    return Status::OK();
  }

  Result<int64_t> Send(const arrow::RecordBatch& batch) {
    int key_col = -1;
    if (options_.key_column)
      key_col = batch.schema()->GetFieldIndex(*options_.key_column);
    // With an encoder only the key is formatted as text: the other columns may have
    // types the JSON row format does not map (maps, unions, dictionaries).
    std::shared_ptr<arrow::RecordBatch> text_batch;
    if (options_.value_encoder) {
      auto selected = batch.SelectColumns(key_col < 0 ? std::vector<int>{}
                                                      : std::vector<int>{key_col});
      if (!selected.ok()) return Status::Internal(selected.status().ToString());
      text_batch = *selected;
      if (key_col >= 0) key_col = 0;
    }
    KELT_ASSIGN_OR_RAISE(model::RowFormatter rows,
                         model::RowFormatter::Make(text_batch ? *text_batch : batch));
    int value_col = -1;
    std::vector<std::string> payloads;
    if (options_.value_encoder) {
      // Every row is encoded before the first is sent: a bad row sends nothing.
      payloads.reserve(static_cast<size_t>(batch.num_rows()));
      KELT_RETURN_NOT_OK(options_.value_encoder->Encode(batch, &payloads));
      if (payloads.size() != static_cast<size_t>(batch.num_rows())) {
        return Status::Internal("the value encoder made " +
                                std::to_string(payloads.size()) + " payloads for " +
                                std::to_string(batch.num_rows()) + " rows");
      }
    } else if (options_.value_column) {
      value_col = batch.schema()->GetFieldIndex(*options_.value_column);
      if (value_col < 0) {
        return Status::Invalid("schema mismatch: kafka value_column '" +
                               *options_.value_column + "' not in schema");
      }
      // Checked before anything is sent, so a bad row never leaves half a dataset behind.
      if (batch.column(value_col)->null_count() > 0) {
        return Status::Invalid("schema mismatch: kafka value_column '" +
                               *options_.value_column + "' is null");
      }
    }
    std::string key, value;
    return Produce(batch.num_rows(), [&](int64_t row, std::string* k, std::string* v) {
      k->clear();
      v->clear();
      if (key_col < 0 || !rows.CellText(key_col, row, k)) *k = std::to_string(row);
      if (!payloads.empty()) {
        v->swap(payloads[static_cast<size_t>(row)]);
      } else if (value_col >= 0) {
        rows.CellText(value_col, row, v);
      } else {
        rows.AppendRowJson(row, v);
      }
      return true;
    });
  }

  Result<int64_t> SendRaw(
      const std::vector<std::pair<std::optional<std::string>, std::string>>& messages) {
    return Produce(static_cast<int64_t>(messages.size()),
                   [&](int64_t row, std::string* k, std::string* v) {
                     const auto& [key, value] = messages[static_cast<size_t>(row)];
                     *v = value;
                     if (key) {
                       *k = *key;
                       return true;
                     }
                     return false;  // no key
                   });
  }

  Status Close() {
    if (!rk_) return Status::OK();
    rd_kafka_resp_err_t err =
        rd_kafka_flush(rk_.get(), options_.message_timeout_ms + 5000);
    topic_.reset();
    headers_.reset();
    rk_.reset();
    if (err) return kafka::KafkaError(err, "flushing the kafka producer");
    return Status::OK();
  }

 private:
  using RowFn = std::function<bool(int64_t, std::string*, std::string*)>;

  // Produce `n` messages built by `fn` (which returns false for "no key"), then wait for
  // every delivery report.
  Result<int64_t> Produce(int64_t n, const RowFn& fn) {
    if (!rk_) return Status::Invalid("kafka producer is closed");
    deliveries_ = Deliveries{};
    std::string key, value;
    int64_t queued = 0;
    Status error;
    for (int64_t row = 0; row < n && error.ok(); ++row) {
      bool has_key = fn(row, &key, &value);
      rd_kafka_headers_t* hdrs =
          headers_ ? rd_kafka_headers_copy(headers_.get()) : nullptr;
      const auto give_up = std::chrono::steady_clock::now() +
                           std::chrono::milliseconds(options_.message_timeout_ms);
      while (true) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk_.get(), RD_KAFKA_V_RKT(topic_.get()),
            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_KEY(has_key ? key.data() : nullptr, has_key ? key.size() : 0),
            RD_KAFKA_V_VALUE(value.data(), value.size()), RD_KAFKA_V_HEADERS(hdrs),
            RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<intptr_t>(row))),
            RD_KAFKA_V_END);
        if (!err) {
          ++queued;
          break;
        }
        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL &&
            std::chrono::steady_clock::now() < give_up) {
          rd_kafka_poll(rk_.get(), 50);  // serve delivery reports, making room
          continue;
        }
        if (hdrs) rd_kafka_headers_destroy(hdrs);  // not taken over on failure
        error = kafka::KafkaError(err, "producing row " + std::to_string(row) +
                                           " to topic '" + options_.topic + "'");
        break;
      }
      if ((row & 1023) == 0) rd_kafka_poll(rk_.get(), 0);
    }
    rd_kafka_resp_err_t err =
        rd_kafka_flush(rk_.get(), options_.message_timeout_ms + 5000);
    if (!error.ok()) return error;
    if (err)
      return kafka::KafkaError(err,
                               "waiting for delivery to topic '" + options_.topic + "'");
    const Deliveries& d = deliveries_;
    if (d.failed > 0 || d.delivered != queued) {
      std::string msg =
          std::to_string(d.failed) + " of " + std::to_string(queued) +
          " messages to topic '" + options_.topic + "' were not delivered; first: row " +
          std::to_string(d.first_failed_row) + ": " + rd_kafka_err2str(d.first_error);
      // A delivery timeout hides its cause; name it when the client reported one.
      if (!auth_error_.empty())
        msg += " (kafka authentication/authorization failed: " + auth_error_ + ")";
      return Status::Kafka(std::move(msg),
                           auth_error_.empty() && kafka::IsRetriable(d.first_error));
    }
    return d.delivered;
  }

  // Authentication and authorization failures would otherwise surface only as delivery
  // timeouts. librdkafka's reason texts carry no credentials.
  static void ErrorCallback(rd_kafka_t* /*rk*/, int err, const char* reason,
                            void* opaque) {
    auto code = static_cast<rd_kafka_resp_err_t>(err);
    if (code == RD_KAFKA_RESP_ERR__AUTHENTICATION ||
        code == RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED ||
        code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
        code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED) {
      static_cast<Impl*>(opaque)->auth_error_ = reason ? reason : rd_kafka_err2str(code);
    }
    Log(kafka::IsRetriable(code) ? LogLevel::kWarning : LogLevel::kError, "kafka",
        reason ? reason : rd_kafka_err2str(code));
  }

  static void DeliveryCallback(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m,
                               void* opaque) {
    Deliveries& d = static_cast<Impl*>(opaque)->deliveries_;
    if (m->err) {
      if (d.failed++ == 0) {
        d.first_failed_row =
            static_cast<int64_t>(reinterpret_cast<intptr_t>(m->_private));
        d.first_error = m->err;
      }
    } else {
      ++d.delivered;
    }
  }

  ProducerOptions options_;
  kafka::HandlePtr rk_;
  std::unique_ptr<rd_kafka_topic_t, TopicDeleter> topic_;
  kafka::HeadersPtr headers_;
  Deliveries deliveries_;
  std::string auth_error_;  // set by ErrorCallback (served on this thread by poll/flush)
};

Producer::Producer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Producer::~Producer() = default;

Result<std::unique_ptr<Producer>> Producer::Make(const ProducerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  KELT_RETURN_NOT_OK(impl->Open());
  return std::unique_ptr<Producer>(new Producer(std::move(impl)));
}

Result<int64_t> Producer::Send(const arrow::RecordBatch& batch) {
  return impl_->Send(batch);
}

Result<int64_t> Producer::Send(const DataSet& dataset) {
  KELT_ASSIGN_OR_RAISE(auto batch, DataSetToRecordBatch(dataset));
  return impl_->Send(*batch);
}

Result<int64_t> Producer::SendRaw(
    const std::vector<std::pair<std::optional<std::string>, std::string>>& messages) {
  return impl_->SendRaw(messages);
}

Status Producer::Close() { return impl_->Close(); }

namespace {

// RDP's callers export small datasets, often one row per call (RDP_COMPATIBILITY.md §9
// does exactly that); a producer per call pays a client start, an idempotent producer id
// and a metadata round trip each time (~13 ms on loopback). Calls with identical options
// share one long-lived producer instead: each call still waits for its own deliveries
// (Send flushes), a failed call discards the producer so the next one starts clean, and
// a forked child never uses its parent's client. The producer is never destroyed: it
// holds nothing undelivered between calls, and destroying librdkafka clients during
// static destruction can block on a broker that is gone.
class ExportProducerCache {
 public:
  Result<int64_t> Send(const ProducerOptions& options, const DataSet& dataset)
      KELT_EXCLUDES(mu_) {
    internal::MutexLock lock(&mu_);
    std::string key = Key(options);
    if (producer_ == nullptr || key != key_ || pid_ != ::getpid()) {
      if (producer_ != nullptr && pid_ == ::getpid()) (void)producer_->Close();
      if (pid_ != ::getpid()) (void)producer_.release();  // the parent's threads
      producer_.reset();
      KELT_ASSIGN_OR_RAISE(producer_, Producer::Make(options));
      key_ = std::move(key);
      pid_ = ::getpid();
    }
    Result<int64_t> sent = producer_->Send(dataset);
    if (!sent.ok()) {
      (void)producer_->Close();
      producer_.reset();
    }
    return sent;
  }

 private:
  // Every option that changes what a producer does (secrets included: in memory only).
  static std::string Key(const ProducerOptions& o) {
    std::string k;
    auto add = [&k](std::string_view part) {
      k += std::to_string(part.size());
      k += ':';
      k += part;
    };
    add(o.brokers);
    add(o.topic);
    add(std::to_string(o.message_timeout_ms));
    add(o.key_column ? "1" + *o.key_column : "0");
    add(o.value_column ? "1" + *o.value_column : "0");
    // The encoder by identity: a caller that makes one per call gets a producer per call.
    add(std::to_string(reinterpret_cast<uintptr_t>(o.value_encoder.get())));
    for (const auto& [name, value] : o.headers) {
      add(name);
      add(value);
    }
    add("|");
    for (const auto& [name, value] : o.properties) {
      add(name);
      add(value);
    }
    return k;
  }

  internal::Mutex mu_;  // one Send at a time, whatever the thread
  std::string key_ KELT_GUARDED_BY(mu_);
  pid_t pid_ KELT_GUARDED_BY(mu_) = 0;
  std::unique_ptr<Producer> producer_ KELT_GUARDED_BY(mu_);
};

}  // namespace

Result<int64_t> ExportDataSetToKafka(const ProducerOptions& options,
                                     const DataSet& dataset) {
  static auto* cache = new ExportProducerCache();  // never destroyed, see above
  return cache->Send(options, dataset);
}

}  // namespace kelt
