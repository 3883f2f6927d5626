// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The stream loop from Java: Extract → Load → land → SQL (the Java version of
// examples/cpp/elt_parquet.cc). A KeltConsumer polls windows loaded into a landing schema;
// each window is landed as an NDJSON file (written and fsynced) and only then committed; once
// the topic is drained, rdp_run_pipeline_json runs SQL over everything landed into Parquet.
// Run it twice: the second run lands nothing new (the group's offsets were committed).
//
// Usage: EltStream BOOTSTRAP TOPIC GROUP DIRECTORY      (payloads like {"id":1,"name":"a"})
//   java --enable-native-access=ALL-UNNAMED -Dkelt.library=build/release/capi/libkelt.so \
//     -cp java/target/classes:$HOME/.m2/repository/org/json/json/20250517/json-20250517.jar \
//     examples/java/EltStream.java 127.0.0.1:9092 events elt-java /tmp/elt-java
import dev.kelt.KeltConsumer;
import dev.kelt.KeltWindow;
import dev.kelt.RdpNativeJson;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.json.JSONArray;
import org.json.JSONObject;

public class EltStream {
  public static void main(String[] args) throws IOException {
    if (args.length != 4) {
      System.err.println("usage: EltStream BOOTSTRAP TOPIC GROUP DIRECTORY");
      System.exit(2);
    }
    Path landing = Path.of(args[3], "landing");
    Files.createDirectories(landing);
    String config =
        new JSONObject()
            .put("brokers", args[0])
            .put("topic", args[1])
            .put("group_id", args[2])
            .put("max_records", 1000)
            .put("max_wait_ms", 5000)
            .toString();
    String schema =
        "{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
            + "{\"name\":\"name\",\"data_type\":\"Utf8\"},"
            + "{\"name\":\"_kafka_partition\",\"data_type\":\"Int64\"},"
            + "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";

    long landed = 0;
    try (KeltConsumer consumer = KeltConsumer.open(config, schema)) {
      int idle = 0;
      while (true) {
        try (KeltWindow window = consumer.poll()) {
          if (window.numRecords() == 0) {
            // Drained: every partition at its end. A window that hit its deadline empty may
            // have been waiting for the group's assignment, so give that a few tries.
            if (window.info().getString("end").equals("end_of_partitions") || ++idle >= 3) break;
            continue;
          }
          idle = 0;
          JSONObject info = window.info();
          JSONObject first = info.getJSONArray("spans").getJSONObject(0);
          Path file =
              landing.resolve(
                  "p" + first.getLong("partition") + "-" + first.getLong("first_offset") + ".json");
          writeDurably(file, toNdjson(window.toDataSet()));
          consumer.commit(window); // only after the file is on disk
          landed += window.numRows();
        }
      }
    }
    System.out.println("landed " + landed + " rows");

    if (!hasFiles(landing)) {
      System.out.println("nothing landed yet; no SQL to run");
      return;
    }
    String pipeline =
        new JSONObject()
            .put("pipeline_spec_version", 1)
            .put(
                "sources",
                new JSONObject()
                    .put("paths", new JSONArray().put(landing.resolve("*.json").toString()))
                    .put("options", new JSONObject().put("format", "json")))
            .put(
                "transform",
                new JSONObject()
                    .put("sql", "SELECT name, count(*) AS n, max(id) AS max_id FROM df GROUP BY name"))
            .put(
                "sinks",
                new JSONArray()
                    .put(
                        new JSONObject()
                            .put("kind", "parquet_file")
                            .put("path", Path.of(args[3], "curated", "by_name.parquet").toString())))
            .toString();
    try (Arena arena = Arena.ofConfined()) {
      JSONObject out =
          RdpNativeJson.invokeRunPipelineJson(
              Linker.nativeLinker(), RdpNativeJson.lookup(), arena, pipeline);
      JSONObject sink = out.getJSONArray("sink_results").getJSONObject(0);
      System.out.println(
          "SQL over "
              + out.getLong("ingested_row_count")
              + " landed rows: "
              + sink.getLong("row_count")
              + " groups in "
              + sink.getString("path"));
    }
  }

  /** One JSON object per landed row, keyed by column name. */
  static String toNdjson(JSONObject dataset) {
    JSONArray fields = dataset.getJSONObject("schema").getJSONArray("fields");
    JSONArray rows = dataset.getJSONArray("rows");
    StringBuilder out = new StringBuilder();
    for (int r = 0; r < rows.length(); r++) {
      JSONArray row = rows.getJSONArray(r);
      JSONObject obj = new JSONObject();
      for (int c = 0; c < fields.length(); c++) {
        String name = fields.getJSONObject(c).getString("name");
        Object cell = row.get(c);
        if (cell instanceof JSONObject v) {
          obj.put(name, v.get(v.keys().next())); // {"Int64":1} → 1
        } else {
          obj.put(name, JSONObject.NULL); // "Null"
        }
      }
      out.append(obj).append('\n');
    }
    return out.toString();
  }

  static void writeDurably(Path file, String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try (FileChannel ch =
        FileChannel.open(
            tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
      ch.force(true);
    }
    Files.move(tmp, file, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
  }

  static boolean hasFiles(Path dir) throws IOException {
    try (var s = Files.list(dir)) {
      return s.anyMatch(p -> p.toString().endsWith(".json"));
    }
  }
}
