// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The registry client: Confluent's REST API over HttpClient, answers read with
// simdjson, schemas by id and by (subject, version) cached for the client's life.
#include <simdjson.h>
#include <algorithm>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "kelt/common/text.h"
#include "kelt/registry.h"
#include "kelt/registry/http.h"

namespace kelt {

std::string_view SchemaFormatName(SchemaFormat format) {
  switch (format) {
    case SchemaFormat::kAvro:
      return "AVRO";
    case SchemaFormat::kProtobuf:
      return "PROTOBUF";
    case SchemaFormat::kJson:
      return "JSON";
  }
  return "AVRO";
}

std::optional<SchemaFormat> ParseSchemaFormat(std::string_view name) {
  for (SchemaFormat f :
       {SchemaFormat::kAvro, SchemaFormat::kProtobuf, SchemaFormat::kJson}) {
    const std::string_view n = SchemaFormatName(f);
    if (name.size() != n.size()) continue;
    bool same = true;
    for (size_t i = 0; i < n.size() && same; ++i) {
      same = (name[i] & ~0x20) == n[i];
    }
    if (same) return f;
  }
  return std::nullopt;
}

namespace {

using registry::HttpResponse;

// The registry's error answer, {"error_code": 40403, "message": "..."}, as text.
std::string ErrorText(const HttpResponse& r) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view message;
  if (parser.parse(r.body).get(doc) == simdjson::SUCCESS &&
      doc["message"].get(message) == simdjson::SUCCESS) {
    int64_t code = 0;
    std::string out(message);
    if (doc["error_code"].get(code) == simdjson::SUCCESS) {
      out += " (error " + std::to_string(code) + ")";
    }
    return out;
  }
  return "HTTP " + std::to_string(r.status);
}

int64_t ErrorCode(const HttpResponse& r) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  int64_t code = 0;
  if (parser.parse(r.body).get(doc) == simdjson::SUCCESS &&
      doc["error_code"].get(code) == simdjson::SUCCESS) {
    return code;
  }
  return 0;
}

Status ReadReferences(simdjson::dom::element doc, std::vector<SchemaReference>* out) {
  simdjson::dom::array refs;
  if (doc["references"].get(refs) != simdjson::SUCCESS) return Status::OK();
  for (simdjson::dom::element e : refs) {
    SchemaReference ref;
    std::string_view name, subject;
    int64_t version = -1;
    if (e["name"].get(name) != simdjson::SUCCESS ||
        e["subject"].get(subject) != simdjson::SUCCESS ||
        e["version"].get(version) != simdjson::SUCCESS) {
      return Status::Invalid("a reference lacks its name, subject or version");
    }
    ref.name = std::string(name);
    ref.subject = std::string(subject);
    ref.version = static_cast<int32_t>(version);
    out->push_back(std::move(ref));
  }
  return Status::OK();
}

// A schema answer: /schemas/ids/{id} (id known to the caller) or
// /subjects/{s}/versions/{v} (which carries subject, version and id).
Result<RegisteredSchema> ReadSchema(const std::string& body, const std::string& where) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(body).get(doc); err) {
    return Status::Invalid(where +
                           ": the answer is not JSON: " + simdjson::error_message(err));
  }
  RegisteredSchema s;
  std::string_view text;
  if (doc["schema"].get(text) != simdjson::SUCCESS) {
    return Status::Invalid(where + ": the answer has no \"schema\" string");
  }
  s.text = std::string(text);
  std::string_view type;
  if (doc["schemaType"].get(type) == simdjson::SUCCESS) {
    auto f = ParseSchemaFormat(type);
    if (!f) {
      return Status::NotImplemented(where + ": schema type '" + std::string(type) +
                                    "' (kelt reads AVRO, PROTOBUF and JSON)");
    }
    s.format = *f;
  }
  int64_t n = 0;
  if (doc["id"].get(n) == simdjson::SUCCESS) s.id = static_cast<int32_t>(n);
  if (doc["version"].get(n) == simdjson::SUCCESS) s.version = static_cast<int32_t>(n);
  std::string_view subject;
  if (doc["subject"].get(subject) == simdjson::SUCCESS) s.subject = std::string(subject);
  if (Status st = ReadReferences(doc, &s.references); !st.ok()) {
    return st.WithPrefix(where + ": ");
  }
  return s;
}

std::string RequestBody(SchemaFormat format, const std::string& text,
                        const std::vector<SchemaReference>& references) {
  std::string body = "{\"schema\":";
  text::AppendJsonString(&body, text);
  if (format != SchemaFormat::kAvro) {
    body += ",\"schemaType\":";
    text::AppendJsonString(&body, SchemaFormatName(format));
  }
  if (!references.empty()) {
    body += ",\"references\":[";
    for (size_t i = 0; i < references.size(); ++i) {
      const SchemaReference& r = references[i];
      body += i == 0 ? "{\"name\":" : ",{\"name\":";
      text::AppendJsonString(&body, r.name);
      body += ",\"subject\":";
      text::AppendJsonString(&body, r.subject);
      body += ",\"version\":" + std::to_string(r.version) + "}";
    }
    body += "]";
  }
  body += "}";
  return body;
}

}  // namespace

class SchemaRegistry::Impl {
 public:
  explicit Impl(const RegistryOptions& o) : http_(o) {}

  Result<std::shared_ptr<const RegisteredSchema>> ById(int32_t id) {
    const std::string key = "id:" + std::to_string(id);
    return Cached(key, [&]() -> Result<RegisteredSchema> {
      const std::string path = "/schemas/ids/" + std::to_string(id);
      KELT_ASSIGN_OR_RAISE(HttpResponse r, http_.Request(path, nullptr));
      if (r.status == 404) {
        return Status::NotFound("schema id " + std::to_string(id) +
                                " is not in the schema registry at " +
                                http_.display_url() + ": " + ErrorText(r));
      }
      KELT_RETURN_NOT_OK(Check(r, "schema id " + std::to_string(id)));
      KELT_ASSIGN_OR_RAISE(RegisteredSchema s,
                           ReadSchema(r.body, "schema id " + std::to_string(id)));
      s.id = id;
      return s;
    });
  }

  Result<std::shared_ptr<const RegisteredSchema>> Version(const std::string& subject,
                                                          const std::string& version) {
    auto fetch = [&]() -> Result<RegisteredSchema> {
      const std::string where = "subject '" + subject + "' version " + version;
      const std::string path =
          "/subjects/" + http_.Escape(subject) + "/versions/" + version;
      KELT_ASSIGN_OR_RAISE(HttpResponse r, http_.Request(path, nullptr));
      if (r.status == 404) {
        return Status::NotFound(where + " is not in the schema registry at " +
                                http_.display_url() + ": " + ErrorText(r));
      }
      KELT_RETURN_NOT_OK(Check(r, where));
      KELT_ASSIGN_OR_RAISE(RegisteredSchema s, ReadSchema(r.body, where));
      if (s.subject.empty()) s.subject = subject;
      return s;
    };
    if (version == "latest") {
      KELT_ASSIGN_OR_RAISE(RegisteredSchema s, fetch());
      return std::make_shared<const RegisteredSchema>(std::move(s));
    }
    return Cached("subject:" + subject + "\n" + version, fetch);
  }

  Result<int32_t> Register(const std::string& subject, SchemaFormat format,
                           const std::string& text,
                           const std::vector<SchemaReference>& references) {
    const std::string body = RequestBody(format, text, references);
    const std::string where = "registering a schema under subject '" + subject + "'";
    KELT_ASSIGN_OR_RAISE(
        HttpResponse r,
        http_.Request("/subjects/" + http_.Escape(subject) + "/versions", &body));
    if (r.status == 409 || r.status == 422) {
      return Status::Invalid(where + ": the schema registry at " + http_.display_url() +
                             " refused it: " + ErrorText(r));
    }
    KELT_RETURN_NOT_OK(Check(r, where));
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    int64_t id = 0;
    if (parser.parse(r.body).get(doc) != simdjson::SUCCESS ||
        doc["id"].get(id) != simdjson::SUCCESS) {
      return Status::Invalid(where + ": the answer has no schema id");
    }
    return static_cast<int32_t>(id);
  }

  Result<bool> IsCompatible(const std::string& subject, SchemaFormat format,
                            const std::string& text,
                            const std::vector<SchemaReference>& references) {
    const std::string body = RequestBody(format, text, references);
    const std::string where = "checking a schema against subject '" + subject + "'";
    KELT_ASSIGN_OR_RAISE(
        HttpResponse r, http_.Request("/compatibility/subjects/" + http_.Escape(subject) +
                                          "/versions/latest",
                                      &body));
    // 40401 subject not found, 40402 version not found: nothing to be compatible with.
    if (r.status == 404) {
      const int64_t code = ErrorCode(r);
      if (code == 40401 || code == 40402) return true;
    }
    if (r.status == 422) {
      return Status::Invalid(where + ": the schema registry at " + http_.display_url() +
                             " cannot read it: " + ErrorText(r));
    }
    KELT_RETURN_NOT_OK(Check(r, where));
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    bool ok = false;
    if (parser.parse(r.body).get(doc) != simdjson::SUCCESS ||
        doc["is_compatible"].get(ok) != simdjson::SUCCESS) {
      return Status::Invalid(where + ": the answer has no is_compatible");
    }
    return ok;
  }

  const std::string& display_url() const { return http_.display_url(); }

 private:
  Status Check(const HttpResponse& r, const std::string& where) const {
    if (r.status == 200) return Status::OK();
    if (r.status == 401 || r.status == 403) {
      return Status::Invalid(where + ": the schema registry at " + http_.display_url() +
                             " refused the credentials (HTTP " +
                             std::to_string(r.status) + ")");
    }
    return Status::IOError(where + ": the schema registry at " + http_.display_url() +
                           " answered " + ErrorText(r));
  }

  // The cached entry of `key`, fetched once: concurrent callers of one key wait for the
  // first; a failed fetch is not cached (the next call asks again).
  template <typename Fetch>
  Result<std::shared_ptr<const RegisteredSchema>> Cached(const std::string& key,
                                                         Fetch&& fetch) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return fetching_.count(key) == 0; });
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    fetching_.insert(key);
    lock.unlock();
    Result<RegisteredSchema> got = [&]() -> Result<RegisteredSchema> {
      std::lock_guard<std::mutex> g(http_mu_);
      return fetch();
    }();
    lock.lock();
    fetching_.erase(key);
    cv_.notify_all();
    if (!got.ok()) return got.status();
    auto s = std::make_shared<const RegisteredSchema>(std::move(*got));
    cache_.emplace(key, s);
    return s;
  }

  std::mutex http_mu_;  // one request at a time on the one libcurl handle
  registry::HttpClient http_;
  std::mutex mu_;  // cache_ and fetching_
  std::condition_variable cv_;
  std::map<std::string, std::shared_ptr<const RegisteredSchema>> cache_;
  std::set<std::string> fetching_;

  friend class SchemaRegistry;
};

Result<std::unique_ptr<SchemaRegistry>> SchemaRegistry::Make(RegistryOptions options) {
  if (options.url.empty()) return Status::Invalid("schema registry: the url is empty");
  if (options.url.rfind("http://", 0) != 0 && options.url.rfind("https://", 0) != 0) {
    std::string u, p;
    return Status::Invalid(
        "schema registry: the url must start with http:// or https:// (" +
        registry::StripCredentials(options.url, &u, &p) + ")");
  }
  if (!options.bearer_token.empty() &&
      (!options.username.empty() || !options.password.empty())) {
    return Status::Invalid(
        "schema registry: give a bearer token or a username and password, not both");
  }
  if (options.retries < 0) return Status::Invalid("schema registry: retries < 0");
  return std::unique_ptr<SchemaRegistry>(
      new SchemaRegistry(std::make_unique<Impl>(options)));
}

SchemaRegistry::SchemaRegistry(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SchemaRegistry::~SchemaRegistry() = default;

Result<std::shared_ptr<const RegisteredSchema>> SchemaRegistry::ById(int32_t id) {
  return impl_->ById(id);
}
Result<std::shared_ptr<const RegisteredSchema>> SchemaRegistry::Latest(
    const std::string& subject) {
  std::lock_guard<std::mutex> g(impl_->http_mu_);
  return impl_->Version(subject, "latest");
}
Result<std::shared_ptr<const RegisteredSchema>> SchemaRegistry::Version(
    const std::string& subject, int32_t version) {
  return impl_->Version(subject, std::to_string(version));
}
namespace {

Status AddReferenced(SchemaRegistry& registry, const std::vector<SchemaReference>& refs,
                     int depth, std::vector<ReferencedSchema>& out) {
  for (const SchemaReference& ref : refs) {
    auto known = [&](const ReferencedSchema& r) { return r.name == ref.name; };
    if (std::any_of(out.begin(), out.end(), known)) continue;
    if (depth > 32) return Status::Invalid("schema references nest too deep");
    auto found = registry.Version(ref.subject, ref.version);
    if (!found.ok()) {
      return found.status().WithPrefix("reference '" + ref.name + "' (subject " +
                                       ref.subject + " version " +
                                       std::to_string(ref.version) + "): ");
    }
    out.push_back({ref.name, (*found)->text});
    KELT_RETURN_NOT_OK(AddReferenced(registry, (*found)->references, depth + 1, out));
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<ReferencedSchema>> SchemaRegistry::ResolveReferences(
    const std::vector<SchemaReference>& references) {
  std::vector<ReferencedSchema> out;
  KELT_RETURN_NOT_OK(AddReferenced(*this, references, 0, out));
  return out;
}

Result<int32_t> SchemaRegistry::Register(const std::string& subject, SchemaFormat format,
                                         const std::string& text,
                                         const std::vector<SchemaReference>& references) {
  std::lock_guard<std::mutex> g(impl_->http_mu_);
  return impl_->Register(subject, format, text, references);
}
Result<bool> SchemaRegistry::IsCompatible(
    const std::string& subject, SchemaFormat format, const std::string& text,
    const std::vector<SchemaReference>& references) {
  std::lock_guard<std::mutex> g(impl_->http_mu_);
  return impl_->IsCompatible(subject, format, text, references);
}
const std::string& SchemaRegistry::display_url() const { return impl_->display_url(); }

}  // namespace kelt
