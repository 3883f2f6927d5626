// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Where the tests find the repository and the Kafka broker. */
final class TestEnv {
  private TestEnv() {}

  /** The repository root (system property kelt.root, set by the pom). */
  static Path root() {
    return Path.of(System.getProperty("kelt.root", "..")).toAbsolutePath().normalize();
  }

  /**
   * The real broker's bootstrap address: KELT_KAFKA_BOOTSTRAP, else the KELT_KAFKA_ENV file
   * written by scripts/kafka.sh. Fails (never skips) when neither is there.
   */
  static String bootstrap() throws IOException {
    String direct = System.getenv("KELT_KAFKA_BOOTSTRAP");
    if (direct != null && !direct.isBlank()) return direct.trim();
    String envFile = System.getenv("KELT_KAFKA_ENV");
    if (envFile == null || envFile.isBlank()) {
      throw new IllegalStateException(
          "no Kafka broker: set KELT_KAFKA_BOOTSTRAP or KELT_KAFKA_ENV (scripts/kafka.sh start"
              + " writes the env file; scripts/test.sh does this)");
    }
    for (String line : Files.readAllLines(Path.of(envFile))) {
      if (line.startsWith("KELT_KAFKA_BOOTSTRAP=")) {
        return line.substring("KELT_KAFKA_BOOTSTRAP=".length()).trim();
      }
    }
    throw new IllegalStateException("no KELT_KAFKA_BOOTSTRAP line in " + envFile);
  }

  /** A topic/group name unique to this run. */
  static String unique(String prefix) {
    return prefix + "-" + ProcessHandle.current().pid() + "-" + System.nanoTime();
  }
}
