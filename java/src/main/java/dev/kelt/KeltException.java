// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

/** A failed {@code kelt_*} call: the C ABI's code name, message and retriable flag. */
public final class KeltException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final String code;
  private final boolean retriable;

  KeltException(String code, String message, boolean retriable) {
    super(code + ": " + message);
    this.code = code;
    this.retriable = retriable;
  }

  /**
   * Return the stable code name: INVALID, PARSE_ERROR, TYPE_ERROR, IO_ERROR, KAFKA, UNAVAILABLE,
   * NOT_FOUND, CANCELLED, NOT_IMPLEMENTED, INTERNAL, OUT_OF_MEMORY.
   */
  public String code() {
    return code;
  }

  /** Return true when retrying the same operation may succeed. */
  public boolean retriable() {
    return retriable;
  }
}
