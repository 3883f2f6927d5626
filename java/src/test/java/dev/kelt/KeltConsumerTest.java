// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.json.JSONArray;
import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/** The AutoCloseable consumer over kelt_* handles, against the real broker. */
class KeltConsumerTest {
  static final String SCHEMA =
      "{\"fields\":[{\"name\":\"id\",\"data_type\":\"Int64\"},"
          + "{\"name\":\"name\",\"data_type\":\"Utf8\"},"
          + "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";

  @Test
  void badConfigIsAnInvalidException() {
    KeltException e =
        assertThrows(
            KeltException.class,
            () -> KeltConsumer.open("{\"brokers\":\"b\",\"group_id\":\"\",\"topic\":\"t\"}", SCHEMA));
    assertEquals("INVALID", e.code());
    assertFalse(e.retriable());
    assertEquals("INVALID: kafka group_id must not be empty", e.getMessage());

    e = assertThrows(KeltException.class, () -> KeltConsumer.open("{", SCHEMA));
    assertTrue(e.getMessage().contains("config JSON: "), e.getMessage());

    e =
        assertThrows(
            KeltException.class,
            () ->
                KeltConsumer.open(
                    "{\"brokers\":\"b\",\"group_id\":\"g\",\"topic\":\"t\"}",
                    "{\"fields\":[{\"name\":\"x\",\"data_type\":\"Int32\"}]}"));
    assertTrue(e.getMessage().contains("schema JSON: "), e.getMessage());
  }

  @Test
  void pollsCommitsAndResumes() throws Exception {
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("java-consumer");
    int n = 120;
    produce(brokers, topic, 0, n);
    String config =
        new JSONObject()
            .put("brokers", brokers)
            .put("group_id", topic + "-g")
            .put("topic", topic)
            .put("max_records", 50)
            .put("max_wait_ms", 10000)
            .toString();
    List<Long> ids = new ArrayList<>();
    try (KeltConsumer consumer = KeltConsumer.open(config, SCHEMA)) {
      for (int polls = 0; polls < 20 && ids.size() < n; polls++) {
        try (KeltWindow w = consumer.poll()) {
          assertTrue(w.numRows() <= 50);
          assertEquals(w.numRecords(), w.numRows());
          JSONArray rows = w.toDataSet().getJSONArray("rows");
          for (int i = 0; i < rows.length(); i++) {
            JSONArray row = rows.getJSONArray(i);
            long id = row.getJSONObject(0).getLong("Int64");
            assertEquals("row " + id, row.getJSONObject(1).getString("Utf8"));
            assertEquals(id, row.getJSONObject(2).getLong("Int64")); // offset == id here
            ids.add(id);
          }
          consumer.commit(w);
        }
      }
      assertEquals(n, ids.size());
      for (int i = 0; i < n; i++) assertEquals(i, ids.get(i));
      assertEquals(0, consumer.lag(5000).getLong("total_lag"));
    }
    // The group resumes after what was committed.
    produce(brokers, topic, n, 5);
    try (KeltConsumer consumer = KeltConsumer.open(config, SCHEMA)) {
      long got = 0;
      for (int polls = 0; polls < 10 && got < 5; polls++) {
        try (KeltWindow w = consumer.poll()) {
          JSONArray rows = w.toDataSet().getJSONArray("rows");
          for (int i = 0; i < rows.length(); i++) {
            assertTrue(rows.getJSONArray(i).getJSONObject(0).getLong("Int64") >= n);
          }
          got += rows.length();
          JSONObject info = w.info();
          assertEquals(rows.length(), info.getLong("rows"));
        }
      }
      assertEquals(5, got);
    }
  }

  @Test
  void windowExportsAnArrowCStream() throws Throwable {
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("java-arrow");
    produce(brokers, topic, 0, 10);
    String config =
        new JSONObject()
            .put("brokers", brokers)
            .put("group_id", topic + "-g")
            .put("topic", topic)
            .put("max_records", 10)
            .toString();
    Linker linker = Linker.nativeLinker();
    KeltWindow window;
    try (KeltConsumer consumer = KeltConsumer.open(config, SCHEMA)) {
      window = consumer.poll();
    }
    // The window outlives its consumer; the stream outlives the window.
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment stream = arena.allocate(40, 8); // struct ArrowArrayStream
      assertEquals(10, window.numRows());
      window.exportArrowStream(stream);
      window.close();
      MethodHandle getSchema =
          linker.downcallHandle(
              stream.get(ADDRESS, 0), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
      MethodHandle getNext =
          linker.downcallHandle(
              stream.get(ADDRESS, 8), FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
      MemorySegment schema = arena.allocate(72, 8); // struct ArrowSchema
      assertEquals(0, (int) getSchema.invokeExact(stream, schema));
      assertEquals(3, schema.get(JAVA_LONG, 32)); // n_children
      MemorySegment children = schema.get(ADDRESS, 40).reinterpret(24);
      MemorySegment idField = children.get(ADDRESS, 0).reinterpret(72);
      assertEquals("id", KeltNative.cString(idField.get(ADDRESS, 8)));
      assertEquals("l", KeltNative.cString(idField.get(ADDRESS, 0)));
      release(linker, schema, 56);
      MemorySegment array = arena.allocate(80, 8); // struct ArrowArray
      assertEquals(0, (int) getNext.invokeExact(stream, array));
      assertEquals(10, array.get(JAVA_LONG, 0)); // length
      // The id column's values buffer, read in place.
      MemorySegment idArray = array.get(ADDRESS, 48).reinterpret(24).get(ADDRESS, 0).reinterpret(80);
      MemorySegment values = idArray.get(ADDRESS, 40).reinterpret(16).get(ADDRESS, 8);
      long sum = 0;
      MemorySegment v = values.reinterpret(8 * 10);
      for (int i = 0; i < 10; i++) sum += v.getAtIndex(JAVA_LONG, i);
      assertEquals(45, sum);
      release(linker, array, 64);
      assertEquals(0, (int) getNext.invokeExact(stream, array));
      assertEquals(MemorySegment.NULL, array.get(ADDRESS, 64)); // end of stream
      release(linker, stream, 24);
    }
  }

  @Test
  void windowAsAnArrowJavaReader() throws Exception {
    String brokers = TestEnv.bootstrap();
    String topic = TestEnv.unique("java-arrow-reader");
    produce(brokers, topic, 0, 25);
    String config =
        new JSONObject()
            .put("brokers", brokers)
            .put("group_id", topic + "-g")
            .put("topic", topic)
            .put("max_records", 25)
            .toString();
    try (BufferAllocator allocator = new RootAllocator();
        KeltConsumer consumer = KeltConsumer.open(config, SCHEMA)) {
      ArrowReader reader;
      try (KeltWindow window = consumer.poll()) {
        assertEquals(25, window.numRows());
        reader = KeltArrow.reader(window, allocator);
        consumer.commit(window);
      }
      try (reader) { // the window is gone; the reader still holds the native buffers
        VectorSchemaRoot root = reader.getVectorSchemaRoot();
        assertEquals(List.of("id", "name", "_kafka_offset"), root.getSchema().getFields().stream().map(f -> f.getName()).toList());
        assertTrue(reader.loadNextBatch());
        assertEquals(25, root.getRowCount());
        BigIntVector ids = (BigIntVector) root.getVector("id");
        VarCharVector names = (VarCharVector) root.getVector("name");
        BigIntVector offsets = (BigIntVector) root.getVector("_kafka_offset");
        for (int i = 0; i < 25; i++) {
          assertEquals(i, ids.get(i));
          assertEquals("row " + i, new String(names.get(i), StandardCharsets.UTF_8));
          assertEquals(i, offsets.get(i));
        }
        assertFalse(reader.loadNextBatch());
      }
    }
  }

  static void release(Linker linker, MemorySegment struct, long releaseOffset) throws Throwable {
    MethodHandle release =
        linker.downcallHandle(struct.get(ADDRESS, releaseOffset), FunctionDescriptor.ofVoid(ADDRESS));
    release.invokeExact(struct);
  }

  /** Produce rows {id, name} from..from+n-1 with rdp_kafka_export_dataset_json. */
  static void produce(String brokers, String topic, int from, int n) {
    JSONArray rows = new JSONArray();
    for (int i = from; i < from + n; i++) {
      rows.put(
          new JSONArray()
              .put(new JSONObject().put("Int64", i))
              .put(new JSONObject().put("Utf8", "row " + i)));
    }
    JSONObject dataset =
        new JSONObject()
            .put(
                "schema",
                new JSONObject()
                    .put(
                        "fields",
                        new JSONArray()
                            .put(new JSONObject().put("name", "id").put("data_type", "Int64"))
                            .put(new JSONObject().put("name", "name").put("data_type", "Utf8"))))
            .put("rows", rows);
    String producer = new JSONObject().put("brokers", brokers).put("topic", topic).toString();
    try (Arena arena = Arena.ofConfined()) {
      JSONObject out =
          RdpNativeJson.invokeKafkaExportDatasetJson(
              Linker.nativeLinker(), RdpNativeJson.lookup(), arena, producer, dataset.toString());
      assertEquals(n, out.getLong("row_count"));
      assertEquals(topic, out.getString("topic"));
    }
  }
}
