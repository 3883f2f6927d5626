// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
#include "kelt/config.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kelt/testing/assertions.h"

namespace kelt {
namespace {

namespace fs = std::filesystem;

const char* kGood = R"(# a full config
brokers: localhost:9092
group: demo
topics: [rides, "^rides-.*"]
auto_offset_reset: error
session_timeout_ms: 6000
properties:
  fetch.max.bytes: "1048576"
  sasl.password: hunter2
schema:
  fields:
    - {name: pickup_at, data_type: Timestamp}
    - {name: lat, data_type: Float64}
on_bad_record: skip
strict_payload: true
window:
  max_records: 5000
  max_bytes: 1000000
  max_wait_ms: 250
  stop_at_end: false
until_caught_up: yes
max_windows: 7
assignment_timeout_ms: 5000
metrics: {port: 9464, host: 0.0.0.0}
log: {format: json, level: debug}
progress: lines
progress_interval_ms: 500
sinks:
  - parquet:
      root: landing
      rotate_records: 1000
      rotate_age_ms: 5000
      compression: snappy
      dictionary: none
      partition_by: base
  - duckdb:
      path: /tmp/x.duckdb
      table: rides
  - postgres:
      conninfo: postgresql://u:pw@localhost/db
      table: public.rides
      replace_nul_in_text: true
)";

TEST(ConfigTest, ParsesEveryKey) {
  ASSERT_OK_AND_ASSIGN(auto c, ParseEltConfig(kGood, "/etc/kelt"));
  const auto& co = c.elt.consumer;
  EXPECT_EQ(co.brokers, "localhost:9092");
  EXPECT_EQ(co.group_id, "demo");
  EXPECT_EQ(co.topics, (std::vector<std::string>{"rides", "^rides-.*"}));
  EXPECT_EQ(co.auto_offset_reset, AutoOffsetReset::kError);
  EXPECT_EQ(co.session_timeout_ms, 6000);
  EXPECT_EQ(co.properties.at("fetch.max.bytes"), "1048576");
  EXPECT_EQ(co.properties.at("sasl.password"), "hunter2");
  ASSERT_EQ(c.elt.landing.fields.size(), 2u);
  EXPECT_EQ(c.elt.landing.fields[0].type, TypeId::kTimestamp);
  EXPECT_EQ(c.schema_origin, "inline");
  EXPECT_EQ(c.elt.load.on_bad_record, BadRecordPolicy::kSkip);
  EXPECT_TRUE(c.elt.load.strict_payload);
  EXPECT_EQ(c.elt.window.max_records, 5000);
  EXPECT_EQ(c.elt.window.max_bytes, 1000000);
  EXPECT_EQ(c.elt.window.max_wait.count(), 250);
  EXPECT_FALSE(c.elt.window.stop_at_end);
  EXPECT_TRUE(c.elt.until_caught_up);
  EXPECT_EQ(c.elt.max_windows, 7);
  EXPECT_EQ(c.elt.assignment_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(c.metrics_port, 9464);
  EXPECT_EQ(c.metrics_host, "0.0.0.0");
  EXPECT_EQ(c.log_format, LogFormat::kJson);
  EXPECT_EQ(c.log_level, LogLevel::kDebug);
  EXPECT_EQ(c.progress, ProgressMode::kLines);
  EXPECT_EQ(c.progress_interval_ms, 500);
  ASSERT_EQ(c.sinks.size(), 3u);
  EXPECT_EQ(c.sinks[0].kind, SinkConfig::Kind::kParquet);
  EXPECT_EQ(c.sinks[0].parquet.root, "/etc/kelt/landing");  // relative to the file
  EXPECT_EQ(c.sinks[0].parquet.rotate_records, 1000);
  EXPECT_EQ(c.sinks[0].parquet.rotate_age.count(), 5000);
  EXPECT_EQ(c.sinks[0].parquet.compression, ParquetCompression::kSnappy);
  EXPECT_EQ(c.sinks[0].parquet.dictionary, ParquetDictionary::kNone);
  EXPECT_EQ(c.sinks[0].parquet.integer_encoding, ParquetIntegerEncoding::kDelta);
  EXPECT_EQ(c.sinks[0].parquet.partition_by, "base");
  EXPECT_EQ(c.sinks[1].kind, SinkConfig::Kind::kDuckDb);
  EXPECT_EQ(c.sinks[1].duckdb.path, "/tmp/x.duckdb");
  EXPECT_EQ(c.sinks[1].duckdb.table, "rides");
  EXPECT_EQ(c.sinks[1].duckdb.group_id, "demo");  // defaults to the group
  EXPECT_EQ(c.sinks[2].kind, SinkConfig::Kind::kPostgres);
  EXPECT_EQ(c.sinks[2].postgres.table, "public.rides");
  EXPECT_TRUE(c.sinks[2].postgres.replace_nul_in_text);
  EXPECT_EQ(c.sinks[2].postgres.group_id, "demo");
}

TEST(ConfigTest, JsonIsAccepted) {
  auto c = ParseEltConfig(
      R"({"brokers":"b:1","group":"g","topics":["t"],
          "schema":{"fields":[{"name":"x","data_type":"Int64"}]},
          "sinks":[{"duckdb":{"path":"d.duckdb"}}]})",
      "/base");
  ASSERT_OK(c);
  EXPECT_EQ(c->sinks[0].duckdb.path, "/base/d.duckdb");
  EXPECT_EQ(c->elt.landing.fields[0].name, "x");
  // Defaults.
  EXPECT_EQ(c->elt.window.max_records, 10000);
  EXPECT_EQ(c->elt.load.on_bad_record, BadRecordPolicy::kDeadLetter);
  EXPECT_EQ(c->metrics_port, 0);
}

const char* kMinimal = R"(brokers: b:1
group: g
topics: t
schema: '{"fields":[{"name":"x","data_type":"Int64"}]}'
sinks:
  - parquet: {root: out}
)";

TEST(ConfigTest, NamesTheBadKeyWithItsPathAndLine) {
  std::string text = std::string(kMinimal) +
                     "  - parquet:\n"
                     "      root: b\n"
                     "      rotate_records: abc\n";
  auto c = ParseEltConfig(text, "/");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalid);
  EXPECT_EQ(c.status().message(),
            "sinks[1].parquet.rotate_records: expected an integer, got \"abc\" (line 9)");
}

TEST(ConfigTest, ReportsEveryProblemAtOnce) {
  auto c = ParseEltConfig(R"(brokers: b:1
grop: g
topics: []
window: {max_records: 0, max_wiat_ms: 5}
on_bad_record: drop
schema: {fields: [{name: x, data_type: Int64}]}
sinks:
  - parquett: {root: x}
  - duckdb: {table: t}
)",
                          "/");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_NE(m.find("grop: unknown key (did you mean 'group'?) (line 2)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("window.max_wiat_ms: unknown key (did you mean 'max_wait_ms'?)"),
            std::string::npos)
      << m;
  EXPECT_NE(
      m.find("window.max_records: expected an integer from 1 up, got \"0\" (line 4)"),
      std::string::npos)
      << m;
  EXPECT_NE(
      m.find("on_bad_record: expected one of fail, skip, dead_letter, got \"drop\""),
      std::string::npos)
      << m;
  EXPECT_NE(m.find("sinks[0].parquett: unknown sink kind (did you mean 'parquet'?)"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("sinks[1].duckdb.path: required for a duckdb sink"), std::string::npos)
      << m;
  EXPECT_NE(m.find("group: required"), std::string::npos) << m;
  EXPECT_NE(m.find("topics: required"), std::string::npos) << m;
}

TEST(ConfigTest, SecretsAreNeverEchoed) {
  std::string text = std::string(kMinimal) +
                     "  - postgres: {conninfo: [postgresql://u:s3cr3t@h/db]}\n"
                     "properties: {sasl.password: [hunter2]}\n";
  auto c = ParseEltConfig(text, "/");
  ASSERT_FALSE(c.ok());
  const std::string& m = c.status().message();
  EXPECT_EQ(m.find("s3cr3t"), std::string::npos) << m;
  EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
  EXPECT_NE(m.find("sinks[1].postgres.conninfo: expected a string (value not shown"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("properties.sasl.password: expected a string (value not shown"),
            std::string::npos)
      << m;
}

TEST(ConfigTest, ControlCharactersAreEscapedOneLinePerProblem) {
  auto c = ParseEltConfig(std::string(kMinimal) + "\"bad\\nkey\": 1\n", "/");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), "bad\\x0akey: unknown key (line 7)");
}

TEST(ConfigTest, YamlSyntaxErrorHasAPosition) {
  auto c = ParseEltConfig("brokers: [a, b\ngroup: g\n", "/");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kParseError);
  EXPECT_NE(c.status().message().find("(line "), std::string::npos)
      << c.status().message();
}

TEST(ConfigTest, OverridesWinInOrderAndNameTheirOrigin) {
  std::vector<ConfigOverride> o = {
      {"group", "from-env", "env KELT_GROUP"},
      {"group", "from-flag", "--group"},
      {"window.max_records", "42", "--window-records"},
      {"topics", "a,b", "--topic"},
      {"duckdb.path", "rel.duckdb", "--duckdb"},  // adds a duckdb sink
      {"parquet.rotate_records", "9", "--set"},   // the one parquet sink
      {"properties.security.protocol", "SSL", "--property"},
  };
  ASSERT_OK_AND_ASSIGN(auto c, ParseEltConfig(kMinimal, "/cfg", o));
  EXPECT_EQ(c.elt.consumer.group_id, "from-flag");
  EXPECT_EQ(c.elt.window.max_records, 42);
  EXPECT_EQ(c.elt.consumer.topics, (std::vector<std::string>{"a", "b"}));
  ASSERT_EQ(c.sinks.size(), 2u);
  EXPECT_EQ(c.sinks[0].parquet.root, "/cfg/out");
  EXPECT_EQ(c.sinks[0].parquet.rotate_records, 9);
  // A path from a flag is the user's, relative to the current directory.
  EXPECT_EQ(c.sinks[1].duckdb.path, "rel.duckdb");
  EXPECT_EQ(c.sinks[1].duckdb.group_id, "from-flag");
  EXPECT_EQ(c.elt.consumer.properties.at("security.protocol"), "SSL");

  auto bad =
      ParseEltConfig(kMinimal, "/", {{"window.max_records", "lots", "--window-records"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "window.max_records: expected an integer, got \"lots\" (--window-records)");

  // Flags alone make a config (no file).
  ASSERT_OK_AND_ASSIGN(
      auto flags_only,
      ParseEltConfig(
          "", "/",
          {{"brokers", "b:1", "--brokers"},
           {"group", "g", "--group"},
           {"topics", "t", "--topic"},
           {"schema", R"({"fields":[{"name":"x","data_type":"Utf8"}]})", "--schema"},
           {"parquet.root", "/tmp/p", "--parquet"}}));
  EXPECT_EQ(flags_only.sinks[0].parquet.root, "/tmp/p");
}

TEST(ConfigTest, BadOverrideKeysAreNamed) {
  auto unknown = ParseEltConfig(kMinimal, "/", {{"windw.max_records", "1", "--set"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find(
                "windw: unknown key (did you mean 'window'?) (--set)"),
            std::string::npos)
      << unknown.status().message();
  auto malformed = ParseEltConfig(kMinimal, "/", {{"window..x", "1", "--set"}});
  ASSERT_FALSE(malformed.ok());
  EXPECT_EQ(malformed.status().message(), "window..x: not a config key");
  auto not_a_map = ParseEltConfig("just text", "/", {{"group", "g", "--group"}});
  ASSERT_FALSE(not_a_map.ok());
  EXPECT_EQ(not_a_map.status().message(), "(document): expected a map of keys");
}

TEST(ConfigTest, AmbiguousSinkShortcutIsAnError) {
  std::string text = std::string(kMinimal) + "  - parquet: {root: other}\n";
  auto c = ParseEltConfig(text, "/", {{"parquet.root", "x", "--parquet"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("several parquet sinks; use sinks[N].parquet.root"),
            std::string::npos)
      << c.status().message();
  ASSERT_OK_AND_ASSIGN(
      auto indexed,
      ParseEltConfig(text, "/", {{"sinks[1].parquet.root", "/x", "--set"}}));
  EXPECT_EQ(indexed.sinks[1].parquet.root, "/x");
}

TEST(ConfigTest, EnvironmentOverrides) {
  std::map<std::string, std::string> env = {{"KELT_GROUP", "g2"},
                                            {"KELT_WINDOW_MAX_WAIT_MS", "77"},
                                            {"KELT_PARQUET_COMPRESSION", "lz4"},
                                            {"KELT_PROPERTY_SASL_MECHANISM", "PLAIN"},
                                            {"UNRELATED", "x"}};
  std::vector<std::string> names;
  for (const auto& [k, v] : env) names.push_back(k);
  auto get = [&](const char* n) -> const char* {
    auto it = env.find(n);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  auto o = ConfigOverridesFromEnv(names, get);
  ASSERT_EQ(o.size(), 4u);
  ASSERT_OK_AND_ASSIGN(auto c, ParseEltConfig(kMinimal, "/", o));
  EXPECT_EQ(c.elt.consumer.group_id, "g2");
  EXPECT_EQ(c.elt.window.max_wait.count(), 77);
  EXPECT_EQ(c.sinks[0].parquet.compression, ParquetCompression::kLz4);
  EXPECT_EQ(c.elt.consumer.properties.at("sasl.mechanism"), "PLAIN");
}

TEST(ConfigTest, ExpandsEnvironmentVariablesInValues) {
  setenv("KELT_TEST_PG", "postgresql://u:pw@h/db", 1);
  std::string text =
      std::string(kMinimal) + "  - postgres: {conninfo: '${KELT_TEST_PG}'}\n";
  ASSERT_OK_AND_ASSIGN(auto c, ParseEltConfig(text, "/"));
  EXPECT_EQ(c.sinks[1].postgres.conninfo, "postgresql://u:pw@h/db");
  auto missing = ParseEltConfig(
      std::string(kMinimal) + "  - postgres: {conninfo: '${KELT_TEST_NOPE}'}\n", "/");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(
      missing.status().message().find(
          "sinks[1].postgres.conninfo: environment variable 'KELT_TEST_NOPE' is not set"),
      std::string::npos)
      << missing.status().message();
}

TEST(ConfigTest, SchemaFileIsRelativeToTheConfigFile) {
  fs::path dir =
      fs::temp_directory_path() / ("kelt_config_test_" + std::to_string(getpid()));
  fs::create_directories(dir / "schemas");
  std::ofstream(dir / "schemas" / "s.json")
      << R"({"fields":[{"name":"y","data_type":"Float64"}]})";
  std::ofstream(dir / "kelt.yaml")
      << "brokers: b:1\ngroup: g\ntopics: [t]\n"
         "schema: schemas/s.json\nsinks:\n  - parquet: {root: out}\n";
  ASSERT_OK_AND_ASSIGN(auto c, LoadEltConfig(dir / "kelt.yaml"));
  EXPECT_EQ(c.elt.landing.fields[0].name, "y");
  EXPECT_EQ(c.schema_origin, (dir / "schemas" / "s.json").string());

  std::ofstream(dir / "bad.yaml")
      << "brokers: b:1\ngroup: g\ntopics: [t]\n"
         "schema: nope.json\nsinks:\n  - parquet: {root: out}\n";
  auto bad = LoadEltConfig(dir / "bad.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), (dir / "bad.yaml").string() +
                                        ": schema: cannot read schema file '" +
                                        (dir / "nope.json").string() + "' (line 4)");

  std::ofstream(dir / "badtype.yaml") << "brokers: b:1\ngroup: g\ntopics: [t]\n"
                                         "schema: {fields: [{name: z, data_type: "
                                         "Int65}]}\nsinks:\n  - parquet: {root: o}\n";
  auto badtype = LoadEltConfig(dir / "badtype.yaml");
  ASSERT_FALSE(badtype.ok());
  EXPECT_NE(badtype.status().message().find(": schema: "), std::string::npos);
  EXPECT_NE(badtype.status().message().find("Int65"), std::string::npos)
      << badtype.status().message();
  fs::remove_all(dir);
}

TEST(ConfigTest, AliasExpansionIsBounded) {
  // "Billion laughs": ten levels of ten aliases would be 10^10 nodes when walked.
  std::string text = "l0: &l0 [\"xxxxxxxxxxxxxxxx\"]\n";
  for (int i = 1; i <= 10; ++i) {
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [";
    for (int j = 0; j < 10; ++j) text += (j ? ", *l" : "*l") + std::to_string(i - 1);
    text += "]\n";
  }
  text +=
      "brokers: b\ngroup: g\ntopics: [t]\nschema: {fields: *l10}\n"
      "sinks: [{parquet: {root: x}}]\n";
  auto start = std::chrono::steady_clock::now();
  auto c = ParseEltConfig(text, "/");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("schema: the inline schema is too large"),
            std::string::npos)
      << c.status().message().substr(0, 500);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

// An alias inside the node it names makes the YAML tree cyclic (found by the config
// fuzzer: the walk overflowed the stack). It is refused, naming the schema.
TEST(ConfigTest, AnAliasInsideItsOwnNodeIsRefused) {
  const std::string text =
      "a: &a [x, x]\nb: &b [*b, za]\nbrokers: b\ngroup: g\ntopics: [t]\n"
      "schema: {fields: [*b, !*b]}\nsinks: [{parquet: {root: x}}]\n";
  auto c = ParseEltConfig(text, "/");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("schema: the inline schema nests deeper than 64"),
            std::string::npos)
      << c.status().message().substr(0, 500);
}

// The group keys: protocol and static membership reach the consumer's options; the
// session timeout the consumer protocol leaves to the broker is refused with it.
TEST(ConfigTest, GroupProtocolAndInstanceId) {
  ASSERT_OK_AND_ASSIGN(
      auto c, ParseEltConfig("group_protocol: consumer\ninstance_id: worker-3\n" +
                                 std::string(kMinimal),
                             "/tmp"));
  EXPECT_EQ(c.elt.consumer.group_protocol, GroupProtocol::kConsumer);
  EXPECT_EQ(c.elt.consumer.instance_id, "worker-3");
  auto bad = ParseEltConfig("group_protocol: eager\n" + std::string(kMinimal), "/tmp");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("group_protocol"), std::string::npos);
  auto both = ParseEltConfig(
      "group_protocol: consumer\nsession_timeout_ms: 6000\n" + std::string(kMinimal),
      "/tmp");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find(
                "session_timeout_ms: applies to group_protocol classic only"),
            std::string::npos)
      << both.status().message();
}

TEST(ConfigTest, MakeSinksMakesEachKind) {
  ASSERT_OK_AND_ASSIGN(
      auto c, ParseEltConfig(
                  std::string(kMinimal) + "  - duckdb: {path: /tmp/k.duckdb}\n", "/tmp"));
  ASSERT_OK_AND_ASSIGN(auto sinks, MakeSinks(c));
  ASSERT_EQ(sinks.size(), 2u);
  EXPECT_NE(sinks[0]->name().find("parquet"), std::string::npos);
  EXPECT_NE(sinks[1]->name().find("duckdb"), std::string::npos);
}

TEST(ConfigTest, KeysTableCoversEveryKeyWithAnEnvVar) {
  const auto& keys = EltConfigKeys();
  auto find = [&](const std::string& k) {
    for (const auto& i : keys)
      if (i.key == k) return i;
    return ConfigKeyInfo{};
  };
  EXPECT_EQ(find("window.max_records").env, "KELT_WINDOW_MAX_RECORDS");
  EXPECT_EQ(find("window.max_records").flag, "--window-records");
  EXPECT_TRUE(find("postgres.conninfo").secret);
  EXPECT_TRUE(find("parquet.s3_secret_key").secret);
  EXPECT_EQ(find("properties").env, "KELT_PROPERTY_<NAME>");
  EXPECT_TRUE(IsSecretConfigKey("properties.ssl.key.password"));
  EXPECT_FALSE(IsSecretConfigKey("group"));
}

// The Parquet enums parse at config load: every name of each, and anything else is an
// error naming the key and the accepted values.
TEST(ConfigTest, ParquetEnumsParseAtLoad) {
  auto with = [](const std::string& key, const std::string& value) {
    return ParseEltConfig(kMinimal, "/", {{"parquet." + key, value, "--set"}});
  };
  for (auto e :
       {ParquetCompression::kZstd, ParquetCompression::kSnappy, ParquetCompression::kGzip,
        ParquetCompression::kLz4, ParquetCompression::kNone}) {
    ASSERT_OK_AND_ASSIGN(auto c,
                         with("compression", std::string(ParquetCompressionName(e))));
    EXPECT_EQ(c.sinks[0].parquet.compression, e);
  }
  for (auto e :
       {ParquetDictionary::kAuto, ParquetDictionary::kAll, ParquetDictionary::kNone}) {
    ASSERT_OK_AND_ASSIGN(auto c,
                         with("dictionary", std::string(ParquetDictionaryName(e))));
    EXPECT_EQ(c.sinks[0].parquet.dictionary, e);
  }
  for (auto e : {ParquetIntegerEncoding::kDelta, ParquetIntegerEncoding::kPlain}) {
    ASSERT_OK_AND_ASSIGN(
        auto c, with("integer_encoding", std::string(ParquetIntegerEncodingName(e))));
    EXPECT_EQ(c.sinks[0].parquet.integer_encoding, e);
  }
  struct Bad {
    const char* key;
    const char* value;
    const char* message;
  };
  for (const Bad& b : {
           Bad{"compression", "brotli",
               "sinks[0].parquet.compression: expected one of zstd, snappy, gzip, lz4, "
               "none, got \"brotli\" (--set)"},
           Bad{"dictionary", "some",
               "sinks[0].parquet.dictionary: expected one of auto, all, none, got "
               "\"some\" (--set)"},
           Bad{"integer_encoding", "zigzag",
               "sinks[0].parquet.integer_encoding: expected one of delta, plain, got "
               "\"zigzag\" (--set)"},
       }) {
    auto c = with(b.key, b.value);
    ASSERT_FALSE(c.ok()) << b.key;
    EXPECT_EQ(c.status().message(), b.message);
  }
  auto c = ParseEltConfig(
      std::string(kMinimal) + "  - parquet: {root: x, compression: ZSTD}\n", "/");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(
      c.status().message().find("sinks[1].parquet.compression: expected one of zstd"),
      std::string::npos)
      << c.status().message();
}

// The defaults the key table shows are the option structs' own.
TEST(ConfigTest, KeyTableDefaultsAreTheOptionsDefaults) {
  auto def = [](const std::string& k) {
    for (const auto& i : EltConfigKeys())
      if (i.key == k) return i.default_value;
    return std::string("(missing)");
  };
  const EltOptions elt;
  const ParquetSinkOptions parquet;
  EXPECT_EQ(def("window.max_records"), std::to_string(elt.window.max_records));
  EXPECT_EQ(def("window.max_bytes"), std::to_string(elt.window.max_bytes));
  EXPECT_EQ(def("on_bad_record"), BadRecordPolicyName(elt.load.on_bad_record));
  EXPECT_EQ(def("min_records_per_loader"), std::to_string(elt.min_records_per_loader));
  EXPECT_EQ(def("parquet.rotate_bytes"), std::to_string(parquet.rotate_bytes));
  EXPECT_EQ(def("parquet.compression"), ParquetCompressionName(parquet.compression));
  EXPECT_EQ(def("parquet.dictionary"), "auto");
  EXPECT_EQ(def("parquet.integer_encoding"), "delta");
  EXPECT_EQ(def("parquet.root"), "(required)");
  EXPECT_EQ(def("session_timeout_ms"), "(librdkafka's)");
  // A parsed empty document (but its required keys) has exactly these defaults.
  ASSERT_OK_AND_ASSIGN(auto c, ParseEltConfig(kMinimal, "/"));
  EXPECT_EQ(c.elt.window.max_records, elt.window.max_records);
  EXPECT_EQ(c.elt.min_records_per_loader, elt.min_records_per_loader);
  EXPECT_EQ(c.sinks[0].parquet.rotate_records, parquet.rotate_records);
}

TEST(ConfigTest, KeyTableNamesPythonArguments) {
  auto python = [](const std::string& k) {
    for (const auto& i : EltConfigKeys())
      if (i.key == k) return i.python;
    return std::string("(missing)");
  };
  EXPECT_EQ(python("group"), "group_id");
  EXPECT_EQ(python("schema"), "landing_schema");
  EXPECT_EQ(python("window.max_records"), "max_records");
  EXPECT_EQ(python("metrics.port"), "");
  EXPECT_EQ(python("parquet.compression"), "compression");
  EXPECT_EQ(python("postgres.conninfo"), "conninfo");
}

TEST(ConfigTest, PostgresqlIsAnotherNameOfThePostgresSink) {
  EXPECT_EQ(ParseSinkKind("postgres"), SinkConfig::Kind::kPostgres);
  EXPECT_EQ(ParseSinkKind("postgresql"), SinkConfig::Kind::kPostgres);
  EXPECT_EQ(ParseSinkKind("parquet"), SinkConfig::Kind::kParquet);
  EXPECT_EQ(ParseSinkKind("duckdb"), SinkConfig::Kind::kDuckDb);
  EXPECT_FALSE(ParseSinkKind("pg").has_value());
  auto c = ParseEltConfig(std::string(kMinimal) + "  - postgresql: {table: t}\n", "/");
  ASSERT_FALSE(c.ok());
  // Reported under the one name.
  EXPECT_EQ(c.status().message(),
            "sinks[1].postgres.conninfo: required for a postgres sink (line 7)")
      << c.status().message();
}

TEST(ConfigTest, IcebergSinkKeysAndTheirDefaults) {
  ASSERT_OK_AND_ASSIGN(
      auto c, ParseEltConfig(std::string(kMinimal) + "  - iceberg:\n"
                                                     "      catalog: lake/catalog.db\n"
                                                     "      warehouse: lake/wh\n"
                                                     "      namespace: kafka\n"
                                                     "      partition: day(at), base\n",
                             "/etc/kelt"));
  ASSERT_EQ(c.sinks.size(), 2u);
  const auto& s = c.sinks[1];
  EXPECT_EQ(s.kind, SinkConfig::Kind::kIceberg);
  EXPECT_EQ(s.iceberg.catalog, "/etc/kelt/lake/catalog.db");  // relative to the file
  EXPECT_EQ(s.iceberg.warehouse, "/etc/kelt/lake/wh");
  EXPECT_EQ(s.iceberg.table_namespace, "kafka");
  EXPECT_EQ(s.iceberg.table, "landing");
  EXPECT_EQ(s.iceberg.catalog_name, "kelt");
  EXPECT_EQ(s.iceberg.partition, "day(at), base");
  EXPECT_EQ(s.iceberg.group_id, "g");  // defaults to the group
  EXPECT_EQ(ParseSinkKind("iceberg"), SinkConfig::Kind::kIceberg);
  auto missing =
      ParseEltConfig(std::string(kMinimal) + "  - iceberg: {catalog: c.db}\n", "/");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(),
            "sinks[1].iceberg.warehouse: required for a iceberg sink (line 7)")
      << missing.status().message();
}

// kelt.Consumer's document: the table's consumer keys, their checks and defaults.
TEST(ConfigTest, ConsumerConfigTakesTheConsumerKeysOnly) {
  ASSERT_OK_AND_ASSIGN(
      ConsumerOptions o,
      ParseConsumerConfig(R"({"brokers":"b:9092","group":"g","topics":["t","^x.*"],
                             "auto_offset_reset":"latest","instance_id":"w1",
                             "properties":{"fetch.min.bytes":"1"}})"));
  EXPECT_EQ(o.brokers, "b:9092");
  EXPECT_EQ(o.group_id, "g");
  EXPECT_EQ(o.topics, (std::vector<std::string>{"t", "^x.*"}));
  EXPECT_EQ(o.auto_offset_reset, AutoOffsetReset::kLatest);
  EXPECT_EQ(o.instance_id, "w1");
  EXPECT_EQ(o.properties.at("fetch.min.bytes"), "1");
  EXPECT_EQ(o.group_protocol, ConsumerOptions{}.group_protocol);  // the default

  // A key of the loop, a typo, a bad value and a missing required key, all at once.
  auto bad = ParseConsumerConfig(
      R"({"brokers":"b","topics":["t"],"window":{"max_records":5},"auto_ofset_reset":"x",
          "group_protocol":"eager"})");
  ASSERT_NOT_OK(bad);
  const std::string& m = bad.status().message();
  EXPECT_NE(m.find("window"), std::string::npos) << m;
  EXPECT_NE(m.find("auto_ofset_reset"), std::string::npos) << m;
  EXPECT_NE(m.find("auto_offset_reset"), std::string::npos) << m;  // did you mean
  EXPECT_NE(m.find("group_protocol"), std::string::npos) << m;
  EXPECT_NE(m.find("group: required"), std::string::npos) << m;

  // The keys it takes are the ones the table marks.
  std::vector<std::string> marked;
  for (const auto& k : EltConfigKeys()) {
    if (k.consumer) marked.push_back(k.key);
  }
  EXPECT_EQ(marked,
            (std::vector<std::string>{"brokers", "group", "topics", "auto_offset_reset",
                                      "group_protocol", "instance_id",
                                      "session_timeout_ms", "properties"}));
}

}  // namespace
}  // namespace kelt
