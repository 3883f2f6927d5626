// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// A window into Java two ways: DataSet JSON (KeltWindow.toDataSet, parsed by org.json) vs
// arrow-java over the Arrow C stream (KeltArrow.reader, zero copy). Produces N rows
// (id Int64, name Utf8, v Float64) to a fresh topic, polls them as one window, then reads the
// id column each way three times (the first arrow-java run includes loading its JNI library).
//
// Usage (after `cd java && mvn -q compile dependency:build-classpath -Dmdep.outputFile=cp.txt
// -Dmdep.includeScope=test`):
//   $KELT_JAVA25_HOME/bin/java --enable-native-access=ALL-UNNAMED \
//     --add-opens=java.base/java.nio=ALL-UNNAMED -Dkelt.library=build/release/capi/libkelt.so \
//     -cp java/target/classes:$(cat java/cp.txt) bench/java/WindowBench.java BOOTSTRAP [ROWS]
import dev.kelt.*;
import java.lang.foreign.*;
import org.apache.arrow.memory.*;
import org.apache.arrow.vector.*;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.json.*;

public class WindowBench {
  public static void main(String[] a) throws Exception {
    String brokers = a[0];
    String topic = "jbench-" + System.nanoTime();
    int n = a.length > 1 ? Integer.parseInt(a[1]) : 200000;
    StringBuilder rows = new StringBuilder();
    for (int i = 0; i < n; i++) {
      if (i > 0) rows.append(',');
      rows.append("[{\"Int64\":").append(i).append("},{\"Utf8\":\"row ").append(i).append("\"},{\"Float64\":").append(i * 0.5).append("}]");
    }
    String ds = "{\"schema\":{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},{\"name\":\"name\",\"data_type\":\"Utf8\"},{\"name\":\"v\",\"data_type\":\"Float64\"}]},\"rows\":[" + rows + "]}";
    try (Arena arena = Arena.ofConfined()) {
      RdpNativeJson.invokeKafkaExportDatasetJson(Linker.nativeLinker(), RdpNativeJson.lookup(), arena,
          "{\"brokers\":\"" + brokers + "\",\"topic\":\"" + topic + "\"}", ds);
    }
    String schema = "{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},{\"name\":\"name\",\"data_type\":\"Utf8\"},{\"name\":\"v\",\"data_type\":\"Float64\"}]}";
    String cfg = "{\"brokers\":\"" + brokers + "\",\"group_id\":\"" + topic + "-g\",\"topic\":\"" + topic + "\",\"max_records\":" + n + ",\"max_wait_ms\":30000}";
    try (KeltConsumer c = KeltConsumer.open(cfg, schema); BufferAllocator al = new RootAllocator()) {
      KeltWindow w = c.poll();
      if (w.numRows() < n) System.out.println("note: the window holds " + w.numRows() + " rows");
      for (int rep = 0; rep < 3; rep++) {
        long s = System.nanoTime();
        JSONObject d = w.toDataSet();
        JSONArray r = d.getJSONArray("rows");
        long sum = 0;
        for (int i = 0; i < r.length(); i++) sum += r.getJSONArray(i).getJSONObject(0).getLong("Int64");
        long e = System.nanoTime();
        System.out.printf("DataSet JSON route: %d rows in %.1f ms (sum %d)%n", r.length(), (e - s) / 1e6, sum);
      }
      for (int rep = 0; rep < 3; rep++) {
        long s = System.nanoTime();
        long sum = 0, rowsSeen = 0;
        try (ArrowReader rd = KeltArrow.reader(w, al)) {
          while (rd.loadNextBatch()) {
            BigIntVector ids = (BigIntVector) rd.getVectorSchemaRoot().getVector("id");
            for (int i = 0; i < ids.getValueCount(); i++) sum += ids.get(i);
            rowsSeen += ids.getValueCount();
          }
        }
        long e = System.nanoTime();
        System.out.printf("arrow-java zero-copy route: %d rows in %.2f ms (sum %d)%n", rowsSeen, (e - s) / 1e6, sum);
      }
      w.close();
    }
  }
}
