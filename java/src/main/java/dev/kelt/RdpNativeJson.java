// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import org.json.JSONObject;

/**
 * RDP's JSON calls (RDP_COMPATIBILITY.md §5) through Panama FFM, with RDP's {@code RdpNativeJson} signature
 * shape: each {@code invoke…} method calls one {@code rdp_*} function, parses the envelope with
 * org.json, frees the result slice exactly once and returns the {@code interchange} object. An
 * envelope with {@code "ok":false} throws {@link RdpNativeException} carrying the error text (or,
 * for pipelines, the error object).
 *
 * <pre>{@code
 * Linker linker = Linker.nativeLinker();
 * SymbolLookup lookup = RdpNativeJson.lookup();   // RDP_JVM_SYS, or the jar's own library
 * try (Arena arena = Arena.ofConfined()) {
 *   JSONObject loaded = RdpNativeJson.invokeKafkaPollWindowLoadedJson(
 *       linker, lookup, arena, consumerConfig, landingSchema);
 *   JSONObject dataset = loaded.getJSONObject("dataset");
 * }
 * }</pre>
 */
public final class RdpNativeJson {
  /** {@code typedef struct RdpJsonSlice { uint8_t* ptr; size_t len; size_t cap; }}. */
  public static final StructLayout SLICE =
      MemoryLayout.structLayout(
          ADDRESS.withName("ptr"), JAVA_LONG.withName("len"), JAVA_LONG.withName("cap"));

  private RdpNativeJson() {}

  /**
   * Open the kelt library in RDP's order: {@code RDP_JVM_SYS}, {@code -Drdp.jvm.sys.library},
   * then {@code -Dkelt.library}, the classpath (the kelt jar's own library) and the build tree
   * ({@link KeltLibrary}). One library per JVM: whichever call opens it first decides.
   */
  public static SymbolLookup lookup() {
    return KeltLibrary.lookup(KeltLibrary.RDP_ORDER);
  }

  /** Return {@code rdp_ffi_abi_version()} (406, as RDP). */
  public static int abiVersion(Linker linker, SymbolLookup lookup) {
    MethodHandle h =
        KeltLibrary.downcall(linker, lookup, "rdp_ffi_abi_version", FunctionDescriptor.of(JAVA_INT));
    try {
      return (int) h.invokeExact();
    } catch (Throwable t) {
      throw rethrow(t);
    }
  }

  /** {@code rdp_kafka_elt_load_records_json}: interchange {@code {"kind":"kafka_elt_load",…}}. */
  public static JSONObject invokeKafkaEltLoadRecordsJson(
      Linker linker, SymbolLookup lookup, Arena arena, String recordsJson, String schemaJson) {
    return interchange(
        invokeEnvelope(
            linker, lookup, arena, "rdp_kafka_elt_load_records_json", recordsJson, schemaJson));
  }

  /** {@code rdp_kafka_poll_window_json}: interchange {@code {"kind":"kafka_poll_window",…}}. */
  public static JSONObject invokeKafkaPollWindowJson(
      Linker linker, SymbolLookup lookup, Arena arena, String consumerConfig) {
    return interchange(
        invokeEnvelope(linker, lookup, arena, "rdp_kafka_poll_window_json", consumerConfig));
  }

  /** {@code rdp_kafka_poll_window_loaded_json}: {@code {"kind":"kafka_poll_window_loaded",…}}. */
  public static JSONObject invokeKafkaPollWindowLoadedJson(
      Linker linker,
      SymbolLookup lookup,
      Arena arena,
      String consumerConfig,
      String landingSchema) {
    return interchange(
        invokeEnvelope(
            linker,
            lookup,
            arena,
            "rdp_kafka_poll_window_loaded_json",
            consumerConfig,
            landingSchema));
  }

  /** {@code rdp_kafka_export_dataset_json}: {@code {"kind":"kafka_export","row_count":N,…}}. */
  public static JSONObject invokeKafkaExportDatasetJson(
      Linker linker, SymbolLookup lookup, Arena arena, String producerConfig, String datasetJson) {
    return interchange(
        invokeEnvelope(
            linker, lookup, arena, "rdp_kafka_export_dataset_json", producerConfig, datasetJson));
  }

  /** {@code rdp_run_pipeline_json}: {@code {"kind":"run_pipeline_json",…}}. */
  public static JSONObject invokeRunPipelineJson(
      Linker linker, SymbolLookup lookup, Arena arena, String pipelineJson) {
    return interchange(
        invokeEnvelope(linker, lookup, arena, "rdp_run_pipeline_json", pipelineJson));
  }

  /**
   * Call {@code rdp_<function>(RdpJsonSlice* out, const char*…)} with the given string
   * arguments (a {@code null} argument is passed as a NULL pointer) and return the raw envelope
   * text. The slice is freed exactly once, before returning.
   */
  public static String invokeEnvelope(
      Linker linker, SymbolLookup lookup, Arena arena, String function, String... args) {
    MemoryLayout[] params = new MemoryLayout[args.length + 1];
    java.util.Arrays.fill(params, ADDRESS);
    MethodHandle call =
        KeltLibrary.downcall(linker, lookup, function, FunctionDescriptor.ofVoid(params));
    MethodHandle free =
        KeltLibrary.downcall(linker, lookup, "rdp_json_slice_free", FunctionDescriptor.ofVoid(SLICE));
    MemorySegment slice = arena.allocate(SLICE);
    Object[] callArgs = new Object[args.length + 1];
    callArgs[0] = slice;
    for (int i = 0; i < args.length; i++) {
      callArgs[i + 1] = args[i] == null ? MemorySegment.NULL : arena.allocateFrom(args[i]);
    }
    try {
      call.invokeWithArguments(callArgs);
    } catch (Throwable t) {
      throw rethrow(t);
    }
    try {
      MemorySegment ptr = slice.get(ADDRESS, 0);
      long len = slice.get(JAVA_LONG, 8);
      if (ptr.equals(MemorySegment.NULL)) {
        throw new RdpNativeException(function + " returned no result (out of memory)", null);
      }
      byte[] bytes = ptr.reinterpret(len).toArray(JAVA_BYTE);
      return new String(bytes, StandardCharsets.UTF_8);
    } finally {
      try {
        free.invokeExact(slice);
      } catch (Throwable t) {
        throw rethrow(t);
      }
    }
  }

  /** Parse an envelope: the interchange object, or throw with its error. */
  public static JSONObject interchange(String envelope) {
    JSONObject o = new JSONObject(envelope);
    if (o.getBoolean("ok")) {
      return o.getJSONObject("interchange");
    }
    Object error = o.get("error");
    if (error instanceof JSONObject e) {
      throw new RdpNativeException(e.optString("code") + ": " + e.optString("message"), e);
    }
    throw new RdpNativeException(String.valueOf(error), null);
  }

  static RuntimeException rethrow(Throwable t) {
    if (t instanceof RuntimeException r) return r;
    if (t instanceof Error e) throw e;
    return new IllegalStateException(t);
  }
}
