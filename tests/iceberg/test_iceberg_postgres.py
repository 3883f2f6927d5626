# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run` landing into an Iceberg table whose SQL catalog is on PostgreSQL (the
`postgres` ctest fixture, scripts/postgres.sh), read back by pyiceberg's SqlCatalog on the
same database: rows, every (partition, offset) exactly once, the offsets in the snapshot
summary, dead letters once each in the sibling table, `kelt sql` over the catalog, and the
URI's password never printed."""
import json

from pyiceberg.catalog.sql import SqlCatalog

from conftest import cli, service_env
from test_iceberg import SCHEMA, group_offsets, landed_keys, produce, write_records


def test_run_lands_into_a_postgresql_catalog_that_pyiceberg_reads(
        kelt, brokers, make_topic, tmp_path):
    env = service_env("KELT_PG_ENV", "scripts/postgres.sh")
    host, port, db, user = (env["KELT_PG_HOST"], env["KELT_PG_PORT"], env["KELT_PG_DB"],
                            env["KELT_PG_USER"])
    # Trust authentication ignores the password: it is there to be kept out of output.
    secret = "NotShownAnywhere42"
    uri = f"postgresql://{user}:{secret}@{host}:{port}/{db}"
    topic = make_topic(2)
    catalog_name = f"kelt_{topic.replace('-', '_')}"  # own catalog: reruns don't collide
    n = 1200
    write_records(tmp_path / "a.ndjson", n)
    # Three records that do not fit the schema: dead letters (the loop's default policy).
    with open(tmp_path / "a.ndjson", "a") as f:
        for i in range(3):
            f.write(json.dumps({"id": f"bad{i}"}) + "\n")
    produce(kelt, brokers, topic, tmp_path / "a.ndjson")
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    cfg = tmp_path / "kelt.yaml"
    cfg.write_text(f"""brokers: {brokers}
group: g-{topic}
topics: [{topic}]
auto_offset_reset: earliest
schema: schema.json
window: {{max_records: 300, max_wait_ms: 500}}
sinks:
  - iceberg:
      catalog: "{uri}"
      catalog_name: {catalog_name}
      warehouse: warehouse
      namespace: lake
      table: events
""")
    v = cli.run_kelt(kelt, "validate", "--config", str(cfg), "--brokers", brokers)
    assert f"postgresql://{user}@{host}:{port}/{db}" in v.stdout, v.stdout
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                     "--log-level", "debug")
    s = cli.summary_of(p.stdout)
    assert s["caught_up"] and s["rows"] == n and s["sink_errors"] == 0, p.stderr
    assert s["dead_lettered"] == 3, s
    for out in (v.stdout, v.stderr, p.stdout, p.stderr):
        assert secret not in out

    catalog = SqlCatalog(catalog_name, uri=f"postgresql+psycopg2://{user}@{host}:{port}/{db}",
                         warehouse=f"file://{tmp_path / 'warehouse'}")
    table = catalog.load_table("lake.events")
    rows = table.scan().to_arrow()
    assert rows.num_rows == n
    assert sorted(rows.column("id").to_pylist()) == list(range(n))
    # The dead letters, once each, in the sibling table; with the good rows, every
    # (partition, offset) of the topic exactly once.
    dead = catalog.load_table("lake.events_dead_letter").scan().to_arrow()
    assert sorted(json.loads(v)["id"] for v in dead.column("_kafka_value").to_pylist()) == [
        "bad0", "bad1", "bad2"]
    assert all(dead.column("_error_code").to_pylist())
    dead_keys = list(zip(dead.column("_kafka_partition").to_pylist(),
                         dead.column("_kafka_offset").to_pylist()))
    truth = cli.topic_contents(kelt, brokers, topic)
    got = sorted(landed_keys(table) + dead_keys)
    assert got == sorted((q, o) for q, offs in truth.items() for o in offs)
    assert group_offsets(table, f"g-{topic}") == {
        topic: {str(q): max(o) + 1 for q, o in truth.items()}}
    assert len(table.metadata.snapshots) >= 2  # one per window and partition set
    # A second run with nothing new commits nothing.
    before = table.metadata_location
    cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    assert catalog.load_table("lake.events").metadata_location == before
    # kelt sql reads the same table through the PostgreSQL catalog.
    q = cli.run_kelt(kelt, "sql", "--iceberg", uri, "--iceberg-catalog-name", catalog_name,
                     "--iceberg-table", "lake.events",
                     "SELECT count(*) AS n, max(id) AS top FROM landing")
    row = [c.strip() for c in q.stdout.splitlines()[3].strip("|").split("|")]
    assert row == [str(n), str(n - 1)], q.stdout
    assert secret not in q.stdout + q.stderr
