// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/kafka/window.h"

#include <algorithm>
#include <string>

namespace kelt {

std::string_view WindowEndName(WindowEnd end) {
  switch (end) {
    case WindowEnd::kMaxRecords:
      return "max_records";
    case WindowEnd::kMaxBytes:
      return "max_bytes";
    case WindowEnd::kEndOfPartitions:
      return "end_of_partitions";
    case WindowEnd::kDeadline:
      return "deadline";
  }
  return "deadline";
}

void Window::Impl::Add(kafka::MessagePtr m, uint64_t generation) {
  // Batches come in runs of one partition: remember the last span (no string work).
  std::vector<PartitionSpan>::iterator it;
  if (m->rkt == last_rkt_ && m->partition == last_partition_) {
    it = spans.begin() + static_cast<std::ptrdiff_t>(last_span_);
  } else {
    TopicPartition tp{rd_kafka_topic_name(m->rkt), m->partition};
    it = std::find_if(spans.begin(), spans.end(),
                      [&](const PartitionSpan& s) { return s.tp == tp; });
    if (it == spans.end()) {
      spans.push_back(PartitionSpan{tp, m->offset, m->offset, 0});
      span_generations.push_back(generation);
      it = spans.end() - 1;
    }
    last_rkt_ = m->rkt;
    last_partition_ = m->partition;
    last_span_ = static_cast<size_t>(it - spans.begin());
  }
  it->first_offset = std::min(it->first_offset, m->offset);
  it->last_offset = std::max(it->last_offset, m->offset);
  ++it->count;
  bytes += static_cast<int64_t>(m->len + m->key_len);
  messages.push_back(std::move(m));
}

void Window::Impl::EnsureHeaders() {
  std::call_once(headers_once_, [this] {
    header_ranges_.reserve(messages.size());
    for (const auto& m : messages) {
      auto begin = static_cast<uint32_t>(headers_.size());
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m.get(), &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
          hdrs) {
        const char* name;
        const void* value;
        size_t size;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) ==
                           RD_KAFKA_RESP_ERR_NO_ERROR;
             ++i) {
          HeaderView h;
          h.name = name;
          if (value != nullptr)
            h.value = std::string_view(static_cast<const char*>(value), size);
          headers_.push_back(h);
        }
      }
      header_ranges_.emplace_back(begin, static_cast<uint32_t>(headers_.size()));
    }
  });
}

void Window::Impl::ReleaseMessages() {
  std::vector<kafka::MessagePtr>().swap(messages);
  std::vector<HeaderView>().swap(headers_);
  std::vector<std::pair<uint32_t, uint32_t>>().swap(header_ranges_);
}

Window::Window() : impl_(std::make_unique<Impl>()) {}
Window::~Window() = default;
Window::Window(Window&&) noexcept = default;
Window& Window::operator=(Window&&) noexcept = default;

size_t Window::size() const { return impl_->messages.size(); }
const std::vector<PartitionSpan>& Window::spans() const { return impl_->spans; }
WindowEnd Window::end_reason() const { return impl_->end; }
int64_t Window::bytes() const { return impl_->bytes; }
bool Window::caught_up() const { return impl_->caught_up; }
void Window::ReleaseRecords() { impl_->ReleaseMessages(); }

RecordView Window::record(size_t i, bool with_headers) const {
  const rd_kafka_message_t* m = impl_->messages[i].get();
  RecordView v;
  v.topic = rd_kafka_topic_name(m->rkt);
  v.partition = m->partition;
  v.offset = m->offset;
  rd_kafka_timestamp_type_t tstype = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  int64_t ts = rd_kafka_message_timestamp(m, &tstype);
  if (tstype != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE && ts >= 0) {
    v.timestamp_ms = ts;
    v.timestamp_type = tstype == RD_KAFKA_TIMESTAMP_CREATE_TIME
                           ? TimestampType::kCreateTime
                           : TimestampType::kLogAppendTime;
  }
  if (m->key != nullptr)
    v.key = std::string_view(static_cast<const char*>(m->key), m->key_len);
  if (m->payload != nullptr) {
    v.value = std::string_view(static_cast<const char*>(m->payload), m->len);
  }
  if (with_headers) {
    impl_->EnsureHeaders();
    v.headers = impl_->headers_of(i);
  }
  return v;
}

std::vector<StreamRecord> Window::ToRecords() const {
  std::vector<StreamRecord> out;
  out.reserve(size());
  for (size_t i = 0; i < size(); ++i) {
    RecordView v = record(i, true);
    StreamRecord r;
    r.topic = std::string(v.topic);
    r.partition = v.partition;
    r.offset = v.offset;
    r.timestamp_ms = v.timestamp_ms;
    r.timestamp_type = v.timestamp_type;
    if (v.key) r.key = std::string(*v.key);
    if (v.value) r.value = std::string(*v.value);
    for (const HeaderView& h : v.headers) {
      RecordHeader rh;
      rh.name = std::string(h.name);
      if (h.value) rh.value = std::string(*h.value);
      r.headers.push_back(std::move(rh));
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace kelt
