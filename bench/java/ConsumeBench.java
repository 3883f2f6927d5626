// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
//
// Consume one JSON topic into arrow-java vectors, window by window: kelt's Java API
// (KeltConsumer.poll, each window read in place over the Arrow C stream with KeltArrow.reader)
// against the way Java users do it today (the Java Kafka client's KafkaConsumer, Jackson
// binding each value to a class, the fields appended to a VectorSchemaRoot per window).
//
//   bash bench/java/consume_benchmark.sh [--records 1000000] [--window 100000]
//       [--partitions 4] [--repetitions 3] [--warmup 100000] [--bootstrap HOST:PORT]
//       [--topic NAME] [--drain] [--fixed-ts]
//
// The topic is produced once (KafkaProducer, JSON records of ~190 bytes: bench/json_corpus.h's
// 8 fields) and each contender reads all of it from the start with a fresh group, in the same
// JVM, paired and interleaved (the order flips every repetition). Each window's every column is
// read (touch); the column sums of both contenders must equal each other and the produced
// ones. Prints records/s, CPU time a record (the whole process: JVM, librdkafka's and the
// Kafka client's threads) and the kelt/baseline ratios.
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import dev.kelt.KeltArrow;
import dev.kelt.KeltConsumer;
import dev.kelt.KeltWindow;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.TimeStampMicroTZVector;
import org.apache.arrow.vector.TimeStampVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowReader;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ConsumeBench {
  private static final String[] EVENTS = {"click", "view", "purchase", "signup", "logout"};
  private static final String[] COUNTRIES = {"NO", "SE", "DE", "US", "JP", "BR"};
  // The landing: the 8 payload fields, then partition and offset (kelt's _kafka_* columns).
  private static final String[] NAMES = {
    "event_id", "user_id", "amount", "is_member", "event", "country", "session", "ts",
    "_kafka_partition", "_kafka_offset"
  };
  private static final String[] KELT_TYPES = {
    "Int64", "Int64", "Float64", "Bool", "Utf8", "Utf8", "Utf8", "Timestamp", "Int64", "Int64"
  };
  // Larger fetches than the clients' 1 MiB per partition; both contenders get the same
  // (bench/python/consume_benchmark.py does the same).
  private static final Map<String, String> FETCH =
      Map.of("max.partition.fetch.bytes", String.valueOf(16 << 20), "fetch.max.bytes",
          String.valueOf(64 << 20));

  /** Column checksums, independent of the order the records arrive in. */
  static final class Sums {
    // rows, event_id, user_id, amount (cents), is_member, 3 x (string bytes, first bytes), ts,
    // partition, offset
    final long[] v = new long[14];

    void addRecord(long eventId, long userId, double amount, boolean member, byte[] event,
        byte[] country, byte[] session, long tsMicros) {
      v[0]++;
      v[1] += eventId;
      v[2] += userId;
      v[3] += Math.round(amount * 100);
      v[4] += member ? 1 : 0;
      addString(5, event);
      addString(7, country);
      addString(9, session);
      v[11] += tsMicros;
    }

    private void addString(int at, byte[] s) {
      v[at] += s.length;
      if (s.length > 0) v[at + 1] += s[0];
    }

    /** The payload part (all but partition and offset), as produced. */
    long[] payload() {
      return Arrays.copyOf(v, 12);
    }
  }

  /** Read every value of every column of a window's batch into {@code sums}. */
  static void touch(VectorSchemaRoot root, Sums sums) {
    int rows = root.getRowCount();
    long[] v = sums.v;
    v[0] += rows;
    BigIntVector eventId = (BigIntVector) root.getVector(0);
    BigIntVector userId = (BigIntVector) root.getVector(1);
    Float8Vector amount = (Float8Vector) root.getVector(2);
    BitVector member = (BitVector) root.getVector(3);
    TimeStampVector ts = (TimeStampVector) root.getVector(7);
    BigIntVector partition = (BigIntVector) root.getVector(8);
    BigIntVector offset = (BigIntVector) root.getVector(9);
    long a = 0, b = 0, c = 0, d = 0, t = 0, p = 0, o = 0;
    for (int i = 0; i < rows; i++) {
      a += eventId.get(i);
      b += userId.get(i);
      c += Math.round(amount.get(i) * 100);
      d += member.get(i);
      t += ts.get(i);
      p += partition.get(i);
      o += offset.get(i);
    }
    v[1] += a;
    v[2] += b;
    v[3] += c;
    v[4] += d;
    v[11] += t;
    v[12] += p;
    v[13] += o;
    for (int col = 4; col <= 6; col++) {
      BaseVariableWidthVector s = (BaseVariableWidthVector) root.getVector(col);
      ArrowBuf offsets = s.getOffsetBuffer();
      ArrowBuf data = s.getDataBuffer();
      long len = 0, first = 0;
      for (int i = 0; i < rows; i++) {
        int start = offsets.getInt(4L * i);
        int end = offsets.getInt(4L * (i + 1));
        len += end - start;
        if (end > start) first += data.getByte(start);
      }
      v[5 + 2 * (col - 4)] += len;
      v[6 + 2 * (col - 4)] += first;
    }
  }

  // splitmix64: record i's random words, the same for the same i.
  private static long mix(long x) {
    x += 0x9E3779B97F4A7C15L;
    x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
    x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
    return x ^ (x >>> 31);
  }

  /** Record i's JSON (bench/json_corpus.h's fields), and its payload added to {@code sums}. */
  static byte[] record(long i, Sums sums) {
    long r = mix(3 * i);
    long s1 = mix(3 * i + 1);
    long s2 = mix(3 * i + 2);
    long ur = r >>> 1;
    long eventId = 1_000_000_000L + i;
    long userId = ur % 10_000_000;
    double amount = (ur % 100_000) / 100.0;
    boolean member = (r & 1) != 0;
    String event = EVENTS[(int) (ur % 5)];
    String country = COUNTRIES[(int) ((ur >>> 8) % 6)];
    String session = hex16(s1) + hex16(s2);
    int day = (int) (1 + (ur >>> 16) % 28);
    int hour = (int) ((ur >>> 24) % 24);
    int minute = (int) ((ur >>> 32) % 60);
    int second = (int) ((ur >>> 40) % 60);
    int milli = (int) ((ur >>> 48) % 1000);
    StringBuilder ts = new StringBuilder(24).append("2024-05-");
    pad(ts, day, 2).append('T');
    pad(ts, hour, 2).append(':');
    pad(ts, minute, 2).append(':');
    pad(ts, second, 2).append('.');
    pad(ts, milli, 3).append('Z');
    // amount has two decimals: cents / 100, written as integer part and two digits.
    long cents = ur % 100_000;
    StringBuilder json = new StringBuilder(200);
    json.append("{\"event_id\":").append(eventId).append(",\"user_id\":").append(userId)
        .append(",\"amount\":").append(cents / 100).append('.');
    pad(json, (int) (cents % 100), 2)
        .append(",\"is_member\":").append(member)
        .append(",\"event\":\"").append(event).append("\",\"country\":\"").append(country)
        .append("\",\"session\":\"").append(session).append("\",\"ts\":\"").append(ts)
        .append("\"}");
    sums.addRecord(eventId, userId, amount, member, event.getBytes(StandardCharsets.UTF_8),
        country.getBytes(StandardCharsets.UTF_8), session.getBytes(StandardCharsets.UTF_8),
        micros(Instant.parse(ts.toString())));
    return json.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static String hex16(long x) {
    String h = Long.toHexString(x);
    return "0".repeat(16 - h.length()) + h;
  }

  private static StringBuilder pad(StringBuilder sb, int value, int digits) {
    String d = Integer.toString(value);
    for (int i = d.length(); i < digits; i++) sb.append('0');
    return sb.append(d);
  }

  /**
   * The micros of an RFC 3339 text "YYYY-MM-DDTHH:MM:SS.mmmZ" read by its fixed layout (what a
   * user tuning the baseline would write instead of {@code Instant.parse}, --fixed-ts); any
   * other layout goes to {@code Instant.parse}.
   */
  static long fixedMicros(String t) {
    if (t.length() != 24 || t.charAt(4) != '-' || t.charAt(7) != '-' || t.charAt(10) != 'T'
        || t.charAt(13) != ':' || t.charAt(16) != ':' || t.charAt(19) != '.'
        || t.charAt(23) != 'Z') {
      return micros(Instant.parse(t));
    }
    long days =
        java.time.LocalDate.of(digits(t, 0, 4), digits(t, 5, 2), digits(t, 8, 2)).toEpochDay();
    long seconds =
        days * 86_400 + digits(t, 11, 2) * 3_600L + digits(t, 14, 2) * 60L + digits(t, 17, 2);
    return seconds * 1_000_000L + digits(t, 20, 3) * 1_000L;
  }

  private static int digits(String t, int at, int count) {
    int v = 0;
    for (int i = at; i < at + count; i++) {
      char c = t.charAt(i);
      if (c < '0' || c > '9') throw new IllegalArgumentException("not a digit in \"" + t + "\"");
      v = v * 10 + (c - '0');
    }
    return v;
  }

  static long micros(Instant t) {
    return t.getEpochSecond() * 1_000_000L + t.getNano() / 1_000;
  }

  /** Produce n records to a new topic; return the payload sums and the bytes a record. */
  static double produce(String brokers, String topic, int partitions, long n, Sums sums)
      throws Exception {
    Properties admin = new Properties();
    admin.put("bootstrap.servers", brokers);
    try (Admin a = Admin.create(admin)) {
      a.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }
    Properties p = new Properties();
    p.put("bootstrap.servers", brokers);
    p.put("key.serializer", ByteArraySerializer.class.getName());
    p.put("value.serializer", ByteArraySerializer.class.getName());
    p.put("linger.ms", "20");
    p.put("batch.size", String.valueOf(1 << 20));
    p.put("acks", "all");
    AtomicReference<Exception> failed = new AtomicReference<>();
    AtomicLong acked = new AtomicLong();
    long bytes = 0;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (long i = 0; i < n; i++) {
        byte[] value = record(i, sums);
        bytes += value.length;
        producer.send(
            new ProducerRecord<>(topic, value),
            (md, e) -> {
              if (e != null) failed.compareAndSet(null, e);
              else acked.incrementAndGet();
            });
      }
      producer.flush();
    }
    if (failed.get() != null) throw new IllegalStateException("producing failed", failed.get());
    if (acked.get() != n) throw new IllegalStateException("produced " + acked.get() + " of " + n);
    return (double) bytes / n;
  }

  interface Contender {
    String name();

    /** Read the first {@code n} records of the topic with a fresh group into {@code sums}. */
    void consume(String brokers, String topic, long n, int window, Sums sums) throws Exception;
  }

  static String json(String s) {
    return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  /** kelt: windows polled and loaded in C++, read in place by arrow-java. */
  static final class Kelt implements Contender {
    private final BufferAllocator allocator;

    Kelt(BufferAllocator allocator) {
      this.allocator = allocator;
    }

    @Override
    public String name() {
      return "kelt (KeltConsumer + KeltArrow)";
    }

    @Override
    public void consume(String brokers, String topic, long n, int window, Sums sums)
        throws Exception {
      StringBuilder schema = new StringBuilder("{\"fields\":[");
      for (int i = 0; i < NAMES.length; i++) {
        if (i > 0) schema.append(',');
        schema.append("{\"name\":").append(json(NAMES[i])).append(",\"data_type\":")
            .append(json(KELT_TYPES[i])).append('}');
      }
      schema.append("]}");
      StringBuilder props = new StringBuilder("{");
      for (Map.Entry<String, String> e : FETCH.entrySet()) {
        if (props.length() > 1) props.append(',');
        props.append(json(e.getKey())).append(':').append(json(e.getValue()));
      }
      props.append('}');
      String config =
          "{\"brokers\":" + json(brokers) + ",\"group_id\":"
              + json("bench-kelt-" + UUID.randomUUID()) + ",\"topic\":" + json(topic)
              + ",\"max_records\":" + Math.min(window, n)
              + ",\"max_wait_ms\":30000,\"auto_offset_reset\":\"earliest\",\"properties\":"
              + props + "}";
      long got = 0;
      try (KeltConsumer consumer = KeltConsumer.open(config, schema.toString())) {
        while (got < n) {
          try (KeltWindow w = consumer.poll()) {
            long rows = w.numRows();
            if (rows == 0) throw new IllegalStateException("kelt: no records after " + got);
            try (ArrowReader reader = KeltArrow.reader(w, allocator)) {
              while (reader.loadNextBatch()) touch(reader.getVectorSchemaRoot(), sums);
            }
            got += rows;
          }
        }
      }
    }
  }

  /** The value's fields, bound by Jackson. */
  public static final class Event {
    public long event_id;
    public long user_id;
    public double amount;
    public boolean is_member;
    public String event;
    public String country;
    public String session;
    public String ts;
  }

  static Properties consumerProperties(String brokers) {
    Properties p = new Properties();
    p.put("bootstrap.servers", brokers);
    p.put("group.id", "bench-java-" + UUID.randomUUID());
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", ByteArrayDeserializer.class.getName());
    p.put("value.deserializer", ByteArrayDeserializer.class.getName());
    p.put("max.poll.records", "10000");
    p.putAll(FETCH);
    return p;
  }

  /**
   * The baseline's Kafka client alone (--drain, diagnosis): the same consumer, each value's
   * length and first byte read, nothing parsed. Tells how much of the baseline is the client.
   */
  static long drain(String brokers, String topic, long n) {
    long got = 0, check = 0;
    long deadline = System.nanoTime() + 300_000_000_000L;
    try (KafkaConsumer<byte[], byte[]> consumer =
        new KafkaConsumer<>(consumerProperties(brokers))) {
      consumer.subscribe(List.of(topic));
      while (got < n) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("drain: only " + got + " of " + n + " records");
        }
        for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofSeconds(1))) {
          byte[] v = rec.value();
          check += v.length + v[0];
          if (++got == n) break;
        }
      }
    }
    return check;
  }

  /** The Java Kafka client + Jackson + arrow-java vectors appended per window. */
  static final class Baseline implements Contender {
    private final BufferAllocator allocator;
    private final boolean fixedTs;
    private final ObjectReader reader = new ObjectMapper().readerFor(Event.class);

    Baseline(BufferAllocator allocator, boolean fixedTs) {
      this.allocator = allocator;
      this.fixedTs = fixedTs;
    }

    @Override
    public String name() {
      return fixedTs
          ? "KafkaConsumer + Jackson (fixed ts) + arrow"
          : "KafkaConsumer + Jackson + arrow-java";
    }

    static Schema schema() {
      ArrowType i64 = new ArrowType.Int(64, true);
      ArrowType utf8 = ArrowType.Utf8.INSTANCE;
      return new Schema(
          List.of(
              Field.notNullable("event_id", i64),
              Field.notNullable("user_id", i64),
              Field.notNullable(
                  "amount", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)),
              Field.notNullable("is_member", ArrowType.Bool.INSTANCE),
              Field.notNullable("event", utf8),
              Field.notNullable("country", utf8),
              Field.notNullable("session", utf8),
              Field.notNullable("ts", new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC")),
              Field.notNullable("_kafka_partition", i64),
              Field.notNullable("_kafka_offset", i64)));
    }

    @Override
    public void consume(String brokers, String topic, long n, int window, Sums sums)
        throws Exception {
      try (KafkaConsumer<byte[], byte[]> consumer =
              new KafkaConsumer<>(consumerProperties(brokers));
          VectorSchemaRoot root = VectorSchemaRoot.create(schema(), allocator)) {
        consumer.subscribe(List.of(topic));
        BigIntVector eventId = (BigIntVector) root.getVector(0);
        BigIntVector userId = (BigIntVector) root.getVector(1);
        Float8Vector amount = (Float8Vector) root.getVector(2);
        BitVector member = (BitVector) root.getVector(3);
        VarCharVector event = (VarCharVector) root.getVector(4);
        VarCharVector country = (VarCharVector) root.getVector(5);
        VarCharVector session = (VarCharVector) root.getVector(6);
        TimeStampMicroTZVector ts = (TimeStampMicroTZVector) root.getVector(7);
        BigIntVector partition = (BigIntVector) root.getVector(8);
        BigIntVector offset = (BigIntVector) root.getVector(9);
        int cap = (int) Math.min(window, n);
        allocate(root, cap);
        long got = 0;
        int row = 0;
        long deadline = System.nanoTime() + 300_000_000_000L;
        while (got < n) {
          if (System.nanoTime() > deadline) {
            throw new IllegalStateException("KafkaConsumer: only " + got + " of " + n + " records");
          }
          ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofSeconds(1));
          for (ConsumerRecord<byte[], byte[]> rec : records) {
            if (got == n) break;
            Event e = reader.readValue(rec.value());
            eventId.setSafe(row, e.event_id);
            userId.setSafe(row, e.user_id);
            amount.setSafe(row, e.amount);
            member.setSafe(row, e.is_member ? 1 : 0);
            event.setSafe(row, e.event.getBytes(StandardCharsets.UTF_8));
            country.setSafe(row, e.country.getBytes(StandardCharsets.UTF_8));
            session.setSafe(row, e.session.getBytes(StandardCharsets.UTF_8));
            ts.setSafe(row, fixedTs ? fixedMicros(e.ts) : micros(Instant.parse(e.ts)));
            partition.setSafe(row, rec.partition());
            offset.setSafe(row, rec.offset());
            row++;
            got++;
            if (row == cap || got == n) {
              root.setRowCount(row);
              touch(root, sums);
              root.clear();
              allocate(root, cap);
              row = 0;
            }
          }
        }
      }
    }

    private static void allocate(VectorSchemaRoot root, int rows) {
      for (FieldVector v : root.getFieldVectors()) {
        if (v instanceof BaseVariableWidthVector s) s.setInitialCapacity(rows, 16);
        else v.setInitialCapacity(rows);
        v.allocateNew();
      }
      root.setRowCount(0);
    }
  }

  /** Wall time (consumer created to closed, the group join included) and CPU time. */
  record Run(double seconds, double cpuSeconds) {}

  static com.sun.management.OperatingSystemMXBean processBean() {
    return (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
  }

  static Run timed(Contender c, String brokers, String topic, long n, int window, Sums sums)
      throws Exception {
    var os = processBean();
    long cpu0 = os.getProcessCpuTime();
    long t0 = System.nanoTime();
    c.consume(brokers, topic, n, window, sums);
    long t1 = System.nanoTime();
    long cpu1 = os.getProcessCpuTime();
    return new Run((t1 - t0) / 1e9, (cpu1 - cpu0) / 1e9);
  }

  static double median(List<Double> xs) {
    List<Double> s = new ArrayList<>(xs);
    Collections.sort(s);
    int m = s.size() / 2;
    return s.size() % 2 == 1 ? s.get(m) : (s.get(m - 1) + s.get(m)) / 2;
  }

  static String bootstrapFromEnv() throws Exception {
    String b = System.getenv("KELT_KAFKA_BOOTSTRAP");
    if (b != null && !b.isEmpty()) return b;
    String env = System.getenv("KELT_KAFKA_ENV");
    if (env != null && Files.isRegularFile(Path.of(env))) {
      for (String line : Files.readAllLines(Path.of(env))) {
        if (line.startsWith("KELT_KAFKA_BOOTSTRAP=")) return line.substring(21).trim();
      }
    }
    return null;
  }

  static void usage(String why) {
    System.err.println("ConsumeBench: " + why);
    System.err.println(
        "usage: consume_benchmark.sh [--records N] [--window N] [--partitions N] "
            + "[--repetitions N] [--warmup N] [--bootstrap HOST:PORT] [--topic NAME] [--drain] "
            + "[--fixed-ts]");
    System.exit(2);
  }

  public static void main(String[] args) throws Exception {
    long n = 1_000_000;
    int window = 100_000;
    int partitions = 4;
    int repetitions = 3;
    long warmup = 100_000;
    boolean drainToo = false;
    boolean fixedTs = false;
    String brokers = bootstrapFromEnv();
    String topic = null;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--drain")) {
        drainToo = true;
        continue;
      }
      if (a.equals("--fixed-ts")) {
        fixedTs = true;
        continue;
      }
      if (i + 1 >= args.length) usage("missing the value of " + a);
      String v = args[++i];
      try {
        switch (a) {
          case "--records" -> n = Long.parseLong(v);
          case "--window" -> window = Integer.parseInt(v);
          case "--partitions" -> partitions = Integer.parseInt(v);
          case "--repetitions" -> repetitions = Integer.parseInt(v);
          case "--warmup" -> warmup = Long.parseLong(v);
          case "--bootstrap" -> brokers = v;
          case "--topic" -> topic = v;
          default -> usage("unknown option " + a);
        }
      } catch (NumberFormatException e) {
        usage(a + ": expected a number, got \"" + v + "\"");
      }
    }
    if (brokers == null) usage("no broker: --bootstrap, KELT_KAFKA_BOOTSTRAP or KELT_KAFKA_ENV");
    if (n < 1 || window < 1 || partitions < 1 || repetitions < 1 || warmup < 0) {
      usage("--records, --window, --partitions and --repetitions must be positive");
    }
    Sums produced = null;
    if (topic == null) {
      topic = "bench-java-" + UUID.randomUUID().toString().substring(0, 10);
      produced = new Sums();
      long t0 = System.nanoTime();
      double size = produce(brokers, topic, partitions, n, produced);
      System.out.printf(
          "produced %,d JSON records (%.0f bytes each on average) to %s (%d partitions) in %.1fs%n",
          n, size, topic, partitions, (System.nanoTime() - t0) / 1e9);
    }
    try (BufferAllocator allocator = new RootAllocator()) {
      List<Contender> contenders = List.of(new Kelt(allocator), new Baseline(allocator, fixedTs));
      if (warmup > 0) {
        // The JIT compiles both paths first (the first kelt window also loads arrow-java's
        // C Data library); not counted.
        long w = Math.min(warmup, n);
        for (Contender c : contenders) c.consume(brokers, topic, w, window, new Sums());
        System.out.printf("warm-up: each contender read %,d records%n", w);
      }
      List<List<Double>> rates = List.of(new ArrayList<>(), new ArrayList<>());
      List<List<Double>> cpus = List.of(new ArrayList<>(), new ArrayList<>());
      List<Double> ratios = new ArrayList<>();
      List<Double> cpuRatios = new ArrayList<>();
      List<Double> drainCpus = new ArrayList<>();
      for (int rep = 0; rep < repetitions; rep++) {
        Sums[] sums = {new Sums(), new Sums()};
        Run[] runs = new Run[2];
        int[] order = rep % 2 == 0 ? new int[] {0, 1} : new int[] {1, 0};
        for (int k : order) {
          runs[k] = timed(contenders.get(k), brokers, topic, n, window, sums[k]);
          double rate = n / runs[k].seconds();
          double cpuUs = runs[k].cpuSeconds() * 1e6 / n;
          rates.get(k).add(rate);
          cpus.get(k).add(cpuUs);
          System.out.printf(
              "  rep %d: %-42s %,10d records in %6.2fs %,12.0f records/s  CPU %5.2f us/record%n",
              rep + 1, contenders.get(k).name(), n, runs[k].seconds(), rate, cpuUs);
        }
        if (!Arrays.equals(sums[0].v, sums[1].v)) {
          System.err.println(
              "the contenders read different data: kelt " + Arrays.toString(sums[0].v)
                  + ", baseline " + Arrays.toString(sums[1].v));
          System.exit(1);
        }
        if (sums[0].v[0] != n) {
          System.err.println("read " + sums[0].v[0] + " rows, not " + n);
          System.exit(1);
        }
        if (produced != null && !Arrays.equals(sums[0].payload(), produced.payload())) {
          System.err.println("the columns read differ from those produced: read "
              + Arrays.toString(sums[0].payload()) + ", produced "
              + Arrays.toString(produced.payload()));
          System.exit(1);
        }
        if (drainToo) {
          var os = processBean();
          long cpu0 = os.getProcessCpuTime();
          long t0 = System.nanoTime();
          drain(brokers, topic, n);
          double seconds = (System.nanoTime() - t0) / 1e9;
          double cpuUs = (os.getProcessCpuTime() - cpu0) / 1e3 / n;
          drainCpus.add(cpuUs);
          System.out.printf(
              "  rep %d: %-42s %,10d records in %6.2fs %,12.0f records/s  CPU %5.2f us/record%n",
              rep + 1, "KafkaConsumer alone (--drain)", n, seconds, n / seconds, cpuUs);
        }
        ratios.add(runs[1].seconds() / runs[0].seconds());
        cpuRatios.add(runs[1].cpuSeconds() / runs[0].cpuSeconds());
      }
      for (int k = 0; k < 2; k++) {
        System.out.printf(
            "%-44s best %,12.0f records/s  median %,12.0f records/s  CPU median %5.2f us/record%n",
            contenders.get(k).name(), Collections.max(rates.get(k)), median(rates.get(k)),
            median(cpus.get(k)));
      }
      if (drainToo) {
        System.out.printf("%-44s CPU median %5.2f us/record%n", "KafkaConsumer alone (--drain)",
            median(drainCpus));
      }
      StringBuilder each = new StringBuilder();
      for (int i = 0; i < ratios.size(); i++) {
        if (i > 0) each.append(", ");
        each.append(String.format("%.1fx", ratios.get(i)));
      }
      System.out.printf(
          "kelt / baseline: %.1fx records/s (median of %d paired repetitions; each: %s); "
              + "CPU a record %.1fx less%n",
          median(ratios), ratios.size(), each, median(cpuRatios));
    }
  }
}
