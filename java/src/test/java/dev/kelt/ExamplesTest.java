// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Runs the programs in examples/java/ as a user would (java's source-file mode). */
class ExamplesTest {
  @Test
  void byoLoad() throws Exception {
    String out = run("ByoLoad.java");
    assertTrue(out.contains("landed 1 row(s):"), out);
    assertTrue(out.contains("[{\"Int64\":1},{\"Utf8\":\"click\"},{\"Int64\":1}]"), out);
  }

  @Test
  void eltStreamLandsCommitsAndRunsSql(@TempDir Path dir) throws Exception {
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("java-example");
    String[] names = {"alpha", "beta", "gamma"};
    JSONArray rows = new JSONArray();
    for (int i = 0; i < 30; i++) {
      rows.put(
          new JSONArray()
              .put(new JSONObject().put("Int64", i))
              .put(new JSONObject().put("Utf8", names[i % 3])));
    }
    String dataset =
        "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
            + "{\"name\":\"name\",\"data_type\":\"Utf8\"}]},\"rows\":"
            + rows
            + "}";
    try (Arena arena = Arena.ofConfined()) {
      RdpNativeJson.invokeKafkaExportDatasetJson(
          Linker.nativeLinker(),
          RdpNativeJson.lookup(),
          arena,
          new JSONObject().put("brokers", brokers).put("topic", topic).toString(),
          dataset);
    }
    String group = topic + "-g";
    String first = run("EltStream.java", brokers, topic, group, dir.toString());
    assertTrue(first.contains("landed 30 rows"), first);
    assertTrue(first.contains("SQL over 30 landed rows: 3 groups in "), first);
    assertTrue(Files.size(dir.resolve("curated/by_name.parquet")) > 0);
    // The second run resumes after the committed offsets: nothing new lands.
    String second = run("EltStream.java", brokers, topic, group, dir.toString());
    assertTrue(second.contains("landed 0 rows"), second);
    assertTrue(second.contains("SQL over 30 landed rows: 3 groups"), second);
  }

  /** Run examples/java/NAME with this build's classes and the kelt library; return stdout. */
  static String run(String example, String... args) throws Exception {
    Path source = TestEnv.root().resolve("examples/java").resolve(example);
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-D" + KeltLibrary.PROPERTY + "=" + KeltLibrary.path());
    cmd.add("-cp");
    cmd.add(classpath);
    cmd.add(source.toString());
    cmd.addAll(List.of(args));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    byte[] out = p.getInputStream().readAllBytes();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), example + " timed out");
    String text = new String(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), example + " failed:\n" + text);
    return text;
  }
}
