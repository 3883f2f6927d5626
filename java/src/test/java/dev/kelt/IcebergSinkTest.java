// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KeltPipeline landing into an Iceberg table (SQL catalog on SQLite, local warehouse),
 * checked by reading the table's newest metadata file: the snapshot summary holds the
 * rows and the group's next offsets; dead letters land in the sibling table; a second run
 * lands nothing.
 */
class IcebergSinkTest {
  @Test
  void landsRowsAndDeadLettersAndResumesFromTheSnapshot(@TempDir Path dir) throws Exception {
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("java-iceberg");
    String group = topic + "-g";
    KeltConsumerTest.produce(brokers, topic, 0, 60);
    produceBad(brokers, topic, 2);
    String yaml =
        "brokers: \"" + brokers + "\"\n"
            + "group: " + group + "\n"
            + "topics: [" + topic + "]\n"
            + "schema: {fields: [{name: id, data_type: Int64}, {name: name, data_type: Utf8}]}\n"
            + "window: {max_records: 25, max_wait_ms: 5000}\n"
            + "until_caught_up: true\n"
            + "sinks:\n"
            + "  - iceberg: {catalog: lake/catalog.db, warehouse: lake/wh, namespace: java,"
            + " table: events}\n";
    try (KeltPipeline p = KeltPipeline.open(yaml, dir)) {
      p.run();
      JSONObject stats = p.stats();
      assertEquals(60, stats.getLong("rows"), stats.toString());
      assertEquals(2, stats.getLong("dead_lettered"), stats.toString());
      assertEquals(0, stats.getLong("sink_errors"), stats.toString());
    }
    JSONObject summary = currentSummary(dir.resolve("lake/wh/java/events/metadata"));
    assertEquals("60", summary.getString("total-records"), summary.toString());
    // The group's next offsets cover every record of the topic, dead letters included.
    JSONObject offsets =
        new JSONObject(summary.getString("kelt.offsets." + group)).getJSONObject(topic);
    long covered = 0;
    for (String partition : offsets.keySet()) covered += offsets.getLong(partition);
    assertEquals(62, covered, offsets.toString());
    JSONObject dead = currentSummary(dir.resolve("lake/wh/java/events_dead_letter/metadata"));
    assertEquals("2", dead.getString("total-records"), dead.toString());
    // A second run resumes from the snapshot: nothing new lands, no new snapshot.
    try (KeltPipeline p = KeltPipeline.open(yaml, dir)) {
      p.run();
      assertEquals(0, p.stats().getLong("rows"));
      assertEquals(0, p.stats().getLong("dead_lettered"));
    }
    assertEquals(
        summary.toString(),
        currentSummary(dir.resolve("lake/wh/java/events/metadata")).toString());
  }

  /** The current snapshot's summary in the newest `vNNNNN-….metadata.json`. */
  private static JSONObject currentSummary(Path metadataDir) throws IOException {
    Path newest;
    try (Stream<Path> files = Files.list(metadataDir)) {
      newest =
          files
              .filter(f -> f.getFileName().toString().endsWith(".metadata.json"))
              .max(Comparator.comparing(f -> f.getFileName().toString()))
              .orElseThrow();
    }
    JSONObject meta = new JSONObject(Files.readString(newest));
    long current = meta.getLong("current-snapshot-id");
    JSONArray snapshots = meta.getJSONArray("snapshots");
    for (int i = 0; i < snapshots.length(); i++) {
      JSONObject s = snapshots.getJSONObject(i);
      if (s.getLong("snapshot-id") == current) return s.getJSONObject("summary");
    }
    throw new AssertionError("no current snapshot in " + newest);
  }

  /** Records whose id is text: they do not fit the Int64 column, so they are dead letters. */
  private static void produceBad(String brokers, String topic, int n) {
    JSONArray rows = new JSONArray();
    for (int i = 0; i < n; i++) {
      rows.put(new JSONArray().put(new JSONObject().put("Utf8", "bad" + i)));
    }
    JSONObject dataset =
        new JSONObject()
            .put(
                "schema",
                new JSONObject()
                    .put(
                        "fields",
                        new JSONArray()
                            .put(new JSONObject().put("name", "id").put("data_type", "Utf8"))))
            .put("rows", rows);
    String producer = new JSONObject().put("brokers", brokers).put("topic", topic).toString();
    try (Arena arena = Arena.ofConfined()) {
      JSONObject out =
          RdpNativeJson.invokeKafkaExportDatasetJson(
              Linker.nativeLinker(), RdpNativeJson.lookup(), arena, producer, dataset.toString());
      assertEquals(n, out.getLong("row_count"));
      assertTrue(out.getString("topic").equals(topic));
    }
  }
}
