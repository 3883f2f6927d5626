// Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
package dev.kelt;

import org.json.JSONObject;

/** An {@code {"ok":false,…}} envelope from an {@code rdp_*} call. */
public final class RdpNativeException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final transient JSONObject errorObject;

  RdpNativeException(String message, JSONObject errorObject) {
    super(message);
    this.errorObject = errorObject;
  }

  /**
   * Return the pipeline error object {@code {"code","message","stage"}} of {@code
   * rdp_run_pipeline_json}, or null for the other calls (whose error is a string).
   */
  public JSONObject errorObject() {
    return errorObject;
  }
}
