# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run --schema registry:<subject>` into an Iceberg table (SQL catalog on SQLite,
local warehouse) while the subject gains an optional field: the table's schema gains the
column with a new field id (a new schema in the metadata, current-schema-id moved on),
and pyiceberg reads the older data files with nulls in it.

Needs the registry (KELT_REGISTRY_ENV), the broker (KELT_KAFKA_ENV) and the binary under
test (KELT_BIN): tests/CMakeLists.txt's registry_tests.
"""
import signal
import time

from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.types import StringType

from conftest import AvroTopic, start_run

ORDER_V1 = {"type": "record", "name": "FlatOrder", "namespace": "shop",
            "fields": [{"name": "id", "type": "long"},
                       {"name": "customer", "type": "string"},
                       {"name": "amount", "type": "double"}]}
# Version 2 adds an optional field (a BACKWARD-compatible change).
ORDER_V2 = dict(ORDER_V1, fields=ORDER_V1["fields"] + [
    {"name": "coupon", "type": ["null", "string"], "default": None}])


def order(i, v2=False):
    o = {"id": i, "customer": f"c{i % 7}", "amount": i / 4}
    if v2:
        o["coupon"] = f"SAVE{i}" if i % 2 == 0 else None
    return o


def landed(catalog):
    try:
        return catalog.load_table("lake.orders").scan().to_arrow().num_rows
    except Exception:  # noqa: BLE001  (not created yet)
        return 0


def wait_rows(proc, catalog, n, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline and landed(catalog) < n:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    assert landed(catalog) >= n


def test_a_new_schema_version_mid_run_adds_an_iceberg_column_with_a_new_field_id(
        kelt, broker, registry_url, tmp_path):
    orders = AvroTopic(kelt, broker, registry_url, prefix="avro-ice-")
    orders.produce(ORDER_V1, [order(i) for i in range(20)])

    config = orders.write_config(
        tmp_path / "kelt.yaml", broker, registry_url,
        [{"iceberg": {"catalog": "catalog.db", "warehouse": "warehouse",
                      "namespace": "lake", "table": "orders"}}])
    catalog = SqlCatalog("kelt", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{tmp_path / 'warehouse'}")
    proc = start_run(kelt, config)
    try:
        wait_rows(proc, catalog, 20)
        before = catalog.load_table("lake.orders")
        orders.produce(ORDER_V2, [order(i, True) for i in range(20, 30)])
        wait_rows(proc, catalog, 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert "the landing schema grows" in err, err
    assert "the table's schema grows: schema id 0 -> 1, columns added: coupon" in err, err

    # The first schema had no coupon; the table's current schema has it, with the next
    # field id after every earlier column's, optional.
    old_schema = before.schema()
    assert "coupon" not in [f.name for f in old_schema.fields]
    table = catalog.load_table("lake.orders")
    meta = table.metadata
    assert [s.schema_id for s in meta.schemas] == [0, 1]
    assert meta.current_schema_id == 1
    coupon = table.schema().find_field("coupon")
    assert coupon.field_id == max(f.field_id for f in old_schema.fields) + 1
    assert coupon.field_type == StringType() and not coupon.required
    assert meta.last_column_id == coupon.field_id
    for f in old_schema.fields:  # earlier columns keep their ids
        assert table.schema().find_field(f.name).field_id == f.field_id

    rows = {r["id"]: r for r in table.scan().to_arrow().to_pylist()}
    assert sorted(rows) == list(range(30))
    assert all(rows[i]["coupon"] is None for i in range(20))  # files written before
    assert [rows[i]["coupon"] for i in range(20, 30)] == \
        [order(i, True)["coupon"] for i in range(20, 30)]
    assert rows[25]["customer"] == "c4" and rows[25]["amount"] == 6.25
    # Every (partition, offset) once.
    keys = [(r["_kafka_partition"], r["_kafka_offset"]) for r in rows.values()]
    assert sorted(keys) == [(0, o) for o in range(30)]
    # A time-travel read of the snapshot before the growth sees the old schema's rows.
    old = table.scan(snapshot_id=before.current_snapshot().snapshot_id).to_arrow()
    assert old.num_rows == 20
