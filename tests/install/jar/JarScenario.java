// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// The Java leg of the tri-language scenario (docs/RDP_COMPATIBILITY.md §9) as a user of the
// kelt jar runs it: a single-file program started with only the jar and its Maven
// dependencies on the classpath, no RDP_JVM_SYS, no -Dkelt.library, no checkout
// (tests/install/jar_test.sh). libkelt.so must come from the jar.
//
//   javac -cp kelt.jar:json.jar -d classes JarScenario.java
//   java --enable-native-access=ALL-UNNAMED -cp kelt.jar:json.jar:classes JarScenario \
//       BROKERS CSV LANDING_SCHEMA
//
// One one-row DataSet per CSV row through rdp_kafka_export_dataset_json, one
// rdp_kafka_poll_window_loaded_json with a fresh group, every landed row compared with its
// CSV row. Exits non-zero, naming the first difference, on any failure.
import dev.kelt.KeltLibrary;
import dev.kelt.RdpNativeJson;
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

public class JarScenario {
  record Pickup(String time, String lat, String lon, String base) {}

  static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  public static void main(String[] args) throws Exception {
    String brokers = args[0];
    List<Pickup> csv = readCsv(Path.of(args[1]));
    String landing = Files.readString(Path.of(args[2]));
    String topic = "uber-jar-" + ProcessHandle.current().pid() + "-" + System.nanoTime();

    Linker linker = Linker.nativeLinker();
    SymbolLookup lookup = RdpNativeJson.lookup();
    String from = KeltLibrary.loadedFrom();
    check(from.startsWith("the classpath"), "libkelt.so loaded from " + from + ", not the jar");
    check(RdpNativeJson.abiVersion(linker, lookup) == 406, "rdp_ffi_abi_version is not 406");
    System.out.println("[jar_test]    libkelt.so from " + from);

    String producer = new JSONObject().put("brokers", brokers).put("topic", topic).toString();
    String schema =
        "{\"fields\":[{\"name\":\"pickup_time\",\"data_type\":\"Utf8\"},"
            + "{\"name\":\"lat\",\"data_type\":\"Float64\"},"
            + "{\"name\":\"lon\",\"data_type\":\"Float64\"},"
            + "{\"name\":\"base_code\",\"data_type\":\"Utf8\"}]}";
    long start = System.nanoTime();
    try (Arena arena = Arena.ofConfined()) {
      for (Pickup p : csv) {
        String dataset =
            "{\"schema\":" + schema + ",\"rows\":[[{\"Utf8\":" + JSONObject.quote(p.time())
                + "},{\"Float64\":" + p.lat() + "},{\"Float64\":" + p.lon()
                + "},{\"Utf8\":" + JSONObject.quote(p.base()) + "}]]}";
        JSONObject out =
            RdpNativeJson.invokeKafkaExportDatasetJson(linker, lookup, arena, producer, dataset);
        check(out.getLong("row_count") == 1, "export: " + out);
      }
    }
    String consumer =
        new JSONObject()
            .put("brokers", brokers)
            .put("group_id", topic + "-group")
            .put("topic", topic)
            .put("max_records", csv.size())
            .put("auto_offset_reset", "earliest")
            .toString();
    JSONObject loaded;
    try (Arena arena = Arena.ofConfined()) {
      loaded = RdpNativeJson.invokeKafkaPollWindowLoadedJson(linker, lookup, arena, consumer, landing);
    }
    JSONArray rows = loaded.getJSONObject("dataset").getJSONArray("rows");
    check(rows.length() == csv.size(), rows.length() + " rows landed, " + csv.size() + " produced");
    List<JSONArray> ordered = new ArrayList<>();
    for (int i = 0; i < rows.length(); i++) ordered.add(rows.getJSONArray(i));
    ordered.sort(Comparator.comparingLong((JSONArray r) -> r.getJSONObject(4).getLong("Int64")));
    for (int i = 0; i < csv.size(); i++) {
      Pickup want = csv.get(i);
      JSONArray got = ordered.get(i);
      String where = "row " + i + ": " + got;
      check(got.getJSONObject(4).getLong("Int64") == i, where + " (offset)");
      check(want.time().equals(got.getJSONObject(0).getString("Utf8")), where + " (pickup_time)");
      check(Double.parseDouble(want.lat()) == got.getJSONObject(1).getDouble("Float64"), where + " (lat)");
      check(Double.parseDouble(want.lon()) == got.getJSONObject(2).getDouble("Float64"), where + " (lon)");
      check(want.base().equals(got.getJSONObject(3).getString("Utf8")), where + " (base_code)");
    }
    System.out.printf(
        "[jar_test]    uber scenario (Java, from the jar): %d rows exported one DataSet each,"
            + " polled and landed, every field equal, in %.1f s%n",
        csv.size(), (System.nanoTime() - start) / 1e9);
  }

  /** The sample's CSV: a header, then "time",lat,lon,"base" (no quotes inside fields). */
  static List<Pickup> readCsv(Path path) throws Exception {
    List<String> lines = Files.readAllLines(path);
    check(lines.get(0).equals("\"Date/Time\",\"Lat\",\"Lon\",\"Base\""), "CSV header: " + lines.get(0));
    List<Pickup> out = new ArrayList<>();
    for (String line : lines.subList(1, lines.size())) {
      if (line.isEmpty()) continue;
      String[] f = line.split(",", -1);
      check(f.length == 4, "CSV line: " + line);
      out.add(new Pickup(unquote(f[0]), f[1], f[2], unquote(f[3])));
    }
    return out;
  }

  static String unquote(String s) {
    return s.startsWith("\"") && s.endsWith("\"") ? s.substring(1, s.length() - 1) : s;
  }
}
