// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Schema Registry's value formats from Java: rows exported as Avro records of a subject
 * (RdpNativeJson, value_format avro), landed by the window consumer with
 * "registry:&lt;subject&gt;" and by the pipeline with {@code schema: registry:<subject>}.
 * Needs the broker and a registry (KELT_REGISTRY_ENV: scripts/registry.sh start); missing is a
 * failure, never a skip.
 */
class RegistryTest {
  static String registryUrl() throws IOException {
    String envFile = System.getenv("KELT_REGISTRY_ENV");
    if (envFile == null || envFile.isBlank()) {
      throw new IllegalStateException(
          "no Schema Registry: set KELT_REGISTRY_ENV (scripts/registry.sh start writes it;"
              + " scripts/test.sh does this)");
    }
    for (String line : Files.readAllLines(Path.of(envFile))) {
      if (line.startsWith("KELT_REGISTRY_URL=")) {
        return line.substring("KELT_REGISTRY_URL=".length()).trim();
      }
    }
    throw new IllegalStateException("no KELT_REGISTRY_URL line in " + envFile);
  }

  /** Rows {id, name[, tier]} as Avro records of topic-value, the schema registered. */
  static void produceAvro(String brokers, String registry, String topic, int from, int n,
      boolean tier) {
    JSONArray fields =
        new JSONArray()
            .put(new JSONObject().put("name", "id").put("data_type", "Int64"))
            .put(new JSONObject().put("name", "name").put("data_type", "Utf8"));
    if (tier) fields.put(new JSONObject().put("name", "tier").put("data_type", "Utf8"));
    JSONArray rows = new JSONArray();
    for (int i = from; i < from + n; i++) {
      JSONArray row =
          new JSONArray()
              .put(new JSONObject().put("Int64", i))
              .put(new JSONObject().put("Utf8", "row " + i));
      if (tier) row.put(new JSONObject().put("Utf8", "gold"));
      rows.put(row);
    }
    JSONObject dataset =
        new JSONObject().put("schema", new JSONObject().put("fields", fields)).put("rows", rows);
    String producer =
        new JSONObject()
            .put("brokers", brokers)
            .put("topic", topic)
            .put("value_format", "avro")
            .put("subject", topic + "-value")
            .put("auto_register", true)
            .put("registry", new JSONObject().put("url", registry))
            .toString();
    try (Arena arena = Arena.ofConfined()) {
      JSONObject out =
          RdpNativeJson.invokeKafkaExportDatasetJson(
              Linker.nativeLinker(), RdpNativeJson.lookup(), arena, producer, dataset.toString());
      assertEquals(n, out.getLong("row_count"));
    }
  }

  @Test
  void avroRecordsLandThroughTheConsumerAndThePipeline(@TempDir Path dir) throws Exception {
    String brokers = TestEnv.bootstrap();
    String registry = registryUrl();
    String topic = TestEnv.unique("java-avro");
    int n = 30;
    produceAvro(brokers, registry, topic, 0, n, false);
    String config =
        new JSONObject()
            .put("brokers", brokers)
            .put("group_id", topic + "-g")
            .put("topic", topic)
            .put("max_records", 1000)
            .put("max_wait_ms", 5000)
            .put("registry", new JSONObject().put("url", registry))
            .toString();
    Map<Long, String> names = new TreeMap<>();
    Map<Long, String> tiers = new TreeMap<>();
    try (KeltConsumer consumer = KeltConsumer.open(config, "registry:" + topic + "-value")) {
      for (int polls = 0; polls < 20 && names.size() < n; polls++) {
        try (KeltWindow w = consumer.poll()) {
          read(w.toDataSet(), names, tiers);
          consumer.commit(w);
        }
      }
      assertEquals(n, names.size());
      assertEquals("row 7", names.get(7L));
      // The subject gains a column: the same consumer's windows carry it.
      produceAvro(brokers, registry, topic, n, 5, true);
      for (int polls = 0; polls < 20 && names.size() < n + 5; polls++) {
        try (KeltWindow w = consumer.poll()) {
          read(w.toDataSet(), names, tiers);
          consumer.commit(w);
        }
      }
    }
    assertEquals(n + 5, names.size());
    assertEquals("gold", tiers.get((long) n + 2));
    assertNull(tiers.get(3L));

    // An unknown subject is INVALID and names it.
    KeltException e =
        assertThrows(
            KeltException.class, () -> KeltConsumer.open(config, "registry:java-no-such-subject"));
    assertEquals("INVALID", e.code());
    assertTrue(e.getMessage().contains("java-no-such-subject"), e.getMessage());

    // The pipeline lands every record into Parquet with the subject's latest schema.
    String yaml =
        "brokers: \"" + brokers + "\"\n"
            + "group: " + topic + "-pipe\n"
            + "topics: [" + topic + "]\n"
            + "schema: registry:" + topic + "-value\n"
            + "registry: {url: \"" + registry + "\"}\n"
            + "until_caught_up: true\n"
            + "sinks:\n  - parquet: {root: landing}\n";
    try (KeltPipeline p = KeltPipeline.open(yaml, dir)) {
      p.run();
      JSONObject stats = p.stats();
      assertEquals(n + 5, stats.getLong("rows"), stats.toString());
      assertEquals(0, stats.getLong("bad_records"));
    }
  }

  /** Collect id → name and id → tier (when the window has the column) of a data set. */
  private static void read(JSONObject dataset, Map<Long, String> names, Map<Long, String> tiers) {
    JSONArray fields = dataset.getJSONObject("schema").getJSONArray("fields");
    assertEquals("id", fields.getJSONObject(0).getString("name"));
    assertEquals("name", fields.getJSONObject(1).getString("name"));
    int tier = -1;
    for (int i = 0; i < fields.length(); i++) {
      if (fields.getJSONObject(i).getString("name").equals("tier")) tier = i;
    }
    JSONArray rows = dataset.getJSONArray("rows");
    for (int i = 0; i < rows.length(); i++) {
      JSONArray row = rows.getJSONArray(i);
      long id = row.getJSONObject(0).getLong("Int64");
      names.put(id, row.getJSONObject(1).getString("Utf8"));
      if (tier >= 0 && !row.isNull(tier) && row.get(tier) instanceof JSONObject cell
          && cell.has("Utf8")) {
        tiers.put(id, cell.getString("Utf8"));
      }
    }
  }
}
