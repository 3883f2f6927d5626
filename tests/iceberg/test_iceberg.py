# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt run` landing a topic into an Iceberg table (SQL catalog on SQLite, local
warehouse), read back by pyiceberg's SqlCatalog: rows, types, every (partition, offset)
exactly once, a second run appending exactly the new records, and kill -9 mid-run."""
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.transforms import BucketTransform
from pyiceberg.types import DoubleType, LongType, StringType, TimestamptzType

from conftest import cli

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
from iceberg_lineage import iceberg_leftovers  # noqa: E402

SCHEMA = {"fields": [{"name": "id", "data_type": "Int64"},
                     {"name": "name", "data_type": "Utf8"},
                     {"name": "v", "data_type": "Float64"},
                     {"name": "at", "data_type": "Timestamp"}]}


def write_records(path, n, start=0):
    with open(path, "w") as f:
        for i in range(start, start + n):
            f.write(json.dumps({"id": i, "name": f"n{i}", "v": i * 0.5,
                                "at": f"2026-01-{1 + i % 28:02d}T10:00:00Z"}) + "\n")


def write_config(tmp_path, brokers, topic, window=200, partition="", extra=""):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    cfg = tmp_path / "kelt.yaml"
    cfg.write_text(f"""brokers: {brokers}
group: g-{topic}
topics: [{topic}]
auto_offset_reset: earliest
schema: schema.json
window: {{max_records: {window}, max_wait_ms: 500}}
{extra}sinks:
  - iceberg:
      catalog: catalog.db
      warehouse: warehouse
      namespace: lake
      table: events
      partition: "{partition}"
""")
    return cfg


def produce(kelt, brokers, topic, path):
    cli.run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic, "--file", str(path))


def load_table(tmp_path):
    catalog = SqlCatalog("kelt", uri=f"sqlite:///{tmp_path / 'catalog.db'}",
                         warehouse=f"file://{tmp_path / 'warehouse'}")
    return catalog.load_table("lake.events")


def landed_keys(table):
    t = table.scan(selected_fields=("_kafka_partition", "_kafka_offset")).to_arrow()
    return list(zip(t.column("_kafka_partition").to_pylist(),
                    t.column("_kafka_offset").to_pylist()))


def assert_exactly_once(kelt, brokers, topic, table):
    truth = cli.topic_contents(kelt, brokers, topic)
    expected = sorted((p, o) for p, offs in truth.items() for o in offs)
    got = sorted(landed_keys(table))
    assert len(got) == len(set(got)), "a record landed twice"
    assert got == expected
    return truth


def group_offsets(table, group):
    """The offsets the current snapshot's lineage stores for `group`."""
    key = f"kelt.offsets.{group}"
    snap = table.current_snapshot()
    while snap is not None:
        props = snap.summary.additional_properties if snap.summary else {}
        if key in props:
            return json.loads(props[key])
        snap = table.snapshot_by_id(snap.parent_snapshot_id) if snap.parent_snapshot_id else None
    return {}


def test_run_lands_a_topic_and_a_second_run_appends_only_new_records(
        kelt, brokers, make_topic, tmp_path):
    topic = make_topic(3)
    n = 3000
    write_records(tmp_path / "a.ndjson", n)
    produce(kelt, brokers, topic, tmp_path / "a.ndjson")
    cfg = write_config(tmp_path, brokers, topic)
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    s = cli.summary_of(p.stdout)
    assert s["caught_up"] and s["rows"] == n and s["sink_errors"] == 0, p.stderr

    table = load_table(tmp_path)
    # Types: the landing schema's, with Iceberg field ids 1..n in order.
    fields = {f.name: (f.field_id, f.field_type) for f in table.schema().fields}
    assert fields["id"] == (1, LongType())
    assert fields["name"] == (2, StringType())
    assert fields["v"] == (3, DoubleType())
    assert fields["at"] == (4, TimestamptzType())
    assert fields["_kafka_offset"][1] == LongType()
    rows = table.scan().to_arrow()
    assert rows.num_rows == n
    assert rows.schema.field("at").type == pa.timestamp("us", tz="UTC")
    by_id = {r["id"]: r for r in rows.select(["id", "name", "v"]).to_pylist()}
    assert by_id[7] == {"id": 7, "name": "n7", "v": 3.5}
    truth = assert_exactly_once(kelt, brokers, topic, table)
    assert group_offsets(table, f"g-{topic}") == {
        topic: {str(q): max(o) + 1 for q, o in truth.items()}}
    # Column statistics reach the reader: a filter on id prunes files and is exact.
    assert table.scan(row_filter="id >= 2990").to_arrow().num_rows == 10
    first_snapshot = table.current_snapshot().snapshot_id

    write_records(tmp_path / "b.ndjson", 500, start=n)
    produce(kelt, brokers, topic, tmp_path / "b.ndjson")
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    s2 = cli.summary_of(p.stdout)
    assert s2["rows"] == 500, p.stderr
    table = load_table(tmp_path)
    assert_exactly_once(kelt, brokers, topic, table)
    # The new snapshots added exactly the new records, on top of the first run's.
    added, snap = 0, table.current_snapshot()
    while snap.snapshot_id != first_snapshot:
        assert snap.summary.operation.value == "append"
        added += int(snap.summary.additional_properties["added-records"])
        snap = table.snapshot_by_id(snap.parent_snapshot_id)
    assert added == 500
    assert table.scan().to_arrow().num_rows == n + 500
    # kelt sql reads the table at its current snapshot (committed files only).
    q = cli.run_kelt(kelt, "sql", "--iceberg", str(tmp_path / "catalog.db"),
                     "--iceberg-table", "lake.events",
                     "SELECT count(*) AS n, count(DISTINCT (_kafka_partition, _kafka_offset)) "
                     "AS d, max(id) AS top FROM landing")
    row = [c.strip() for c in q.stdout.splitlines()[3].strip("|").split("|")]
    assert row == [str(n + 500), str(n + 500), str(n + 499)], q.stdout


def test_kill_9_mid_run_then_rerun_lands_each_record_once(kelt, brokers, make_topic, tmp_path):
    """kill -9 at random moments (a start, a window, a commit), ROUNDS times, then a
    final run: every offset once, and no leftover of a crashed commit once the next
    start has cleaned up. KELT_ICEBERG_CRASH_ROUNDS (5 here) and _RECORDS (6,000) make
    the long variant: scripts/iceberg_crash_test.sh."""
    rounds = int(os.environ.get("KELT_ICEBERG_CRASH_ROUNDS", "5"))
    n = int(os.environ.get("KELT_ICEBERG_CRASH_RECORDS", "6000"))
    seed = int(os.environ.get("KELT_ICEBERG_CRASH_SEED", str(random.randrange(1 << 30))))
    rng = random.Random(seed)
    print(f"kill -9 x{rounds}, {n} records, seed {seed}")
    topic = make_topic(3)
    write_records(tmp_path / "r.ndjson", n)
    produce(kelt, brokers, topic, tmp_path / "r.ndjson")
    # A static member: each restart takes the killed one's place at once instead of
    # waiting for its session to end (45 s by default, per round).
    cfg = write_config(tmp_path, brokers, topic, window=100,
                       extra="instance_id: crash-worker\nsession_timeout_ms: 30000\n")
    killed_landing = 0
    for i in range(rounds):
        log = tmp_path / f"run{i}.log"
        with open(log, "w") as err:
            proc = subprocess.Popen([kelt, "run", "-c", str(cfg), "--progress", "lines",
                                     "--set", "progress_interval_ms=50", "--log-level",
                                     "info"], stdout=subprocess.DEVNULL, stderr=err)
        # A random moment: mostly while windows land, sometimes while it starts.
        started = time.monotonic()
        early = rng.random() < 0.2
        delay = rng.uniform(0.05, 1.0)
        while not early and time.monotonic() - started < 60 and proc.poll() is None:
            if re.search(r"^progress records=\d+ bytes=\d+ rows=[1-9]", log.read_text(), re.M):
                break
            time.sleep(0.02)
        time.sleep(delay)
        assert proc.poll() is None, f"run {i} ended:\n{log.read_text()[-3000:]}"
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if re.search(r"^progress records=\d+ bytes=\d+ rows=[1-9]", log.read_text(), re.M):
            killed_landing += 1
    assert killed_landing >= rounds // 2, "too few runs were killed while landing"
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                     timeout=300)
    assert cli.summary_of(p.stdout)["caught_up"], p.stderr
    table = load_table(tmp_path)
    truth = assert_exactly_once(kelt, brokers, topic, table)
    assert sum(len(v) for v in truth.values()) == n
    # The next start removes what the last crash left (the final run's own start kept
    # files a commit in flight on its base could still have needed).
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                     "--log-level", "info")
    assert cli.summary_of(p.stdout)["rows"] == 0, p.stderr
    assert_no_leftovers(load_table(tmp_path))


def test_a_run_after_a_pyiceberg_commit_lands_on_top_and_removes_only_dead_files(
        kelt, brokers, make_topic, tmp_path):
    """pyiceberg reads kelt's `v0000N-…` names as version -1 and writes
    `00000-<uuid>.metadata.json`: versions restart. The next runs land on top, each start's
    cleanup keeps the lineage whole, and nothing dead is left."""
    topic = make_topic(2)
    write_records(tmp_path / "a.ndjson", 400)
    produce(kelt, brokers, topic, tmp_path / "a.ndjson")
    cfg = write_config(tmp_path, brokers, topic, window=100)
    cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    with load_table(tmp_path).transaction() as tx:
        tx.set_properties({"owner": "pyiceberg"})
    table = load_table(tmp_path)
    assert pathlib.Path(table.metadata_location).name.startswith("00000-"), \
        table.metadata_location
    write_records(tmp_path / "b.ndjson", 300, start=400)
    produce(kelt, brokers, topic, tmp_path / "b.ndjson")
    for expected in (300, 0):  # the second start cleans up after the first
        p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress",
                         "none", "--log-level", "info")
        assert cli.summary_of(p.stdout)["rows"] == expected, p.stderr
        assert "not cleaned up" not in p.stderr, p.stderr
    table = load_table(tmp_path)
    assert table.properties["owner"] == "pyiceberg"
    assert sum(len(v) for v in assert_exactly_once(kelt, brokers, topic, table).values()) == 700
    assert table.scan().to_arrow().num_rows == 700
    assert_no_leftovers(table)


def assert_no_leftovers(table):
    """Every kelt file under the table's data/ and metadata/ is named by the current
    lineage (metadata files rolled out of the metadata log aside: Iceberg keeps those)."""
    extra, _, _ = iceberg_leftovers(table)
    assert not extra, f"left over: {extra[:10]} ({len(extra)} files)"


def test_a_partitioned_table_prunes_by_day_and_buckets_as_pyiceberg_does(
        kelt, brokers, make_topic, tmp_path):
    topic = make_topic(2)
    n = 1000
    write_records(tmp_path / "a.ndjson", n)
    produce(kelt, brokers, topic, tmp_path / "a.ndjson")
    cfg = write_config(tmp_path, brokers, topic, window=500,
                       partition="day(at), bucket[4](id)")
    cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    table = load_table(tmp_path)
    assert [(f.name, str(f.transform)) for f in table.spec().fields] == [
        ("at_day", "day"), ("id_bucket", "bucket[4]")]
    assert_exactly_once(kelt, brokers, topic, table)
    # Records i land on day 1 + i % 28 of January 2026: each day is its own files.
    files = list(table.scan().plan_files())
    assert {f.file.partition[0] for f in files} <= set(range(20454, 20454 + 28))
    # Every row's bucket is the one pyiceberg computes (Iceberg's murmur3).
    bucket = BucketTransform(4).transform(LongType())
    for task in files:
        ids = pq.read_table(task.file.file_path.removeprefix("file://"),
                            columns=["id"]).column("id").to_pylist()
        assert {bucket(i) for i in ids} == {task.file.partition[1]}, task.file.file_path
    jan_5 = table.scan(row_filter="at >= '2026-01-05T00:00:00+00:00' and "
                                  "at < '2026-01-06T00:00:00+00:00'")
    assert jan_5.to_arrow().num_rows == len([i for i in range(n) if i % 28 == 4])
    assert len(list(jan_5.plan_files())) < len(files)  # pruned by the partition values
    one = table.scan(row_filter="id == 123").to_arrow()
    assert one.num_rows == 1 and one.column("name").to_pylist() == ["n123"]


def test_the_shipped_example_config_validates(kelt, brokers):
    example = cli.ROOT / "examples/config/uber_iceberg.yaml"
    p = cli.run_kelt(kelt, "validate", "--config", str(example), "--brokers", brokers)
    assert p.stdout.startswith("config OK")
    assert "sinks[0] iceberg:" in p.stdout and "table uber.rides" in p.stdout


def test_compact_and_expire_keep_each_row_once_and_a_later_run_resumes(
        kelt, brokers, make_topic, tmp_path):
    topic = make_topic(2)
    n = 600
    write_records(tmp_path / "a.ndjson", n)
    produce(kelt, brokers, topic, tmp_path / "a.ndjson")
    cfg = write_config(tmp_path, brokers, topic, window=25)  # many small windows
    cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    table = load_table(tmp_path)
    files_before = len(list(table.scan().plan_files()))
    assert files_before >= 10
    offsets = group_offsets(table, f"g-{topic}")
    where = ["--catalog", str(tmp_path / "catalog.db"), "--table", "lake.events"]

    p = cli.run_kelt(kelt, "iceberg", "compact", *where)
    out = json.loads(p.stdout)
    assert out["committed"] and out["files_rewritten"] == files_before, p.stdout
    p = cli.run_kelt(kelt, "iceberg", "expire", *where, "--older-than", "0s",
                     "--retain-last", "1")
    out = json.loads(p.stdout)
    assert out["kept_snapshots"] == 1 and out["deleted_data_files"] == files_before, p.stdout

    table = load_table(tmp_path)
    assert len(table.snapshots()) == 1
    assert table.current_snapshot().summary.operation.value == "replace"
    files = list(table.scan().plan_files())
    assert len(files) == out_files(tmp_path) == 1
    assert_exactly_once(kelt, brokers, topic, table)
    assert group_offsets(table, f"g-{topic}") == offsets  # on the replace snapshot itself

    write_records(tmp_path / "b.ndjson", 100, start=n)
    produce(kelt, brokers, topic, tmp_path / "b.ndjson")
    p = cli.run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    assert cli.summary_of(p.stdout)["rows"] == 100, p.stderr  # resumed, not replayed
    table = load_table(tmp_path)
    assert_exactly_once(kelt, brokers, topic, table)
    assert table.scan().to_arrow().num_rows == n + 100

    # Bad usage is exit 2; a missing table is an error naming it and the catalog.
    p = cli.run_kelt(kelt, "iceberg", "expire", *where, "--older-than", "soon", check=False)
    assert p.returncode == 2 and "--older-than 'soon'" in p.stderr
    p = cli.run_kelt(kelt, "iceberg", "compact", "--catalog", str(tmp_path / "catalog.db"),
                     "--table", "lake.nope", check=False)
    assert p.returncode == 1 and "lake.nope" in p.stderr and "catalog.db" in p.stderr


def out_files(tmp_path):
    """The Parquet files left in the table's data directory."""
    return len(list((tmp_path / "warehouse/lake/events/data").glob("*.parquet")))
