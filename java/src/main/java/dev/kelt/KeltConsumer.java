// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.json.JSONObject;

/**
 * A Kafka consumer-group member over {@code kelt_consumer}: poll bounded windows loaded into a
 * landing schema, commit a window once it is durable, read the lag, close. Nothing is committed
 * unless {@link #commit} is called. Not thread-safe.
 *
 * <pre>{@code
 * try (KeltConsumer consumer = KeltConsumer.open(configJson, landingSchemaJson)) {
 *   try (KeltWindow window = consumer.poll()) {
 *     JSONObject dataset = window.toDataSet();   // land it somewhere durable, then:
 *     consumer.commit(window);
 *   }
 * }
 * }</pre>
 */
public final class KeltConsumer implements AutoCloseable {
  private MemorySegment handle;

  private KeltConsumer(MemorySegment handle) {
    this.handle = handle;
  }

  /**
   * Create a consumer and subscribe.
   *
   * @param configJson RDP's consumer config keys (brokers, group_id, topic, max_records,
   *     auto_offset_reset, session_timeout_ms) and kelt's (topics, properties, max_wait_ms,
   *     max_bytes, group_protocol, instance_id, on_bad_record)
   * @param landingSchemaJson {@code {"fields":[{"name":…,"data_type":…}]}}
   * @throws KeltException with the C ABI's code (INVALID for a bad config, …)
   */
  public static KeltConsumer open(String configJson, String landingSchemaJson) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = KeltNative.newSlot(arena);
      MemorySegment err = KeltNative.newSlot(arena);
      int st =
          (int)
              KeltNative.CONSUMER_NEW.invokeExact(
                  arena.allocateFrom(configJson), arena.allocateFrom(landingSchemaJson), out, err);
      KeltNative.check(st, err);
      return new KeltConsumer(out.get(ADDRESS, 0));
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Poll and load the next window (possibly empty); the caller closes it. */
  public KeltWindow poll() {
    MemorySegment h = live();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = KeltNative.newSlot(arena);
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.CONSUMER_POLL.invokeExact(h, out, err);
      KeltNative.check(st, err);
      return new KeltWindow(out.get(ADDRESS, 0));
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Commit the offsets after {@code window}'s records (call once the window is durable). */
  public void commit(KeltWindow window) {
    MemorySegment h = live();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.CONSUMER_COMMIT.invokeExact(h, window.handle(), err);
      KeltNative.check(st, err);
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /**
   * Return the lag of each assigned partition: {@code {"partitions":[{"topic","partition",
   * "position","high_watermark","lag"}],"total_lag":N}}.
   */
  public JSONObject lag(int timeoutMs) {
    MemorySegment h = live();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = KeltNative.newSlot(arena);
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.CONSUMER_LAG_JSON.invokeExact(h, timeoutMs, out, err);
      KeltNative.check(st, err);
      return new JSONObject(KeltNative.takeString(out));
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Leave the group and free the native consumer. Idempotent. */
  @Override
  public void close() {
    MemorySegment h = handle;
    if (h == null) return;
    handle = null;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.CONSUMER_CLOSE.invokeExact(h, err);
      try {
        KeltNative.check(st, err);
      } finally {
        KeltNative.CONSUMER_FREE.invokeExact(h);
      }
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  private MemorySegment live() {
    if (handle == null) throw new IllegalStateException("KeltConsumer is closed");
    return handle;
  }
}
