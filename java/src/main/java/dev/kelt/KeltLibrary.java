// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.function.Function;

/**
 * Locates and opens libkelt.so, once per JVM (it stays loaded). {@link #lookup()} tries, in
 * order:
 *
 * <ol>
 *   <li>the system property {@code kelt.library};
 *   <li>the environment variable {@code RDP_JVM_SYS} (RDP's name, so RDP deployments keep
 *       working), then RDP's system property {@code rdp.jvm.sys.library};
 *   <li>the classpath: the library the kelt jar carries under {@code
 *       META-INF/native/linux-x86_64/} with the shared libraries it needs (Arrow), extracted
 *       to a temporary directory, loaded, and deleted again;
 *   <li>the build tree: {@code build/release/capi/libkelt.so} in the working directory or one
 *       of its parents (a kelt checkout).
 * </ol>
 *
 * <p>{@link RdpNativeJson#lookup()} keeps RDP's order: {@code RDP_JVM_SYS}, {@code
 * -Drdp.jvm.sys.library}, then {@code kelt.library}, the classpath and the build tree. A
 * property or variable may name the file or a directory holding {@code libkelt.so}; one that is
 * set but names no file is an error (never silently passed over).
 */
public final class KeltLibrary {
  /** kelt's system property naming the library file. */
  public static final String PROPERTY = "kelt.library";
  /** The environment variable naming the library file (RDP's). */
  public static final String ENV = "RDP_JVM_SYS";
  /** RDP's system property naming the library file. */
  public static final String RDP_PROPERTY = "rdp.jvm.sys.library";
  /** The platform directory of the jar's native libraries (the only one built today). */
  public static final String PLATFORM = "linux-x86_64";
  /** Where the jar keeps them; {@code files} there lists them, one relative path a line. */
  public static final String RESOURCE_DIR = "META-INF/native/" + PLATFORM + "/";

  /** The build tree's library, relative to a checkout. */
  static final String BUILD_TREE_LIBRARY = "build/release/capi/libkelt.so";

  private static volatile SymbolLookup lookup;
  private static volatile String loadedFrom;

  private KeltLibrary() {}

  /** Where a library can come from, in the order {@link #locate} tries them. */
  enum Source {
    PROPERTY,
    ENV,
    RDP_PROPERTY,
    CLASSPATH,
    BUILD_TREE
  }

  /** kelt's order. */
  static final List<Source> KELT_ORDER =
      List.of(Source.PROPERTY, Source.ENV, Source.RDP_PROPERTY, Source.CLASSPATH, Source.BUILD_TREE);
  /** RDP's order (RDP_JVM_SYS first). */
  static final List<Source> RDP_ORDER =
      List.of(Source.ENV, Source.RDP_PROPERTY, Source.PROPERTY, Source.CLASSPATH, Source.BUILD_TREE);

  /** Where the library was found: a file, or the jar's resources (to extract). */
  record Located(Path file, boolean fromClasspath, String origin) {}

  /**
   * Return the library file to load, in kelt's order. A library the jar carries is extracted to a
   * temporary directory that is deleted when the JVM exits.
   *
   * @throws IllegalStateException if no place has one, or a property or variable names a missing
   *     file
   */
  public static Path path() {
    Located l = locate(KELT_ORDER, System::getenv, System.getProperties(), Path.of(""), loader());
    if (!l.fromClasspath()) return l.file();
    Path file = extract();
    // deleteOnExit runs in reverse order: the directories after the files in them.
    try (var walk = Files.walk(file.getParent())) {
      walk.forEach(p -> p.toFile().deleteOnExit());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return file;
  }

  /** Return where the open library came from (null before it is opened): for diagnostics. */
  public static String loadedFrom() {
    return loadedFrom;
  }

  /**
   * Find the library in {@code order}: the environment through {@code env}, the properties in
   * {@code props}, the jar's resources through {@code classpath}, the build tree above {@code
   * workDir}.
   */
  static Located locate(
      List<Source> order,
      Function<String, String> env,
      Properties props,
      Path workDir,
      ClassLoader classpath) {
    List<String> tried = new ArrayList<>();
    for (Source s : order) {
      switch (s) {
        case PROPERTY, RDP_PROPERTY, ENV -> {
          String name =
              s == Source.ENV ? ENV : (s == Source.PROPERTY ? PROPERTY : RDP_PROPERTY);
          String value = s == Source.ENV ? env.apply(name) : props.getProperty(name);
          String origin = (s == Source.ENV ? "environment variable " : "system property ") + name;
          if (value == null || value.isBlank()) {
            tried.add(origin + " (not set)");
            continue;
          }
          Path p = Path.of(value);
          if (Files.isDirectory(p)) p = p.resolve("libkelt.so"); // a directory holding it
          if (!Files.isRegularFile(p)) {
            throw new IllegalStateException(
                "kelt native library not found: " + p + " (from the " + origin + ")");
          }
          return new Located(p, false, origin);
        }
        case CLASSPATH -> {
          String platform = platform();
          if (!PLATFORM.equals(platform)) {
            tried.add("the classpath (the jar carries " + PLATFORM + " only, this is " + platform + ")");
          } else if (classpath.getResource(RESOURCE_DIR + "files") == null) {
            tried.add("the classpath (no " + RESOURCE_DIR + "files: not the native jar)");
          } else {
            return new Located(null, true, "the classpath (" + RESOURCE_DIR + ")");
          }
        }
        case BUILD_TREE -> {
          for (Path d = workDir.toAbsolutePath().normalize(); d != null; d = d.getParent()) {
            Path p = d.resolve(BUILD_TREE_LIBRARY);
            if (Files.isRegularFile(p)) return new Located(p, false, "the build tree " + p);
          }
          tried.add("the build tree (no " + BUILD_TREE_LIBRARY + " above " + workDir.toAbsolutePath() + ")");
        }
      }
    }
    throw new IllegalStateException(
        "kelt native library not found; tried "
            + String.join(", ", tried)
            + ". Put the kelt jar on the classpath, or set -D"
            + PROPERTY
            + "=/path/to/libkelt.so or "
            + ENV);
  }

  private static ClassLoader loader() {
    ClassLoader cl = KeltLibrary.class.getClassLoader();
    return cl != null ? cl : ClassLoader.getSystemClassLoader();
  }

  /** This JVM's platform as the jar names it, e.g. linux-x86_64. */
  static String platform() {
    String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    if (arch.equals("amd64") || arch.equals("x86_64")) arch = "x86_64";
    if (arch.equals("arm64")) arch = "aarch64";
    return (os.startsWith("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch;
  }

  /**
   * Copy the jar's native files (the {@code files} list) into a new temporary directory, keeping
   * their relative paths (libkelt.so finds its libraries through {@code $ORIGIN} RPATHs), and
   * return libkelt.so's path there.
   */
  static Path extract() {
    ClassLoader cl = loader();
    try {
      List<String> files;
      try (InputStream in = cl.getResourceAsStream(RESOURCE_DIR + "files")) {
        if (in == null) throw new IllegalStateException("no " + RESOURCE_DIR + "files on the classpath");
        files =
            new String(in.readAllBytes(), StandardCharsets.UTF_8)
                .lines()
                .map(String::strip)
                .filter(f -> !f.isEmpty())
                .toList();
      }
      if (!files.contains("libkelt.so")) {
        throw new IllegalStateException(RESOURCE_DIR + "files does not list libkelt.so");
      }
      Path dir = Files.createTempDirectory("kelt-native-");
      for (String f : files) {
        Path target = dir.resolve(f).normalize();
        if (!target.startsWith(dir) || f.contains("..")) {
          throw new IllegalStateException(RESOURCE_DIR + "files lists a path outside it: " + f);
        }
        Files.createDirectories(target.getParent());
        try (InputStream in = cl.getResourceAsStream(RESOURCE_DIR + f)) {
          if (in == null) {
            throw new IllegalStateException(
                RESOURCE_DIR + "files lists " + f + ", which the classpath does not have");
          }
          Files.copy(in, target);
        }
      }
      return dir.resolve("libkelt.so");
    } catch (IOException e) {
      throw new UncheckedIOException(
          "extracting kelt's native library from the classpath to "
              + System.getProperty("java.io.tmpdir")
              + ": "
              + e.getMessage(),
          e);
    }
  }

  /** Delete an extracted directory once its libraries are loaded (they stay mapped). */
  private static void deleteTree(Path dir) {
    try (var walk = Files.walk(dir)) {
      for (Path p : walk.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      // Leaves a temporary directory behind; the library is loaded all the same.
    }
  }

  /** Return the symbol lookup of the library in kelt's order, opening it on first use. */
  public static SymbolLookup lookup() {
    return lookup(KELT_ORDER);
  }

  /** Return the symbol lookup, locating the library in {@code order} if not yet open. */
  static SymbolLookup lookup(List<Source> order) {
    SymbolLookup l = lookup;
    if (l == null) {
      synchronized (KeltLibrary.class) {
        l = lookup;
        if (l == null) {
          Located where = locate(order, System::getenv, System.getProperties(), Path.of(""), loader());
          if (where.fromClasspath()) {
            Path file = extract();
            try {
              l = SymbolLookup.libraryLookup(file, Arena.global());
            } finally {
              deleteTree(file.getParent());
            }
          } else {
            l = SymbolLookup.libraryLookup(where.file(), Arena.global());
          }
          loadedFrom = where.origin();
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
