// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where KeltLibrary looks, in which order (no library is opened): kelt's order puts
 * -Dkelt.library first, RDP's puts RDP_JVM_SYS first; a setting naming a missing file is an
 * error naming the setting; the build tree is found above the working directory; with none of
 * them the error says what was tried. The jar's own library (the classpath, before the build
 * tree) is tested from the jar alone by tests/install/jar_test.sh.
 */
class KeltLibraryTest {
  @TempDir Path tmp;

  private Path lib(String dir) throws Exception {
    Path p = tmp.resolve(dir).resolve("libkelt.so");
    Files.createDirectories(p.getParent());
    Files.writeString(p, "not really ELF");
    return p;
  }

  /** A class loader without the jar's resources (the bootstrap loader's view). */
  private static final ClassLoader NO_JAR = new ClassLoader(null) {};

  private static Properties props(String... kv) {
    Properties p = new Properties();
    for (int i = 0; i < kv.length; i += 2) p.setProperty(kv[i], kv[i + 1]);
    return p;
  }

  @Test
  void eachOrderPutsItsOwnSettingFirst() throws Exception {
    Path fromProperty = lib("prop");
    Path fromEnv = lib("env");
    Path fromRdpProperty = lib("rdp");
    Map<String, String> env = Map.of(KeltLibrary.ENV, fromEnv.toString());
    Properties both =
        props(KeltLibrary.PROPERTY, fromProperty.toString(),
            KeltLibrary.RDP_PROPERTY, fromRdpProperty.toString());
    var kelt = KeltLibrary.locate(KeltLibrary.KELT_ORDER, env::get, both, tmp, NO_JAR);
    assertEquals(fromProperty, kelt.file());
    assertEquals("system property kelt.library", kelt.origin());
    var rdp = KeltLibrary.locate(KeltLibrary.RDP_ORDER, env::get, both, tmp, NO_JAR);
    assertEquals(fromEnv, rdp.file());
    // Without RDP_JVM_SYS, RDP's order takes -Drdp.jvm.sys.library next; a directory works.
    var rdpProperty =
        KeltLibrary.locate(
            KeltLibrary.RDP_ORDER, Map.<String, String>of()::get,
            props(KeltLibrary.RDP_PROPERTY, fromRdpProperty.getParent().toString(),
                KeltLibrary.PROPERTY, fromProperty.toString()),
            tmp,
            NO_JAR);
    assertEquals(fromRdpProperty, rdpProperty.file());
  }

  @Test
  void aSettingNamingAMissingFileIsAnErrorNotAFallback() throws Exception {
    Path good = lib("good");
    Map<String, String> env = Map.of(KeltLibrary.ENV, tmp.resolve("missing.so").toString());
    var e =
        assertThrows(
            IllegalStateException.class,
            () ->
                KeltLibrary.locate(
                    KeltLibrary.RDP_ORDER, env::get,
                    props(KeltLibrary.PROPERTY, good.toString()), tmp, NO_JAR));
    assertTrue(e.getMessage().contains("from the environment variable RDP_JVM_SYS"), e.getMessage());
  }

  @Test
  void theBuildTreeIsFoundAboveTheWorkingDirectoryAndNothingSaysWhatWasTried()
      throws Exception {
    Path checkout = tmp.resolve("checkout");
    Path built = checkout.resolve(KeltLibrary.BUILD_TREE_LIBRARY);
    Files.createDirectories(built.getParent());
    Files.writeString(built, "x");
    Path deep = Files.createDirectories(checkout.resolve("java/target"));
    var found =
        KeltLibrary.locate(
            KeltLibrary.KELT_ORDER, Map.<String, String>of()::get, props(), deep, NO_JAR);
    assertFalse(found.fromClasspath());
    assertEquals(built, found.file());
    Path elsewhere = Files.createDirectories(tmp.resolve("elsewhere"));
    var e =
        assertThrows(
            IllegalStateException.class,
            () ->
                KeltLibrary.locate(
                    KeltLibrary.KELT_ORDER, Map.<String, String>of()::get, props(), elsewhere,
                    NO_JAR));
    assertTrue(e.getMessage().contains("system property kelt.library (not set)"), e.getMessage());
    assertTrue(
        e.getMessage().contains("the build tree (no build/release/capi/libkelt.so"), e.getMessage());
    assertTrue(e.getMessage().contains("not the native jar"), e.getMessage());
  }
}
