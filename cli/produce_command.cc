// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// `kelt produce`: NDJSON lines or CSV rows to a topic. A CSV's header names the fields;
// each row becomes a JSON object whose numbers are JSON numbers (a cell that is a valid
// JSON number), empty cells null, everything else a string. With --value-format avro or
// protobuf those JSON objects are read by Arrow's JSON reader as rows of the subject's
// schema (or, with --auto-register, of the types Arrow infers) and sent as Avro or
// Protobuf records in the Confluent wire format; with json-schema they are read with the
// types Arrow infers and written back as JSON behind the wire-format header, each value
// checked against the subject's schema.
#include <arrow/api.h>
#include <arrow/io/memory.h>
#include <arrow/json/reader.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>

#include "commands.h"
#include "kelt/common/arrow_status.h"
#include "kelt/kafka.h"
#include "kelt/serde.h"
#include "terminal.h"

namespace kelt::cli {
namespace {

constexpr size_t kBatch = 20000;  // messages per Send: memory stays bounded

// A JSON number exactly as RFC 8259 spells it: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
bool IsJsonNumber(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i > start;
  };
  if (i < s.size() && s[i] == '-') ++i;
  if (i >= s.size()) return false;
  if (s[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == s.size();
}

// RFC 4180 records: quoted cells may hold commas, doubled quotes and newlines.
Result<std::vector<std::vector<std::string>>> ParseCsv(const std::string& text,
                                                       const std::string& file) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, in_quotes = false, any = false;
  int64_t line = 1;
  size_t i = 0;
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;  // a UTF-8 BOM
  auto end_cell = [&] {
    row.push_back(std::move(cell));
    cell.clear();
    quoted = false;
  };
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          in_quotes = false;
        }
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (c == '"' && cell.empty() && !quoted) {
      in_quotes = quoted = any = true;
    } else if (c == ',') {
      end_cell();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !cell.empty()) {
        end_cell();
        rows.push_back(std::move(row));
        row.clear();
      }
      any = false;
      ++line;
    } else {
      if (quoted) {
        return Status::ParseError(file + ": line " + std::to_string(line) +
                                  ": text after a closing quote");
      }
      cell += c;
      any = true;
    }
  }
  if (in_quotes) {
    return Status::ParseError(file + ": line " + std::to_string(line) +
                              ": a quoted cell is not closed");
  }
  if (any || !cell.empty()) {
    end_cell();
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string ExtensionOf(const std::string& path) {
  size_t dot = path.find_last_of('.');
  if (dot == std::string::npos) return "";
  std::string ext = path.substr(dot + 1);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

using Messages = std::vector<std::pair<std::optional<std::string>, std::string>>;

// What Arrow's JSON reader can fill for `type`: enums (dictionaries) are read as their
// symbols' text (the encoder takes strings for enums); maps and unions it cannot read.
// Every field is nullable: an absent or null value is the field's default, or fails its
// record in the encoder, naming the field and row (the reader would fail the chunk).
Result<std::shared_ptr<arrow::DataType>> JsonReadable(
    const std::shared_ptr<arrow::DataType>& type, const std::string& path) {
  switch (type->id()) {
    case arrow::Type::DICTIONARY:
      return static_cast<const arrow::DictionaryType&>(*type).value_type();
    case arrow::Type::LIST: {
      const auto& item = static_cast<const arrow::ListType&>(*type).value_field();
      KELT_ASSIGN_OR_RAISE(auto t, JsonReadable(item->type(), path + "[]"));
      return arrow::list(item->WithType(t)->WithNullable(true));
    }
    case arrow::Type::STRUCT: {
      arrow::FieldVector fields;
      for (const auto& f : type->fields()) {
        KELT_ASSIGN_OR_RAISE(auto t, JsonReadable(f->type(), path + "." + f->name()));
        fields.push_back(f->WithType(t)->WithNullable(true));
      }
      return arrow::struct_(fields);
    }
    case arrow::Type::MAP:
    case arrow::Type::DENSE_UNION:
    case arrow::Type::SPARSE_UNION:
      return Status::NotImplemented("field '" + path + "': its type (" +
                                    type->ToString() +
                                    ") cannot be read from JSON input yet");
    default:
      return type;
  }
}

// JSON objects → registry records: the objects become Arrow rows (Arrow's JSON reader),
// the rows Avro bodies behind the wire-format header.
class RegistryRecords {
 public:
  static Result<RegistryRecords> Make(const ProduceArgs& a) {
    KELT_ASSIGN_OR_RAISE(ValueFormat format,
                         ParseValueFormat(a.value_format, "--value-format"));
    if (a.subject.empty()) {
      return Status::Invalid("--value-format " + a.value_format + " needs --subject");
    }
    RegistryOptions registry;
    registry.url = a.registry_url;
    if (registry.url.empty()) {
      return Status::Invalid("--value-format " + a.value_format +
                             " needs --registry-url (or KELT_REGISTRY_URL)");
    }
    if (const char* v = std::getenv("KELT_REGISTRY_USERNAME")) registry.username = v;
    if (const char* v = std::getenv("KELT_REGISTRY_PASSWORD")) registry.password = v;
    if (const char* v = std::getenv("KELT_REGISTRY_BEARER_TOKEN")) {
      registry.bearer_token = v;
    }
    RegistryEncoderOptions options;
    options.subject = a.subject;
    options.format = format;
    options.auto_register = a.auto_register;
    options.message = a.message;
    if (!a.message.empty() && format != ValueFormat::kProtobuf) {
      return Status::Invalid(
          "--message names a Protobuf message: it needs "
          "--value-format protobuf");
    }
    RegistryRecords out;
    if (!a.auto_register && format != ValueFormat::kJsonSchema) {
      KELT_ASSIGN_OR_RAISE(WriterSchema writer,
                           LatestWriterSchema(registry, a.subject, format, a.message));
      arrow::FieldVector fields;
      for (const auto& f : writer.arrow_schema->fields()) {
        KELT_ASSIGN_OR_RAISE(auto t, JsonReadable(f->type(), f->name()));
        fields.push_back(f->WithType(t)->WithNullable(true));
      }
      out.read_schema_ = arrow::schema(fields);
    }
    KELT_ASSIGN_OR_RAISE(out.encoder_,
                         MakeRegistryEncoder(registry, options, out.read_schema_));
    return out;
  }

  // Replace each message's JSON object by its record; `where` names them in errors.
  Status Encode(Messages* messages, int64_t first_record) const {
    const std::string where =
        "records " + std::to_string(first_record) + "-" +
        std::to_string(first_record + static_cast<int64_t>(messages->size()) - 1) +
        " (row 0 is record " + std::to_string(first_record) + ")";
    std::string text;
    for (const auto& m : *messages) {
      text += m.second;
      text += '\n';
    }
    auto buffer = arrow::Buffer::FromString(std::move(text));
    auto input = std::make_shared<arrow::io::BufferReader>(buffer);
    auto read = arrow::json::ReadOptions::Defaults();
    read.use_threads = false;
    read.block_size = static_cast<int32_t>(
        std::min<int64_t>(std::max<int64_t>(buffer->size() + 1, 1 << 20), INT32_MAX));
    auto parse = arrow::json::ParseOptions::Defaults();
    if (read_schema_) {
      parse.explicit_schema = read_schema_;
      parse.unexpected_field_behavior = arrow::json::UnexpectedFieldBehavior::Error;
    }
    auto reader =
        arrow::json::TableReader::Make(arrow::default_memory_pool(), input, read, parse);
    if (!reader.ok()) return Status::Invalid(where + ": " + reader.status().message());
    auto table = (*reader)->Read();
    if (!table.ok()) {
      return Status::Invalid(
          where + ": " +
          UnknownKey(*messages, first_record).value_or(table.status().message()));
    }
    if ((*table)->num_rows() != static_cast<int64_t>(messages->size())) {
      return Status::Invalid(where + ": " + std::to_string((*table)->num_rows()) +
                             " rows read from " + std::to_string(messages->size()) +
                             " JSON objects");
    }
    KELT_ARROW_ASSIGN_OR_RAISE(auto batch, (*table)->CombineChunksToBatch());
    std::vector<std::string> payloads;
    Status st = encoder_->Encode(*batch, &payloads);
    if (!st.ok()) return Status(st.code(), where + ": " + st.message());
    for (size_t i = 0; i < payloads.size(); ++i) {
      (*messages)[i].second = std::move(payloads[i]);
    }
    return Status::OK();
  }

 private:
  // Arrow's reader says only "unexpected field": name the first top-level key the
  // schema lacks, and its record.
  std::optional<std::string> UnknownKey(const Messages& messages,
                                        int64_t first_record) const {
    if (!read_schema_) return std::nullopt;
    simdjson::dom::parser parser;
    for (size_t i = 0; i < messages.size(); ++i) {
      simdjson::dom::object obj;
      if (parser.parse(messages[i].second).get(obj) != simdjson::SUCCESS) continue;
      for (auto [key, value] : obj) {
        if (read_schema_->GetFieldIndex(std::string(key)) < 0) {
          return "record " + std::to_string(first_record + static_cast<int64_t>(i)) +
                 ": '" + std::string(key) + "' is not a field of the subject's schema";
        }
      }
    }
    return std::nullopt;
  }

  std::shared_ptr<arrow::Schema> read_schema_;  // null: inferred (auto-register)
  std::shared_ptr<const PayloadEncoder> encoder_;
};

}  // namespace

bool ParseProperties(const std::vector<std::string>& items,
                     std::map<std::string, std::string>* out, std::string* bad) {
  for (const auto& item : items) {
    size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      *bad = item.substr(0, item.find('='));
      return false;
    }
    (*out)[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return true;
}

Result<std::vector<std::string>> CsvToJsonLines(const std::string& text,
                                                const std::string& file) {
  KELT_ASSIGN_OR_RAISE(auto rows, ParseCsv(text, file));
  if (rows.empty()) return Status::Invalid(file + ": no header row");
  const auto& header = rows[0];
  std::vector<std::string> out;
  out.reserve(rows.size() - 1);
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    if (row.size() != header.size()) {
      return Status::Invalid(file + ": data row " + std::to_string(r) + " has " +
                             std::to_string(row.size()) + " cells, the header " +
                             std::to_string(header.size()));
    }
    std::string json = "{";
    for (size_t i = 0; i < header.size(); ++i) {
      if (i) json += ',';
      json += JsonString(header[i]);
      json += ':';
      const std::string& v = row[i];
      if (v.empty()) {
        json += "null";
      } else if (IsJsonNumber(v)) {
        json += v;
      } else {
        json += JsonString(v);
      }
    }
    json += '}';
    out.push_back(std::move(json));
  }
  return out;
}

int RunProduce(const ProduceArgs& a) {
  std::ifstream in(a.file, std::ios::binary);
  if (!in) return Fail(Status::IOError("cannot open '" + a.file + "'"), "produce");
  std::string format = a.format;
  if (format == "auto") format = ExtensionOf(a.file) == "csv" ? "csv" : "ndjson";

  ProducerOptions o;
  o.brokers = a.brokers;
  o.topic = a.topic;
  o.message_timeout_ms = 30000;
  std::string bad;
  if (!ParseProperties(a.properties, &o.properties, &bad)) {
    std::cerr << "kelt: produce: --property '" << bad << "': expected name=value\n";
    return 2;
  }
  std::optional<RegistryRecords> records;
  if (a.value_format != "json") {
    auto made = RegistryRecords::Make(a);
    if (!made.ok()) return Fail(made.status(), "produce");
    records = std::move(*made);
  } else if (!a.subject.empty() || a.auto_register) {
    std::cerr
        << "kelt: produce: --subject and --auto-register need --value-format avro\n";
    return 2;
  }
  auto producer = Producer::Make(o);
  if (!producer.ok()) return Fail(producer.status(), "produce");

  Messages batch;
  int64_t sent = 0;
  auto flush = [&]() -> Status {
    if (batch.empty()) return Status::OK();
    if (records) {
      KELT_RETURN_NOT_OK(records->Encode(&batch, sent + 1));
    }
    KELT_ASSIGN_OR_RAISE(int64_t n, (*producer)->SendRaw(batch));
    sent += n;
    batch.clear();
    return Status::OK();
  };
  auto limited = [&](int64_t n) { return a.limit > 0 && n >= a.limit; };

  if (format == "csv") {
    std::stringstream ss;
    ss << in.rdbuf();
    auto lines = CsvToJsonLines(ss.str(), a.file);
    if (!lines.ok()) return Fail(lines.status(), "produce");
    int64_t n = 0;
    for (auto& line : *lines) {
      if (limited(n)) break;
      std::optional<std::string> key = std::to_string(n + 1);
      if (!a.key_field.empty()) {
        // The key field's value from the JSON we built: "<name>":<value> — cheap and
        // exact because we wrote it.
        std::string needle = "\"" + a.key_field + "\":";
        size_t at = line.find(needle);
        if (at == std::string::npos) {
          std::cerr << "kelt: produce: --key-field '" << a.key_field
                    << "' is not a column of " << a.file << "\n";
          return 2;
        }
        size_t v = at + needle.size();
        size_t end =
            line[v] == '"' ? line.find('"', v + 1) + 1 : line.find_first_of(",}", v);
        key = line[v] == '"' ? line.substr(v + 1, end - v - 2) : line.substr(v, end - v);
      }
      batch.emplace_back(std::move(key), std::move(line));
      ++n;
      if (batch.size() >= kBatch) {
        if (auto st = flush(); !st.ok()) return Fail(st, a.file);
      }
    }
  } else if (format == "ndjson") {
    if (!a.key_field.empty()) {
      std::cerr << "kelt: produce: --key-field is for CSV input (NDJSON keys are line "
                   "numbers)\n";
      return 2;
    }
    std::string line;
    int64_t n = 0;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (line.empty()) continue;
      if (limited(n)) break;
      batch.emplace_back(std::to_string(line_no), line);
      ++n;
      if (batch.size() >= kBatch) {
        if (auto st = flush(); !st.ok()) return Fail(st, a.file);
      }
    }
  } else {
    std::cerr << "kelt: produce: --format must be auto, ndjson or csv\n";
    return 2;
  }
  if (auto st = flush(); !st.ok()) return Fail(st, a.file);
  if (auto st = (*producer)->Close(); !st.ok()) return Fail(st, "produce");
  if (!a.quiet) std::cout << "produced " << sent << " messages to " << a.topic << "\n";
  return 0;
}

}  // namespace kelt::cli
