// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Bring your own records → Load, from Java: the Java version of examples/cpp/byo_load.cc
// (RDP's kafka_elt_byo_load). Records you already have (from any client, a file, a test) are
// loaded into a landing schema by libkelt.so; nothing talks to Kafka.
//
// Run (after `cmake --build --preset release` and `mvn -q -f java/pom.xml compile`):
//   java --enable-native-access=ALL-UNNAMED -Dkelt.library=build/release/capi/libkelt.so \
//     -cp java/target/classes:$HOME/.m2/repository/org/json/json/20250517/json-20250517.jar \
//     examples/java/ByoLoad.java
import dev.kelt.RdpNativeJson;
import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import org.json.JSONArray;
import org.json.JSONObject;

public class ByoLoad {
  public static void main(String[] args) {
    String landing =
        "{\"fields\":[{\"name\":\"user_id\",\"data_type\":\"Int64\"},"
            + "{\"name\":\"event\",\"data_type\":\"Utf8\"},"
            + "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";
    String records =
        "{\"records\":[{\"topic\":\"events\",\"partition\":0,\"offset\":1,"
            + "\"value\":\"{\\\"user_id\\\":1,\\\"event\\\":\\\"click\\\"}\"}]}";
    try (Arena arena = Arena.ofConfined()) {
      JSONObject loaded =
          RdpNativeJson.invokeKafkaEltLoadRecordsJson(
              Linker.nativeLinker(), RdpNativeJson.lookup(), arena, records, landing);
      JSONObject dataset = loaded.getJSONObject("dataset");
      JSONArray rows = dataset.getJSONArray("rows");
      System.out.println("landed " + rows.length() + " row(s):");
      for (int i = 0; i < rows.length(); i++) System.out.println("  " + rows.getJSONArray(i));
    }
    // Next: land it (Parquet / PostgreSQL / DuckDB), then Transform separately.
  }
}
