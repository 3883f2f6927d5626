// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import org.json.JSONObject;

/**
 * The ELT loop ({@code kelt_pipeline}): Extract a window → Load → write to every sink → commit
 * what every sink holds durably. Configured by the same YAML/JSON document as {@code kelt run
 * --config}. Not thread-safe.
 *
 * <pre>{@code
 * try (KeltPipeline p = KeltPipeline.open(yamlOrJson, Path.of("."))) {
 *   p.run();                       // until caught up (until_caught_up: true) or max_windows
 *   System.out.println(p.stats()); // {"windows":…,"rows":…,"committed":[…]}
 * }
 * }</pre>
 */
public final class KeltPipeline implements AutoCloseable {
  private MemorySegment handle;

  private KeltPipeline(MemorySegment handle) {
    this.handle = handle;
  }

  /**
   * Create the loop: parse {@code config}, open the sinks, subscribe (nothing is read yet).
   *
   * @param baseDir resolves relative paths in the config (schema file, sink roots); null for
   *     the current directory
   */
  public static KeltPipeline open(String config, Path baseDir) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = KeltNative.newSlot(arena);
      MemorySegment err = KeltNative.newSlot(arena);
      MemorySegment dir =
          baseDir == null ? MemorySegment.NULL : arena.allocateFrom(baseDir.toString());
      int st = (int) KeltNative.PIPELINE_NEW.invokeExact(arena.allocateFrom(config), dir, out, err);
      KeltNative.check(st, err);
      return new KeltPipeline(out.get(ADDRESS, 0));
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Run one window; return false once the run is over (caught up, max_windows). */
  public boolean step() {
    MemorySegment h = live();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment more = arena.allocate(JAVA_INT);
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.PIPELINE_STEP.invokeExact(h, more, err);
      KeltNative.check(st, err);
      return more.get(JAVA_INT, 0) != 0;
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Run windows until the run is over, then flush, commit and leave the group. */
  public void run() {
    MemorySegment h = live();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.PIPELINE_RUN.invokeExact(h, err);
      KeltNative.check(st, err);
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /**
   * Return the counters so far: windows, records, bytes, rows, bad_records, dead_lettered,
   * sink_errors, caught_up, committed ([{"topic","partition","next_offset"}]).
   */
  public JSONObject stats() {
    MemorySegment h = live();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = KeltNative.newSlot(arena);
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.PIPELINE_STATS_JSON.invokeExact(h, out, err);
      KeltNative.check(st, err);
      return new JSONObject(KeltNative.takeString(out));
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  /** Flush the sinks, commit, leave the group and free the native loop. Idempotent. */
  @Override
  public void close() {
    MemorySegment h = handle;
    if (h == null) return;
    handle = null;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment err = KeltNative.newSlot(arena);
      int st = (int) KeltNative.PIPELINE_CLOSE.invokeExact(h, err);
      try {
        KeltNative.check(st, err);
      } finally {
        KeltNative.PIPELINE_FREE.invokeExact(h);
      }
    } catch (RuntimeException e) {
      throw e;
    } catch (Throwable t) {
      throw RdpNativeJson.rethrow(t);
    }
  }

  private MemorySegment live() {
    if (handle == null) throw new IllegalStateException("KeltPipeline is closed");
    return handle;
  }
}
