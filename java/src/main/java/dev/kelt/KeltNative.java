// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/** Downcall handles of the kelt_* functions (capi/include/kelt.h) and error translation. */
final class KeltNative {
  static final MethodHandle ERROR_CODE_NAME;
  static final MethodHandle ERROR_MESSAGE;
  static final MethodHandle ERROR_RETRIABLE;
  static final MethodHandle ERROR_FREE;
  static final MethodHandle STRING_FREE;
  static final MethodHandle CONSUMER_NEW;
  static final MethodHandle CONSUMER_POLL;
  static final MethodHandle CONSUMER_COMMIT;
  static final MethodHandle CONSUMER_LAG_JSON;
  static final MethodHandle CONSUMER_CLOSE;
  static final MethodHandle CONSUMER_FREE;
  static final MethodHandle WINDOW_NUM_ROWS;
  static final MethodHandle WINDOW_NUM_RECORDS;
  static final MethodHandle WINDOW_TO_ARROW_STREAM;
  static final MethodHandle WINDOW_TO_DATASET_JSON;
  static final MethodHandle WINDOW_INFO_JSON;
  static final MethodHandle WINDOW_FREE;
  static final MethodHandle PIPELINE_NEW;
  static final MethodHandle PIPELINE_STEP;
  static final MethodHandle PIPELINE_RUN;
  static final MethodHandle PIPELINE_STATS_JSON;
  static final MethodHandle PIPELINE_CLOSE;
  static final MethodHandle PIPELINE_FREE;

  static {
    Linker l = Linker.nativeLinker();
    SymbolLookup s = KeltLibrary.lookup();
    ERROR_CODE_NAME =
        KeltLibrary.downcall(l, s, "kelt_error_code_name", FunctionDescriptor.of(ADDRESS, ADDRESS));
    ERROR_MESSAGE =
        KeltLibrary.downcall(l, s, "kelt_error_message", FunctionDescriptor.of(ADDRESS, ADDRESS));
    ERROR_RETRIABLE =
        KeltLibrary.downcall(l, s, "kelt_error_retriable", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    ERROR_FREE = KeltLibrary.downcall(l, s, "kelt_error_free", FunctionDescriptor.ofVoid(ADDRESS));
    STRING_FREE = KeltLibrary.downcall(l, s, "kelt_string_free", FunctionDescriptor.ofVoid(ADDRESS));
    CONSUMER_NEW =
        KeltLibrary.downcall(
            l,
            s,
            "kelt_consumer_new",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    CONSUMER_POLL =
        KeltLibrary.downcall(
            l, s, "kelt_consumer_poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    CONSUMER_COMMIT =
        KeltLibrary.downcall(
            l, s, "kelt_consumer_commit", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    CONSUMER_LAG_JSON =
        KeltLibrary.downcall(
            l,
            s,
            "kelt_consumer_lag_json",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, ADDRESS));
    CONSUMER_CLOSE =
        KeltLibrary.downcall(
            l, s, "kelt_consumer_close", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    CONSUMER_FREE =
        KeltLibrary.downcall(l, s, "kelt_consumer_free", FunctionDescriptor.ofVoid(ADDRESS));
    WINDOW_NUM_ROWS =
        KeltLibrary.downcall(l, s, "kelt_window_num_rows", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    WINDOW_NUM_RECORDS =
        KeltLibrary.downcall(
            l, s, "kelt_window_num_records", FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    WINDOW_TO_ARROW_STREAM =
        KeltLibrary.downcall(
            l,
            s,
            "kelt_window_to_arrow_stream",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    WINDOW_TO_DATASET_JSON =
        KeltLibrary.downcall(
            l,
            s,
            "kelt_window_to_dataset_json",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    WINDOW_INFO_JSON =
        KeltLibrary.downcall(
            l, s, "kelt_window_info_json", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    WINDOW_FREE = KeltLibrary.downcall(l, s, "kelt_window_free", FunctionDescriptor.ofVoid(ADDRESS));
    PIPELINE_NEW =
        KeltLibrary.downcall(
            l,
            s,
            "kelt_pipeline_new",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS));
    PIPELINE_STEP =
        KeltLibrary.downcall(
            l, s, "kelt_pipeline_step", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    PIPELINE_RUN =
        KeltLibrary.downcall(
            l, s, "kelt_pipeline_run", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    PIPELINE_STATS_JSON =
        KeltLibrary.downcall(
            l,
            s,
            "kelt_pipeline_stats_json",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
    PIPELINE_CLOSE =
        KeltLibrary.downcall(
            l, s, "kelt_pipeline_close", FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    PIPELINE_FREE =
        KeltLibrary.downcall(l, s, "kelt_pipeline_free", FunctionDescriptor.ofVoid(ADDRESS));
  }

  private KeltNative() {}

  /** Throw the error in {@code *errSlot} when {@code status} is not KELT_OK; free it. */
  static void check(int status, MemorySegment errSlot) {
    if (status == 0) return;
    MemorySegment err = errSlot.get(ADDRESS, 0);
    if (err.equals(MemorySegment.NULL)) {
      throw new KeltException("INTERNAL", "kelt call failed with status " + status, false);
    }
    try {
      String code = cString((MemorySegment) ERROR_CODE_NAME.invokeExact(err));
      String message = cString((MemorySegment) ERROR_MESSAGE.invokeExact(err));
      boolean retriable = ((int) ERROR_RETRIABLE.invokeExact(err)) != 0;
      throw new KeltException(code, message, retriable);
    } catch (KeltException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    } finally {
      try {
        ERROR_FREE.invokeExact(err);
      } catch (Throwable t) {
        throw RdpNativeJson.rethrow(t);
      }
    }
  }

  /** Read a NUL-terminated string owned by the library. */
  static String cString(MemorySegment p) {
    return p.reinterpret(Long.MAX_VALUE).getString(0);
  }

  /** Read a string the caller owns ({@code *slot}) and free it with kelt_string_free. */
  static String takeString(MemorySegment slot) {
    MemorySegment p = slot.get(ADDRESS, 0);
    try {
      return cString(p);
    } finally {
      try {
        STRING_FREE.invokeExact(p);
      } catch (Throwable t) {
        throw RdpNativeJson.rethrow(t);
      }
    }
  }

  static MemorySegment newSlot(Arena arena) {
    MemorySegment slot = arena.allocate(ADDRESS);
    slot.set(ADDRESS, 0, MemorySegment.NULL);
    return slot;
  }
}
