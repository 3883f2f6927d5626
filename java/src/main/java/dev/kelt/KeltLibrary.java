// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Locates and opens libkelt.so: the path comes from the system property {@code kelt.library},
 * else from the environment variable {@code RDP_JVM_SYS} (RDP's name, so RDP deployments keep
 * working); either may name the file or a directory holding {@code libkelt.so}. The library is
 * opened once per JVM and stays loaded.
 */
public final class KeltLibrary {
  /** The system property naming the library file. */
  public static final String PROPERTY = "kelt.library";
  /** The environment variable naming the library file (RDP's). */
  public static final String ENV = "RDP_JVM_SYS";

  private static volatile SymbolLookup lookup;

  private KeltLibrary() {}

  /**
   * Return the library file to load.
   *
   * @throws IllegalStateException if neither the property nor the variable is set, or the file
   *     does not exist
   */
  public static Path path() {
    String fromProperty = System.getProperty(PROPERTY);
    String fromEnv = System.getenv(ENV);
    String chosen;
    String origin;
    if (fromProperty != null && !fromProperty.isBlank()) {
      chosen = fromProperty;
      origin = "system property " + PROPERTY;
    } else if (fromEnv != null && !fromEnv.isBlank()) {
      chosen = fromEnv;
      origin = "environment variable " + ENV;
    } else {
      throw new IllegalStateException(
          "kelt native library not configured: set the system property -D"
              + PROPERTY
              + "=/path/to/libkelt.so or the environment variable "
              + ENV
              + " (build it with: cmake --build --preset release --target kelt_c)");
    }
    Path p = Path.of(chosen);
    if (Files.isDirectory(p)) p = p.resolve("libkelt.so"); // a directory holding the library
    if (!Files.isRegularFile(p)) {
      throw new IllegalStateException(
          "kelt native library not found: " + p + " (from the " + origin + ")");
    }
    return p;
  }

  /** Return the symbol lookup of the library, opening it on first use (global arena). */
  public static SymbolLookup lookup() {
    SymbolLookup l = lookup;
    if (l == null) {
      synchronized (KeltLibrary.class) {
        l = lookup;
        if (l == null) {
          l = SymbolLookup.libraryLookup(path(), Arena.global());
          lookup = l;
        }
      }
    }
    return l;
  }

  /** Return a downcall handle for {@code name}, failing with the symbol's name if absent. */
  static MethodHandle downcall(
      Linker linker, SymbolLookup lookup, String name, FunctionDescriptor descriptor) {
    MemorySegment symbol =
        lookup
            .find(name)
            .orElseThrow(
                () -> new IllegalStateException("symbol " + name + " not found in kelt library"));
    return linker.downcallHandle(symbol, descriptor);
  }
}
