// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.json.JSONObject;

/**
 * One polled and loaded window ({@code kelt_window}). It stays valid after its consumer is
 * closed. Close it to free the native memory.
 */
public final class KeltWindow implements AutoCloseable {
  private MemorySegment handle;

  KeltWindow(MemorySegment handle) {
    this.handle = handle;
  }

  /** Return the number of landed rows. */
  public long numRows() {
    try {
      return (long) KeltNative.WINDOW_NUM_ROWS.invokeExact(handle());
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Return the number of records polled (landed rows plus skipped/dead-lettered ones). */
  public long numRecords() {
    try {
      return (long) KeltNative.WINDOW_NUM_RECORDS.invokeExact(handle());
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Return the landed rows as a DataSet JSON object {@code {"schema":…,"rows":[[…]]}}. */
  public JSONObject toDataSet() {
    return new JSONObject(json(KeltNative.WINDOW_TO_DATASET_JSON));
  }

  /**
   * Return what the window holds: records, rows, bad_records, skipped, dead_lettered,
   * tombstones, bytes, end (why it ended) and spans (offsets per partition).
   */
  public JSONObject info() {
    return new JSONObject(json(KeltNative.WINDOW_INFO_JSON));
  }

  /**
   * Export the landed rows as an Arrow C stream into {@code out}, caller memory of {@code
   * struct ArrowArrayStream} (5 pointers, 40 bytes), for example arrow-java's {@code
   * ArrowArrayStream.allocateNew(allocator)} at {@code MemorySegment.ofAddress(s.memoryAddress())}
   * then {@code Data.importArrayStream}. The caller owns the stream (its release callback); its
   * buffers are shared with the window, not copied.
   */
  public void exportArrowStream(MemorySegment out) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.WINDOW_TO_ARROW_STREAM.invokeExact(handle(), out, err);
      KeltNative.check(st, err);
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Free the native window. Idempotent. */
  @Override
  public void close() {
    MemorySegment h = handle;
    if (h == null) return;
    handle = null;
    try {
      KeltNative.WINDOW_FREE.invokeExact(h);
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  MemorySegment handle() {
    if (handle == null) throw new IllegalStateException("KeltWindow is closed");
    return handle;
  }

  private String json(java.lang.invoke.MethodHandle function) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = KeltNative.newSlot(arena);
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) function.invokeExact(handle(), out, err);
      KeltNative.check(st, err);
      return KeltNative.takeString(out);
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }
}
