/* Bring your own records → Load through the C ABI (libkelt.so): RDP's
 * rdp_kafka_elt_load_records_json, then kelt's error struct on a consumer config mistake.
 * Build: cmake --build --preset release --target c_load_records;
 * run:   build/release/examples/c_load_records */
#include <stdio.h>

#include "kelt.h"

int main(void) {
  const char* records =
      "{\"records\":[{\"topic\":\"events\",\"partition\":0,\"offset\":1,"
      "\"value\":\"{\\\"user_id\\\":1,\\\"event\\\":\\\"click\\\"}\"}]}";
  const char* schema =
      "{\"fields\":[{\"name\":\"user_id\",\"data_type\":\"Int64\"},"
      "{\"name\":\"event\",\"data_type\":\"Utf8\"},"
      "{\"name\":\"_kafka_offset\",\"data_type\":\"Int64\"}]}";
  RdpJsonSlice out;
  kelt_consumer* consumer = NULL;
  kelt_error* err = NULL;

  rdp_kafka_elt_load_records_json(&out, records, schema);
  printf("%.*s\n", (int)out.len, (const char*)out.ptr); /* not NUL-terminated */
  rdp_json_slice_free(out);                             /* exactly once */

  if (kelt_consumer_new("{\"brokers\":\"localhost:9092\",\"topic\":\"events\"}", schema,
                        &consumer, &err) != KELT_OK) {
    printf("%s (retriable: %d): %s\n", kelt_error_code_name(err),
           kelt_error_retriable(err), kelt_error_message(err));
    kelt_error_free(err);
  }
  kelt_consumer_free(consumer); /* NULL-safe */
  return 0;
}
