// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RdpNativeJsonTest {
  static final Linker LINKER = Linker.nativeLinker();
  static final SymbolLookup LOOKUP = RdpNativeJson.lookup();
  static final String SCHEMA =
      "{\"fields\":[{\"name\":\"user_id\",\"data_type\":\"Int64\"},"
          + "{\"name\":\"score\",\"data_type\":\"Float64\"},"
          + "{\"name\":\"event\",\"data_type\":\"Utf8\"},"
          + "{\"name\":\"_kafka_partition\",\"data_type\":\"Int64\"},"
          + "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";

  @Test
  void abiVersionIsRdps() {
    assertEquals(406, RdpNativeJson.abiVersion(LINKER, LOOKUP));
  }

  @Test
  void loadsRecords() {
    String records =
        new JSONObject()
            .put(
                "records",
                new JSONArray()
                    .put(record("events", 0, 5, "{\"user_id\":7,\"score\":1.5,\"event\":\"é\"}"))
                    .put(record("events", 2, 9, "{\"user_id\":8}")))
            .toString();
    try (Arena arena = Arena.ofConfined()) {
      JSONObject out =
          RdpNativeJson.invokeKafkaEltLoadRecordsJson(LINKER, LOOKUP, arena, records, SCHEMA);
      assertEquals("kafka_elt_load", out.getString("kind"));
      JSONArray rows = out.getJSONObject("dataset").getJSONArray("rows");
      assertEquals(2, rows.length());
      JSONArray r0 = rows.getJSONArray(0);
      assertEquals(7, r0.getJSONObject(0).getLong("Int64"));
      assertEquals(1.5, r0.getJSONObject(1).getDouble("Float64"));
      assertEquals("é", r0.getJSONObject(2).getString("Utf8"));
      assertEquals(0, r0.getJSONObject(3).getLong("Int64"));
      assertEquals(5, r0.getJSONObject(4).getLong("Int64"));
      JSONArray r1 = rows.getJSONArray(1);
      assertEquals("Null", r1.getString(1));
      assertEquals(2, r1.getJSONObject(3).getLong("Int64"));
    }
  }

  @Test
  void errorsCarryTheContractsTexts() {
    try (Arena arena = Arena.ofConfined()) {
      RdpNativeException e =
          assertThrows(
              RdpNativeException.class,
              () -> RdpNativeJson.invokeKafkaEltLoadRecordsJson(LINKER, LOOKUP, arena, null, SCHEMA));
      assertEquals("records_json: null pointer", e.getMessage());
      assertNull(e.errorObject());

      e =
          assertThrows(
              RdpNativeException.class,
              () -> RdpNativeJson.invokeKafkaEltLoadRecordsJson(LINKER, LOOKUP, arena, "[]", "{"));
      assertTrue(e.getMessage().startsWith("schema JSON: "), e.getMessage());

      e =
          assertThrows(
              RdpNativeException.class,
              () ->
                  RdpNativeJson.invokeKafkaEltLoadRecordsJson(
                      LINKER,
                      LOOKUP,
                      arena,
                      "[{\"topic\":\"t\",\"partition\":0,\"offset\":1,"
                          + "\"value\":\"{\\\"user_id\\\":\\\"x\\\"}\"}]",
                      SCHEMA));
      assertTrue(
          e.getMessage().startsWith("schema mismatch: kafka value int64 cast failed"),
          e.getMessage());

      e =
          assertThrows(
              RdpNativeException.class,
              () -> RdpNativeJson.invokeKafkaPollWindowJson(LINKER, LOOKUP, arena, "{\"brokers\""));
      assertTrue(e.getMessage().startsWith("config JSON: "), e.getMessage());

      e =
          assertThrows(
              RdpNativeException.class,
              () ->
                  RdpNativeJson.invokeKafkaPollWindowLoadedJson(
                      LINKER,
                      LOOKUP,
                      arena,
                      "{\"brokers\":\"localhost:1\",\"group_id\":\"g\",\"topic\":\"\"}",
                      SCHEMA));
      assertEquals("kafka topic must not be empty", e.getMessage());

      e =
          assertThrows(
              RdpNativeException.class,
              () ->
                  RdpNativeJson.invokeKafkaExportDatasetJson(
                      LINKER, LOOKUP, arena, "{\"brokers\":\"b\",\"topic\":\"t\"}", "{\"rows\":"));
      assertTrue(e.getMessage().startsWith("dataset JSON: "), e.getMessage());

      e =
          assertThrows(
              RdpNativeException.class,
              () -> RdpNativeJson.invokeRunPipelineJson(LINKER, LOOKUP, arena, "{}"));
      assertEquals("parse", e.errorObject().getString("stage"));
    }
  }

  @Test
  void invalidUtf8IsReportedNotThrown() throws Throwable {
    // Java strings always encode to valid UTF-8, so pass raw bytes through the handle.
    MethodHandle load =
        KeltLibrary.downcall(
            LINKER,
            LOOKUP,
            "rdp_kafka_elt_load_records_json",
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS, ADDRESS));
    MethodHandle free =
        KeltLibrary.downcall(
            LINKER, LOOKUP, "rdp_json_slice_free", FunctionDescriptor.ofVoid(RdpNativeJson.SLICE));
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment slice = arena.allocate(RdpNativeJson.SLICE);
      MemorySegment bad = arena.allocateFrom(JAVA_BYTE, (byte) '[', (byte) 0xC3, (byte) 0x28, (byte) 0);
      load.invokeExact(slice, bad, arena.allocateFrom(SCHEMA));
      long len = slice.get(JAVA_LONG, 8);
      String env =
          new String(
              slice.get(ADDRESS, 0).reinterpret(len).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
      free.invokeExact(slice);
      assertEquals(
          "{\"ok\":false,\"error\":\"records_json: invalid UTF-8: invalid byte sequence at byte"
              + " offset 1\"}",
          env);
      // Non-ASCII text round-trips intact.
      JSONObject out =
          RdpNativeJson.invokeKafkaEltLoadRecordsJson(
              LINKER,
              LOOKUP,
              arena,
              "[{\"topic\":\"t\",\"partition\":0,\"offset\":1,\"value\":\"日本\"}]",
              "{\"fields\":[{\"name\":\"v\",\"data_type\":\"Utf8\"}]}");
      assertEquals(
          "日本",
          out.getJSONObject("dataset")
              .getJSONArray("rows")
              .getJSONArray(0)
              .getJSONObject(0)
              .getString("Utf8"));
    }
  }

  @Test
  void runsAPipeline(@TempDir Path dir) throws Exception {
    Path input = dir.resolve("in.csv");
    Files.writeString(input, "id,v\n1,2.5\n2,4.0\n3,1.0\n");
    String doc =
        new JSONObject()
            .put("pipeline_spec_version", 1)
            .put(
                "sources",
                new JSONObject()
                    .put("paths", new JSONArray().put(input.toString()))
                    .put("options", new JSONObject().put("format", "csv")))
            .put("transform", new JSONObject().put("sql", "SELECT id FROM df WHERE v > 2"))
            .put(
                "sinks",
                new JSONArray()
                    .put(
                        new JSONObject()
                            .put("kind", "parquet_file")
                            .put("path", dir.resolve("out.parquet").toString())))
            .toString();
    try (Arena arena = Arena.ofConfined()) {
      JSONObject out = RdpNativeJson.invokeRunPipelineJson(LINKER, LOOKUP, arena, doc);
      assertEquals("run_pipeline_json", out.getString("kind"));
      assertEquals(3, out.getLong("ingested_row_count"));
      JSONObject sink = out.getJSONArray("sink_results").getJSONObject(0);
      assertEquals("ok", sink.getString("status"));
      assertEquals(2, sink.getLong("row_count"));
    }
    assertTrue(Files.size(dir.resolve("out.parquet")) > 0);
  }

  static JSONObject record(String topic, int partition, long offset, String value) {
    return new JSONObject()
        .put("topic", topic)
        .put("partition", partition)
        .put("offset", offset)
        .put("value", value);
  }
}
