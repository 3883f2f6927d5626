// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ELT loop handle, against the real broker, landing into Parquet. */
class KeltPipelineTest {
  @Test
  void badConfigNamesTheKey(@TempDir Path dir) {
    KeltException e =
        assertThrows(
            KeltException.class, () -> KeltPipeline.open("brokers: b\ngrop: g\n", dir));
    assertEquals("INVALID", e.code());
    assertTrue(e.getMessage().contains("grop"), e.getMessage());
  }

  @Test
  void landsUntilCaughtUpAndResumesFromTheSink(@TempDir Path dir) throws Exception {
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("java-pipeline");
    KeltConsumerTest.produce(brokers, topic, 0, 80);
    String yaml =
        "brokers: \"" + brokers + "\"\n"
            + "group: " + topic + "-g\n"
            + "topics: [" + topic + "]\n"
            + "schema: {fields: [{name: id, data_type: Int64}, {name: name, data_type: Utf8}]}\n"
            + "window: {max_records: 30, max_wait_ms: 5000}\n"
            + "until_caught_up: true\n"
            + "sinks:\n  - parquet: {root: landing}\n";
    int steps = 0;
    try (KeltPipeline p = KeltPipeline.open(yaml, dir)) {
      while (p.step()) steps++;
      JSONObject stats = p.stats();
      assertEquals(80, stats.getLong("rows"), stats.toString());
      assertTrue(stats.getBoolean("caught_up"));
      assertEquals(0, stats.getLong("bad_records"));
    }
    assertTrue(steps >= 2, "windows of 30 records: " + steps);
    try (Stream<Path> files = Files.walk(dir.resolve("landing"))) {
      assertTrue(files.anyMatch(f -> f.toString().endsWith(".parquet")));
    }
    // A second run finds everything in the sink: nothing new lands.
    try (KeltPipeline p = KeltPipeline.open(yaml, dir)) {
      p.run();
      assertEquals(0, p.stats().getLong("rows"));
      // run() ends the loop (flushed, committed, left the group): running again is refused.
      KeltException again = assertThrows(KeltException.class, p::run);
      assertEquals("INVALID", again.code());
      assertFalse(again.retriable());
    }
  }
}
