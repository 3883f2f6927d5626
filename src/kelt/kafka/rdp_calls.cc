// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include <simdjson.h>

#include "kelt/model/json_dom.h"
#include "kelt/rdp.h"

namespace kelt::rdp {
namespace {

namespace dom = simdjson::dom;

Status ConfigError(std::string_view key, std::string_view message) {
  std::string out = "config JSON: ";
  if (!key.empty()) {
    out += key;
    out += ": ";
  }
  out += message;
  return Status::Invalid(std::move(out));
}

// Read an optional string key: absent or null leaves *out alone.
Status GetString(dom::object obj, std::string_view key, std::string* out) {
  dom::element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return Status::OK();
  std::string_view s;
  if (e.get_string().get(s) != simdjson::SUCCESS) {
    return ConfigError(key, "expected a string, got " + model::Excerpt(e));
  }
  *out = std::string(s);
  return Status::OK();
}

Status GetInt(dom::object obj, std::string_view key, int64_t min,
              std::optional<int64_t>* out) {
  dom::element e;
  if (obj[key].get(e) != simdjson::SUCCESS || e.is_null()) return Status::OK();
  int64_t v = 0;
  if (!model::GetInt64(e, &v)) {
    return ConfigError(key, "expected an integer, got " + model::Excerpt(e));
  }
  if (v < min) {
    return ConfigError(
        key, "must be at least " + std::to_string(min) + ", got " + std::to_string(v));
  }
  *out = v;
  return Status::OK();
}

Status GetProperties(dom::object obj, std::map<std::string, std::string>* out) {
  dom::element e;
  if (obj["properties"].get(e) != simdjson::SUCCESS || e.is_null()) return Status::OK();
  dom::object props;
  if (e.get_object().get(props) != simdjson::SUCCESS) {
    return ConfigError("properties", "expected an object of librdkafka properties");
  }
  for (dom::key_value_pair kv : props) {
    std::string name(kv.key);
    switch (kv.value.type()) {
      case dom::element_type::STRING:
        (*out)[name] = std::string(kv.value.get_string().value_unsafe());
        break;
      case dom::element_type::BOOL:
        (*out)[name] = kv.value.get_bool().value_unsafe() ? "true" : "false";
        break;
      case dom::element_type::INT64:
        (*out)[name] = std::to_string(kv.value.get_int64().value_unsafe());
        break;
      case dom::element_type::UINT64:
        (*out)[name] = std::to_string(kv.value.get_uint64().value_unsafe());
        break;
      default:
        // The value may be a secret: name the property, never echo the value.
        return ConfigError("properties." + name, "expected a string, number or boolean");
    }
  }
  return Status::OK();
}

Result<dom::object> RootObject(std::string_view json, dom::element* root) {
  Status st = model::ParseDocument(json, root);
  if (!st.ok()) return st.WithPrefix("config JSON: ");
  dom::object obj;
  if (root->get_object().get(obj) != simdjson::SUCCESS) {
    return ConfigError("", "expected a JSON object");
  }
  return obj;
}

}  // namespace

Result<PollCall> ParseConsumerConfigJson(std::string_view json) {
  dom::element root;
  KELT_ASSIGN_OR_RAISE(dom::object obj, RootObject(json, &root));
  PollCall call;
  ConsumerOptions& c = call.consumer;
  KELT_RETURN_NOT_OK(GetString(obj, "brokers", &c.brokers));
  KELT_RETURN_NOT_OK(GetString(obj, "group_id", &c.group_id));
  std::string topic;
  KELT_RETURN_NOT_OK(GetString(obj, "topic", &topic));
  dom::element topics;
  if (obj["topics"].get(topics) == simdjson::SUCCESS && !topics.is_null()) {
    dom::array arr;
    if (topics.get_array().get(arr) != simdjson::SUCCESS) {
      return ConfigError("topics", "expected a list of topic names");
    }
    for (dom::element t : arr) {
      std::string_view name;
      if (t.get_string().get(name) != simdjson::SUCCESS) {
        return ConfigError("topics", "expected a list of topic names");
      }
      c.topics.emplace_back(name);
    }
  }
  if (c.topics.empty() || !topic.empty()) c.topics.insert(c.topics.begin(), topic);
  std::string reset;
  KELT_RETURN_NOT_OK(GetString(obj, "auto_offset_reset", &reset));
  if (!reset.empty()) {
    auto parsed = ParseAutoOffsetReset(reset);
    if (!parsed.ok())
      return ConfigError("auto_offset_reset", "expected earliest, latest or error");
    c.auto_offset_reset = *parsed;
  }
  std::string protocol;
  KELT_RETURN_NOT_OK(GetString(obj, "group_protocol", &protocol));
  if (!protocol.empty()) {
    auto parsed = ParseGroupProtocol(protocol);
    if (!parsed.ok())
      return ConfigError("group_protocol", "expected classic or consumer");
    c.group_protocol = *parsed;
  }
  KELT_RETURN_NOT_OK(GetString(obj, "instance_id", &c.instance_id));
  std::optional<int64_t> v;
  KELT_RETURN_NOT_OK(GetInt(obj, "session_timeout_ms", 1, &v));
  if (v) c.session_timeout_ms = static_cast<int>(*v);
  v.reset();
  KELT_RETURN_NOT_OK(GetInt(obj, "max_records", 1, &v));
  call.window.max_records = v.value_or(500);
  v.reset();
  KELT_RETURN_NOT_OK(GetInt(obj, "max_wait_ms", 0, &v));
  call.window.max_wait = std::chrono::milliseconds(v.value_or(15000));
  v.reset();
  KELT_RETURN_NOT_OK(GetInt(obj, "max_bytes", 1, &v));
  if (v) call.window.max_bytes = *v;
  dom::element commit;
  if (obj["commit"].get(commit) == simdjson::SUCCESS && !commit.is_null()) {
    if (commit.get_bool().get(call.commit) != simdjson::SUCCESS) {
      return ConfigError("commit", "expected true or false");
    }
  }
  KELT_RETURN_NOT_OK(GetProperties(obj, &c.properties));
  return call;
}

Result<ProducerOptions> ParseProducerConfigJson(std::string_view json) {
  dom::element root;
  KELT_ASSIGN_OR_RAISE(dom::object obj, RootObject(json, &root));
  ProducerOptions p;
  KELT_RETURN_NOT_OK(GetString(obj, "brokers", &p.brokers));
  KELT_RETURN_NOT_OK(GetString(obj, "topic", &p.topic));
  std::optional<int64_t> timeout;
  KELT_RETURN_NOT_OK(GetInt(obj, "message_timeout_ms", 1, &timeout));
  p.message_timeout_ms = static_cast<int>(timeout.value_or(5000));
  std::string column;
  KELT_RETURN_NOT_OK(GetString(obj, "key_column", &column));
  if (!column.empty()) p.key_column = column;
  column.clear();
  KELT_RETURN_NOT_OK(GetString(obj, "value_column", &column));
  if (!column.empty()) p.value_column = column;
  dom::element headers;
  if (obj["headers"].get(headers) == simdjson::SUCCESS && !headers.is_null()) {
    dom::array arr;
    if (headers.get_array().get(arr) != simdjson::SUCCESS) {
      return ConfigError("headers", "expected a list of [name, value] pairs");
    }
    size_t i = 0;
    for (dom::element pair : arr) {
      dom::array nv;
      std::string_view name, value;
      if (pair.get_array().get(nv) != simdjson::SUCCESS || nv.size() != 2 ||
          nv.at(0).get_string().get(name) != simdjson::SUCCESS ||
          nv.at(1).get_string().get(value) != simdjson::SUCCESS) {
        return ConfigError("headers[" + std::to_string(i) + "]",
                           "expected [name, value] with two strings");
      }
      p.headers.emplace_back(std::string(name), std::string(value));
      ++i;
    }
  }
  KELT_RETURN_NOT_OK(GetProperties(obj, &p.properties));
  return p;
}

Status PollKafkaWindowThen(const PollCall& call,
                           const std::function<Status(const Window&)>& use) {
  KELT_ASSIGN_OR_RAISE(std::unique_ptr<Consumer> consumer, Consumer::Make(call.consumer));
  KELT_ASSIGN_OR_RAISE(Window w, consumer->Poll(call.window));
  KELT_RETURN_NOT_OK(use(w));
  if (call.commit) KELT_RETURN_NOT_OK(consumer->Commit(w));
  return consumer->Close();
}

Result<std::vector<StreamRecord>> PollKafkaWindow(const PollCall& call) {
  std::vector<StreamRecord> records;
  KELT_RETURN_NOT_OK(PollKafkaWindowThen(call, [&](const Window& w) {
    records = w.ToRecords();
    return Status::OK();
  }));
  return records;
}

}  // namespace kelt::rdp
