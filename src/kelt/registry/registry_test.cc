// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// What the client sends and how it reads answers and failures, against a local HTTP
// server that answers as the registry's API does. The client against a real registry
// (Apicurio) is tested in tests/registry.
#include <civetweb.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kelt/registry.h"
#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

// A local server: each path answers a fixed status and body; requests are recorded.
class FakeRegistry {
 public:
  FakeRegistry() {
    const char* options[] = {"listening_ports", "127.0.0.1:0", "num_threads", "2",
                             nullptr};
    ctx_ = mg_start(nullptr, nullptr, options);
    mg_set_request_handler(ctx_, "/", &FakeRegistry::Handle, this);
    mg_server_port ports[1];
    EXPECT_EQ(mg_get_server_ports(ctx_, 1, ports), 1);
    port_ = ports[0].port;
  }
  ~FakeRegistry() { mg_stop(ctx_); }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void Answer(const std::string& path, int status, std::string body) {
    std::lock_guard<std::mutex> g(mu_);
    answers_[path] = {status, std::move(body)};
  }
  struct Seen {
    std::string method, path, authorization, body;
  };
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> g(mu_);
    return seen_;
  }

 private:
  static int Handle(mg_connection* conn, void* self_ptr) {
    auto* self = static_cast<FakeRegistry*>(self_ptr);
    const mg_request_info* info = mg_get_request_info(conn);
    Seen s;
    s.method = info->request_method;
    s.path = info->local_uri;
    const char* auth = mg_get_header(conn, "Authorization");
    s.authorization = auth != nullptr ? auth : "";
    char buf[4096];
    int n;
    while ((n = mg_read(conn, buf, sizeof(buf))) > 0) s.body.append(buf, n);
    std::pair<int, std::string> answer{404, R"({"error_code":40401,"message":"nope"})"};
    {
      std::lock_guard<std::mutex> g(self->mu_);
      self->seen_.push_back(s);
      auto it = self->answers_.find(s.path);
      if (it != self->answers_.end()) answer = it->second;
    }
    mg_printf(conn,
              "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
              "\r\n%s",
              answer.first, answer.second.size(), answer.second.c_str());
    return answer.first;
  }

  mg_context* ctx_ = nullptr;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::pair<int, std::string>> answers_;
  std::vector<Seen> seen_;
};

RegistryOptions At(const std::string& url) {
  RegistryOptions o;
  o.url = url;
  o.retries = 1;
  o.retry_backoff = std::chrono::milliseconds(10);
  o.timeout = std::chrono::milliseconds(3000);
  return o;
}

TEST(SchemaRegistryClient, ReadsSchemasByIdOnceAndBySubject) {
  FakeRegistry server;
  server.Answer("/schemas/ids/7", 200,
                R"({"schema":"syntax = \"proto3\"; message M { int32 a = 1; }",
                    "schemaType":"PROTOBUF",
                    "references":[{"name":"dep.proto","subject":"dep","version":2}]})");
  server.Answer("/subjects/orders-value/versions/latest", 200,
                R"({"subject":"orders-value","version":3,"id":9,
                    "schema":"{\"type\":\"record\",\"name\":\"R\",\"fields\":[]}"})");
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Make(At(server.url())));
  for (int i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto s, reg->ById(7));
    EXPECT_EQ(s->id, 7);
    EXPECT_EQ(s->format, SchemaFormat::kProtobuf);
    ASSERT_EQ(s->references.size(), 1u);
    EXPECT_EQ(s->references[0].subject, "dep");
    EXPECT_EQ(s->references[0].version, 2);
  }
  ASSERT_OK_AND_ASSIGN(auto latest, reg->Latest("orders-value"));
  EXPECT_EQ(latest->id, 9);
  EXPECT_EQ(latest->version, 3);
  EXPECT_EQ(latest->format, SchemaFormat::kAvro);  // no schemaType: Avro
  auto seen = server.seen();
  ASSERT_EQ(seen.size(), 2u) << "a schema id is asked for once";
  EXPECT_EQ(seen[0].path, "/schemas/ids/7");
}

TEST(SchemaRegistryClient, ResolvesReferencesDepthFirstEachNameOnce) {
  FakeRegistry server;
  // a.proto imports b.proto and c.proto; b.proto imports c.proto too.
  server.Answer("/subjects/b/versions/1", 200,
                R"({"subject":"b","version":1,"id":2,"schemaType":"PROTOBUF","schema":"B",
                    "references":[{"name":"c.proto","subject":"c","version":4}]})");
  server.Answer(
      "/subjects/c/versions/4", 200,
      R"({"subject":"c","version":4,"id":3,"schemaType":"PROTOBUF","schema":"C"})");
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Make(At(server.url())));
  ASSERT_OK_AND_ASSIGN(
      auto got, reg->ResolveReferences({{"b.proto", "b", 1}, {"c.proto", "c", 4}}));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].name, "b.proto");
  EXPECT_EQ(got[0].text, "B");
  EXPECT_EQ(got[1].name, "c.proto");
  EXPECT_EQ(got[1].text, "C");

  auto missing = reg->ResolveReferences({{"d.proto", "d", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("reference 'd.proto' (subject d version 1)"),
            std::string::npos)
      << missing.status().ToString();

  // A file that imports itself by its own name is fetched once.
  server.Answer("/subjects/e/versions/1", 200,
                R"({"subject":"e","version":1,"id":5,"schemaType":"PROTOBUF","schema":"E",
                    "references":[{"name":"e.proto","subject":"e","version":1}]})");
  ASSERT_OK_AND_ASSIGN(auto once, reg->ResolveReferences({{"e.proto", "e", 1}}));
  EXPECT_EQ(once.size(), 1u);

  // A chain of 40 distinct imports stops at the depth limit.
  for (int i = 0; i < 40; ++i) {
    const std::string next = std::to_string(i + 1);
    server.Answer("/subjects/s" + std::to_string(i) + "/versions/1", 200,
                  R"({"version":1,"id":9,"schemaType":"PROTOBUF","schema":"S",)"
                  R"("references":[{"name":"n)" +
                      next + R"(","subject":"s)" + next + R"(","version":1}]})");
  }
  auto deep = reg->ResolveReferences({{"n0", "s0", 1}});
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nest too deep"), std::string::npos);
}

TEST(SchemaRegistryClient, SendsCredentialsAndNeverShowsThem) {
  FakeRegistry server;
  server.Answer("/schemas/ids/1", 401, R"({"error_code":401,"message":"Unauthorized"})");
  RegistryOptions o = At(server.url());
  // Credentials in the URL move to basic auth; the URL shown has none.
  o.url = "http://api-key:s3cr3t-pass@" + server.url().substr(7);
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Make(o));
  EXPECT_EQ(reg->display_url(), server.url());
  auto r = reg->ById(1);
  ASSERT_STATUS(r, StatusCode::kInvalid, "refused the credentials (HTTP 401)");
  EXPECT_EQ(r.status().message().find("s3cr3t"), std::string::npos);
  ASSERT_FALSE(server.seen().empty());
  EXPECT_EQ(server.seen()[0].authorization, "Basic YXBpLWtleTpzM2NyM3QtcGFzcw==");

  RegistryOptions bearer = At(server.url());
  bearer.bearer_token = "tok-123";
  ASSERT_OK_AND_ASSIGN(auto reg2, SchemaRegistry::Make(bearer));
  ASSERT_NOT_OK(reg2->ById(1));
  EXPECT_EQ(server.seen().back().authorization, "Bearer tok-123");

  bearer.username = "u";
  ASSERT_STATUS(SchemaRegistry::Make(bearer), StatusCode::kInvalid, "not both");
}

TEST(SchemaRegistryClient, UnknownIdsAndRefusalsUseTheRegistrysWords) {
  FakeRegistry server;
  server.Answer("/schemas/ids/42", 404,
                R"({"error_code":40403,"message":"Schema 42 not found"})");
  // (civetweb 1.15 hands handlers the decoded path: a%2Fb arrives as a/b)
  server.Answer(
      "/subjects/a/b/versions", 409,
      R"({"error_code":409,"message":"Schema being registered is incompatible"})");
  server.Answer("/compatibility/subjects/new/versions/latest", 404,
                R"({"error_code":40401,"message":"Subject 'new' not found."})");
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Make(At(server.url())));
  ASSERT_STATUS(reg->ById(42), StatusCode::kNotFound,
                "schema id 42 is not in the schema registry at " + server.url() +
                    ": Schema 42 not found (error 40403)");
  ASSERT_STATUS(reg->Register("a/b", SchemaFormat::kJson, "{\"type\":\"object\"}"),
                StatusCode::kInvalid,
                "refused it: Schema being registered is incompatible");
  const auto posted = server.seen().back();
  EXPECT_EQ(posted.method, "POST");
  EXPECT_EQ(posted.body, R"({"schema":"{\"type\":\"object\"}","schemaType":"JSON"})");
  ASSERT_OK_AND_ASSIGN(bool ok, reg->IsCompatible("new", SchemaFormat::kAvro, "\"int\""));
  EXPECT_TRUE(ok);  // nothing registered yet: anything may come first
}

TEST(SchemaRegistryClient, ARegistryThatIsDownIsNamedAfterTheRetries) {
  // A port nothing listens on: connection refused at once.
  int port;
  {
    FakeRegistry gone;
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  RegistryOptions o = At("http://user:pw@127.0.0.1:" + std::to_string(port));
  o.retries = 2;
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Make(o));
  auto r = reg->ById(1);
  ASSERT_STATUS(
      r, StatusCode::kUnavailable,
      "schema registry at http://127.0.0.1:" + std::to_string(port) + " did not answer");
  EXPECT_NE(r.status().message().find("(after 3 attempts)"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find("pw@"), std::string::npos);
}

TEST(SchemaRegistryClient, ServerErrorsAreTriedAgain) {
  FakeRegistry server;
  server.Answer("/schemas/ids/5", 503, R"({"error_code":50301,"message":"busy"})");
  RegistryOptions o = At(server.url());
  o.retries = 2;
  ASSERT_OK_AND_ASSIGN(auto reg, SchemaRegistry::Make(o));
  ASSERT_STATUS(reg->ById(5), StatusCode::kUnavailable,
                "answered HTTP 503 after 3 attempt(s)");
  EXPECT_EQ(server.seen().size(), 3u);
  // Not cached: once it answers, the id is read.
  server.Answer("/schemas/ids/5", 200, R"({"schema":"\"string\""})");
  ASSERT_OK_AND_ASSIGN(auto s, reg->ById(5));
  EXPECT_EQ(s->text, "\"string\"");
}

TEST(SchemaRegistryClient, OptionsAreChecked) {
  ASSERT_STATUS(SchemaRegistry::Make(At("")), StatusCode::kInvalid, "the url is empty");
  ASSERT_STATUS(SchemaRegistry::Make(At("ftp://u:secret@h")), StatusCode::kInvalid,
                "must start with http:// or https:// (ftp://h)");
}

}  // namespace
}  // namespace kelt
