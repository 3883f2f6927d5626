// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * The Java leg of the tri-language scenario (RDP_COMPATIBILITY.md §9) on the real broker: one one-row
 * DataSet per CSV row through rdp_kafka_export_dataset_json, then one
 * rdp_kafka_poll_window_loaded_json with a fresh group, and every landed row compared with its
 * CSV row.
 */
class UberScenarioTest {
  record Pickup(String time, String latText, String lonText, String base) {}

  @Test
  void everyCsvRowLandsWithItsContent() throws Exception {
    Path root = TestEnv.root();
    List<Pickup> csv = readCsv(root.resolve("tests/fixtures/uber/uber_apr14_sample.csv"));
    assertEquals(3000, csv.size());
    String landing = Files.readString(root.resolve("tests/fixtures/uber/landing_schema.json"));
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("uber-java");
    Linker linker = Linker.nativeLinker();
    SymbolLookup lookup = RdpNativeJson.lookup();
    String producer = new JSONObject().put("brokers", brokers).put("topic", topic).toString();
    String schema =
        "{\"fields\":[{\"name\":\"pickup_time\",\"data_type\":\"Utf8\"},"
            + "{\"name\":\"lat\",\"data_type\":\"Float64\"},"
            + "{\"name\":\"lon\",\"data_type\":\"Float64\"},"
            + "{\"name\":\"base_code\",\"data_type\":\"Utf8\"}]}";

    long start = System.nanoTime();
    try (Arena arena = Arena.ofConfined()) {
      for (Pickup p : csv) {
        // The CSV's number text goes into the JSON as is: what lands must parse to the same
        // double as the CSV text.
        String dataset =
            "{\"schema\":"
                + schema
                + ",\"rows\":[[{\"Utf8\":"
                + JSONObject.quote(p.time())
                + "},{\"Float64\":"
                + p.latText()
                + "},{\"Float64\":"
                + p.lonText()
                + "},{\"Utf8\":"
                + JSONObject.quote(p.base())
                + "}]]}";
        JSONObject out =
            RdpNativeJson.invokeKafkaExportDatasetJson(linker, lookup, arena, producer, dataset);
        assertEquals(1, out.getLong("row_count"));
      }
    }
    long produced = System.nanoTime();

    String consumer =
        new JSONObject()
            .put("brokers", brokers)
            .put("group_id", TestEnv.unique("uber-java-group"))
            .put("topic", topic)
            .put("max_records", csv.size())
            .put("auto_offset_reset", "earliest")
            .toString();
    JSONObject loaded;
    try (Arena arena = Arena.ofConfined()) {
      loaded =
          RdpNativeJson.invokeKafkaPollWindowLoadedJson(linker, lookup, arena, consumer, landing);
    }
    long polled = System.nanoTime();
    assertEquals("kafka_poll_window_loaded", loaded.getString("kind"));
    JSONObject ds = loaded.getJSONObject("dataset");
    JSONArray fields = ds.getJSONObject("schema").getJSONArray("fields");
    List<String> names = new ArrayList<>();
    for (int i = 0; i < fields.length(); i++) names.add(fields.getJSONObject(i).getString("name"));
    assertEquals(
        List.of("pickup_time", "lat", "lon", "base_code", "_kafka_offset", "_kafka_partition"),
        names);

    JSONArray rows = ds.getJSONArray("rows");
    assertEquals(csv.size(), rows.length(), "every produced row lands");
    List<JSONArray> ordered = new ArrayList<>();
    for (int i = 0; i < rows.length(); i++) ordered.add(rows.getJSONArray(i));
    ordered.sort(
        Comparator.comparingLong((JSONArray r) -> r.getJSONObject(5).getLong("Int64"))
            .thenComparingLong(r -> r.getJSONObject(4).getLong("Int64")));
    for (int i = 0; i < csv.size(); i++) {
      Pickup want = csv.get(i);
      JSONArray got = ordered.get(i);
      String where = "row " + i + " (" + got + ")";
      assertEquals(0, got.getJSONObject(5).getLong("Int64"), where); // one partition
      assertEquals(i, got.getJSONObject(4).getLong("Int64"), where); // offset = CSV order
      assertEquals(want.time(), got.getJSONObject(0).getString("Utf8"), where);
      assertEquals(Double.parseDouble(want.latText()), got.getJSONObject(1).getDouble("Float64"), 0.0, where);
      assertEquals(Double.parseDouble(want.lonText()), got.getJSONObject(2).getDouble("Float64"), 0.0, where);
      assertEquals(want.base(), got.getJSONObject(3).getString("Utf8"), where);
    }
    System.out.printf(
        "uber scenario (Java): %d rows produced one DataSet each in %.1f s, polled and landed in"
            + " %.2f s%n",
        csv.size(), (produced - start) / 1e9, (polled - produced) / 1e9);
  }

  /** Read the CSV: a quoted header, then "time",lat,lon,"base" per line. */
  static List<Pickup> readCsv(Path path) throws Exception {
    List<String> lines = Files.readAllLines(path);
    assertEquals(List.of("Date/Time", "Lat", "Lon", "Base"), splitCsv(lines.get(0)));
    List<Pickup> out = new ArrayList<>();
    for (String line : lines.subList(1, lines.size())) {
      if (line.isEmpty()) continue;
      List<String> f = splitCsv(line);
      assertEquals(4, f.size(), line);
      out.add(new Pickup(f.get(0), f.get(1), f.get(2), f.get(3)));
    }
    return out;
  }

  /** Split one CSV line (RFC 4180 quoting: "" inside quotes is a quote). */
  static List<String> splitCsv(String line) {
    List<String> fields = new ArrayList<>();
    StringBuilder cur = new StringBuilder();
    boolean quoted = false;
    for (int i = 0; i < line.length(); i++) {
      char c = line.charAt(i);
      if (quoted) {
        if (c == '"' && i + 1 < line.length() && line.charAt(i + 1) == '"') {
          cur.append('"');
          i++;
        } else if (c == '"') {
          quoted = false;
        } else {
          cur.append(c);
        }
      } else if (c == '"') {
        quoted = true;
      } else if (c == ',') {
        fields.add(cur.toString());
        cur.setLength(0);
      } else {
        cur.append(c);
      }
    }
    fields.add(cur.toString());
    return fields;
  }
}
