# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run` landing into an Iceberg table whose warehouse is on S3 (moto's server, the
`s3` ctest fixture, scripts/s3.sh): data files, manifests, manifest lists and metadata
JSON are objects in the bucket and nothing is written locally but the catalog; pyiceberg
reads the table through its S3 FileIO; a second run appends exactly the new records;
`kelt sql` reads the table from the S3 warehouse."""
import json

import pyarrow.fs as pafs
from pyiceberg.catalog.sql import SqlCatalog

from conftest import cli, service_env
from test_iceberg import SCHEMA, assert_exactly_once, group_offsets, produce, write_records


def test_run_lands_into_an_s3_warehouse_that_pyiceberg_reads(
        kelt, brokers, make_topic, tmp_path):
    env = service_env("KELT_S3_ENV", "scripts/s3.sh")
    endpoint, bucket = env["KELT_S3_ENDPOINT"], env["KELT_S3_BUCKET"]
    topic = make_topic(2)
    prefix = f"iceberg-{topic}"
    warehouse = f"s3://{bucket}/{prefix}"
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    cfg = tmp_path / "kelt.yaml"
    cfg.write_text(f"""brokers: {brokers}
group: g-{topic}
topics: [{topic}]
auto_offset_reset: earliest
schema: schema.json
window: {{max_records: 400, max_wait_ms: 500}}
sinks:
  - iceberg:
      catalog: catalog.db
      warehouse: {warehouse}
      s3_endpoint: {endpoint}
      s3_region: us-east-1
      s3_access_key: testing
      s3_secret_key: testing
      namespace: lake
      table: events
""")
    n = 1000
    write_records(tmp_path / "a.ndjson", n)
    produce(kelt, brokers, topic, tmp_path / "a.ndjson")
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    s = cli.summary_of(p.stdout)
    assert s["caught_up"] and s["rows"] == n and s["sink_errors"] == 0, p.stderr
    assert not (tmp_path / "warehouse").exists() and not (tmp_path / "lake").exists()

    # Every kind of file is an object under the table's prefix.
    host = endpoint.removeprefix("http://")
    fs = pafs.S3FileSystem(endpoint_override=host, scheme="http", access_key="testing",
                           secret_key="testing", region="us-east-1")
    objects = [i.path for i in fs.get_file_info(
        pafs.FileSelector(f"{bucket}/{prefix}/lake/events", recursive=True)) if i.is_file]
    names = [o.rsplit("/", 1)[1] for o in objects]
    assert any(o.endswith(".parquet") and "/data/kelt-" in o for o in objects), objects
    assert any(x.endswith(".metadata.json") for x in names), names
    assert any(x.startswith("snap-") and x.endswith(".avro") for x in names), names
    assert any(x.startswith("kelt-") and x.endswith("-m0.avro") for x in names), names

    catalog = SqlCatalog("kelt", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=warehouse, **{
                             "s3.endpoint": endpoint, "s3.access-key-id": "testing",
                             "s3.secret-access-key": "testing", "s3.region": "us-east-1",
                             "py-io-impl": "pyiceberg.io.pyarrow.PyArrowFileIO"})
    table = catalog.load_table("lake.events")
    assert table.metadata_location.startswith(f"{warehouse}/lake/events/metadata/")
    rows = table.scan().to_arrow()
    assert rows.num_rows == n
    assert sorted(rows.column("id").to_pylist()) == list(range(n))
    truth = assert_exactly_once(kelt, brokers, topic, table)
    assert group_offsets(table, f"g-{topic}") == {
        topic: {str(q): max(o) + 1 for q, o in truth.items()}}
    # Every data file the table references is on S3 and is one of the objects listed.
    files = {t.file.file_path for t in table.scan().plan_files()}
    assert files and all(f.startswith(f"{warehouse}/lake/events/data/") for f in files)
    assert {f.removeprefix("s3://") for f in files} <= set(objects)

    write_records(tmp_path / "b.ndjson", 300, start=n)
    produce(kelt, brokers, topic, tmp_path / "b.ndjson")
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    assert cli.summary_of(p.stdout)["rows"] == 300, p.stderr
    table = catalog.load_table("lake.events")
    assert table.scan().to_arrow().num_rows == n + 300
    assert_exactly_once(kelt, brokers, topic, table)

    # kelt sql reads the table at its current snapshot from the S3 warehouse (endpoint
    # and region as flags, credentials from the AWS environment).
    q = cli.run_kelt(kelt, "sql", "--iceberg", str(tmp_path / "catalog.db"),
                     "--iceberg-table", "lake.events", "--s3-endpoint", endpoint,
                     "--s3-region", "us-east-1",
                     "SELECT count(*) AS n, count(DISTINCT (_kafka_partition, _kafka_offset)) "
                     "AS d, max(id) AS top FROM landing",
                     env={"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"})
    row = [c.strip() for c in q.stdout.splitlines()[3].strip("|").split("|")]
    assert row == [str(n + 300), str(n + 300), str(n + 299)], q.stdout
    assert "testing" not in q.stdout + q.stderr
