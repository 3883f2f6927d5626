// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import java.lang.foreign.MemorySegment;
import org.apache.arrow.c.ArrowArrayStream;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.ipc.ArrowReader;

/**
 * Windows as arrow-java readers, zero copy, through the Arrow C stream interface. Needs
 * arrow-java on the class path ({@code org.apache.arrow:arrow-c-data}, {@code arrow-vector} and a
 * memory module such as {@code arrow-memory-unsafe}; the JVM needs {@code
 * --add-opens=java.base/java.nio=ALL-UNNAMED} for arrow-java's memory module). The rest of the
 * wrapper does not use arrow-java.
 */
public final class KeltArrow {
  private KeltArrow() {}

  /**
   * Return the window's landed rows as an {@link ArrowReader} whose buffers are the native
   * window's own (not copied; they stay valid after the window is closed). The caller closes
   * the reader.
   */
  public static ArrowReader reader(KeltWindow window, BufferAllocator allocator) {
    try (ArrowArrayStream stream = ArrowArrayStream.allocateNew(allocator)) {
      window.exportArrowStream(MemorySegment.ofAddress(stream.memoryAddress()).reinterpret(40));
      return Data.importArrayStream(allocator, stream);
    }
  }
}
