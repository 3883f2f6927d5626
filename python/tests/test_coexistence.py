# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt carries its own librdkafka (static, with its own OpenSSL) and exports none of it:
one process can use confluent_kafka (whose wheel brings another librdkafka), pyarrow (which
exports an OpenSSL of its own) and kelt together, against the real broker."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pyarrow as pa

import confluent_kafka
import kelt


def exported_symbols(path: str) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", path], check=True,
                         capture_output=True, text=True).stdout
    return [line.split()[-1] for line in out.splitlines() if line.strip()]


def test_the_module_exports_no_kafka_or_tls_symbol():
    module = Path(kelt._kelt.__file__)
    leaked = [s for s in exported_symbols(str(module))
              if s.startswith(("rd_kafka", "SSL_", "EVP_", "OPENSSL", "CRYPTO_", "X509",
                               "ZSTD_", "LZ4", "curl_", "Curl_"))]
    assert leaked == [], f"{module.name} exports {leaked[:10]}"


def test_confluent_kafka_pyarrow_and_kelt_in_one_process(broker, fresh):
    topic, group = fresh("coexist"), fresh("g")
    # confluent_kafka's own librdkafka produces, over its own TLS-capable build.
    producer = confluent_kafka.Producer({"bootstrap.servers": broker,
                                         "enable.idempotence": True})
    for i in range(50):
        producer.produce(topic, value=('{"id": %d, "name": "n%d"}' % (i, i)).encode())
    assert producer.flush(30) == 0
    # kelt reads it into pyarrow, in the same process.
    schema = [{"name": "id", "data_type": "int64"}, {"name": "name", "data_type": "utf8"}]
    with kelt.Consumer(broker, group, topic) as c:
        c.start_catch_up()
        rows = []
        while not c.caught_up:
            w = c.poll(schema, max_records=1000, max_wait_ms=5000)
            rows += w.to_rows()
            c.commit(w)
        table = pa.table(w) if w.row_count() else None
    assert sorted(r[0] for r in rows) == list(range(50))
    assert table is None or table.num_columns >= 2
    # confluent_kafka's consumer sees kelt's commit (a different librdkafka, same group).
    consumer = confluent_kafka.Consumer({"bootstrap.servers": broker, "group.id": group,
                                         "enable.auto.commit": False})
    try:
        committed = consumer.committed([confluent_kafka.TopicPartition(topic, 0)], 30)
    finally:
        consumer.close()
    assert committed[0].offset == 50
    # Two librdkafkas in one process: kelt's static one and the wheel's.
    assert kelt.librdkafka_version().split(".")[0].isdigit()
    assert confluent_kafka.libversion()[0].split(".")[0].isdigit()
