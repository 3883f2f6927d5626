# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Kafka behaviour on librdkafka's in-process mock cluster (no broker): RDP's calls, the
stateful consumer's commit-on-request, the GIL released while polling, the ELT loop."""

from __future__ import annotations

import json
import threading
import time

import pyarrow as pa
import pytest

import kelt

SCHEMA = [{"name": "id", "data_type": "int64"}, {"name": "name", "data_type": "utf8"},
          {"name": "_kafka_partition", "data_type": "int64"},
          {"name": "_kafka_offset", "data_type": "int64"}]
FAST = {"session.timeout.ms": "6000", "heartbeat.interval.ms": "500"}


def produce(bootstrap, topic, ids):
    data = pa.table({"id": list(ids), "name": [f"n{i}" for i in ids]})
    return kelt.export_dataset_to_kafka(bootstrap, topic, data, key_column="id")


def test_rdp_calls_round_trip(mock_cluster, fresh):
    topic = fresh("rdp")
    mock_cluster.create_topic(topic, 1)
    b = mock_cluster.bootstraps
    dataset = {"schema": {"fields": [{"name": "id", "data_type": "Int64"},
                                     {"name": "name", "data_type": "Utf8"}]},
               "rows": [[{"Int64": 1}, {"Utf8": "a"}], [{"Int64": 2}, "Null"]]}
    assert kelt.export_dataset_to_kafka(b, topic, dataset) == 2
    assert kelt.export_dataset_to_kafka(b, topic, json.dumps(dataset), key_column="name") == 2
    recs = json.loads(kelt.poll_kafka_window(b, fresh("g"), topic, max_records=2,
                                             properties=FAST))
    assert [json.loads(r["value"]) for r in recs["records"]] == [
        {"id": 1, "name": "a"}, {"id": 2, "name": None}]
    assert [r["key"] for r in recs["records"]] == ["0", "1"]
    w = kelt.poll_kafka_window_loaded(b, fresh("g"), topic, SCHEMA, max_records=10,
                                      properties=FAST)
    assert w.to_rows() == [[1, "a", 0, 0], [2, None, 0, 1], [1, "a", 0, 2], [2, None, 0, 3]]
    assert w.stats["records"] == 4


def test_rdp_poll_commits_so_the_next_call_advances(mock_cluster, fresh):
    topic, group = fresh("adv"), fresh("g")
    mock_cluster.create_topic(topic, 1)
    produce(mock_cluster.bootstraps, topic, range(5))
    first = kelt.poll_kafka_window_loaded(mock_cluster.bootstraps, group, topic, SCHEMA,
                                          max_records=3, properties=FAST)
    second = kelt.poll_kafka_window_loaded(mock_cluster.bootstraps, group, topic, SCHEMA,
                                           max_records=3, properties=FAST)
    assert [r[0] for r in first.to_rows()] == [0, 1, 2]
    assert [r[0] for r in second.to_rows()] == [3, 4]


def test_consumer_commits_only_on_request(mock_cluster, fresh):
    topic, group = fresh("c"), fresh("g")
    mock_cluster.create_topic(topic, 2)
    assert produce(mock_cluster.bootstraps, topic, range(20)) == 20
    with kelt.Consumer(mock_cluster.bootstraps, group, topic, properties=FAST) as c:
        w = c.poll(SCHEMA, max_records=100)
        assert w.row_count() == 20
        assert sorted(r[0] for r in w.to_rows()) == list(range(20))
        assert sorted(c.assignment()) == [(topic, 0), (topic, 1)]
        assert all(o < 0 for o in c.committed().values())  # nothing committed yet
        assert sum(l.high_watermark for l in c.lag()) == 20
        # not committed: a new member of the group reads everything again
    with kelt.Consumer(mock_cluster.bootstraps, group, topic, properties=FAST) as c:
        w = c.poll(SCHEMA, max_records=100)
        assert w.row_count() == 20 and w.end_reason == "end_of_partitions"
        assert sorted(s.count for s in w.spans) == sorted(
            [sum(1 for r in w.to_rows() if r[2] == p) for p in (0, 1)])
        c.commit(w)
        committed = c.committed()
        assert sum(committed.values()) == 20
        assert {s.partition: s.last_offset + 1 for s in w.spans} == {
            p: o for (_, p), o in committed.items()}
        assert all(l.lag == 0 for l in c.lag())
    with kelt.Consumer(mock_cluster.bootstraps, group, [topic], properties=FAST) as c:
        assert c.poll(SCHEMA, max_records=100, max_wait_ms=3000).row_count() == 0
        produce(mock_cluster.bootstraps, topic, [99])
        polled = c.poll_records(max_records=10)
        assert [json.loads(r["value"])["id"]
                for r in json.loads(polled.records_json)["records"]] == [99]
        c.commit(polled)
    assert c.closed
    with pytest.raises(kelt.InvalidError, match="closed"):
        c.poll(SCHEMA)


def test_a_window_that_fails_to_load_is_read_again(mock_cluster, fresh):
    topic, group = fresh("poison"), fresh("g")
    mock_cluster.create_topic(topic, 1)
    payloads = [json.dumps({"id": i, "name": f"n{i}"}) for i in range(6)]
    payloads[3] = '{"id": "three"}'
    assert kelt.export_dataset_to_kafka(mock_cluster.bootstraps, topic,
                                        pa.table({"payload": payloads}),
                                        value_column="payload") == 6
    with kelt.Consumer(mock_cluster.bootstraps, group, topic, properties=FAST) as c:
        for _ in range(2):  # the same record fails again: the window was given back
            with pytest.raises(kelt.SchemaMismatchError, match=rf"^schema mismatch: .*\(at {topic}\[0\]@3, "):
                c.poll(SCHEMA, max_records=100)
        w = c.poll(SCHEMA, max_records=100, on_bad_record="dead_letter")
        assert [r[0] for r in w.to_rows()] == [0, 1, 2, 4, 5]
        assert w.dead_letters["_kafka_offset"].to_pylist() == [3]
        c.commit(w)
        assert c.committed() == {(topic, 0): 6}


def test_poll_releases_the_gil(mock_cluster, fresh):
    topic = fresh("gil")
    mock_cluster.create_topic(topic, 1)
    stamps: list[float] = []
    done = threading.Event()

    def count():
        i = 0
        while not done.is_set():
            i += 1
            if i % 1000 == 0:
                stamps.append(time.monotonic())

    with kelt.Consumer(mock_cluster.bootstraps, fresh("g"), topic, properties=FAST) as c:
        thread = threading.Thread(target=count)
        thread.start()
        try:
            start = time.monotonic()
            w = c.poll(SCHEMA, max_wait_ms=1500, stop_at_end=False)  # an empty topic: waits
            end = time.monotonic()
        finally:
            done.set()
            thread.join()
    assert w.row_count() == 0 and end - start >= 1.0
    # The other thread ran in the middle of the poll: impossible if it held the GIL.
    inside = [t for t in stamps if start + 0.3 < t < end - 0.3]
    assert len(inside) > 10, (len(stamps), len(inside))


def test_export_is_a_kafka_error_when_delivery_fails(fresh):
    with pytest.raises(kelt.KafkaError) as info:
        kelt.export_dataset_to_kafka("127.0.0.1:1", fresh("t"), pa.table({"a": [1]}),
                                     message_timeout_ms=500)
    assert isinstance(info.value, OSError) and info.value.code == "KAFKA_ERROR"


def test_elt_loop_lands_in_parquet_and_duckdb_and_resumes(mock_cluster, fresh, tmp_path):
    topic, group = fresh("elt"), fresh("g")
    mock_cluster.create_topic(topic, 2)
    produce(mock_cluster.bootstraps, topic, range(50))
    seen = []
    sinks = [kelt.ParquetSink(root=str(tmp_path / "landing")),
             kelt.DuckDbSink(path=str(tmp_path / "landing.duckdb"), table="events")]
    with kelt.EltLoop(mock_cluster.bootstraps, group, topic, SCHEMA, sinks,
                      max_records=20, until_caught_up=True, properties=FAST) as loop:
        # the callback may look at the loop that runs it
        stats = loop.run(on_window=lambda st, win: seen.append(
            win["records"] if loop.stats["windows"] == st["windows"] else -1000))
        assert [f["name"] for f in loop.landing_schema["fields"]][-1] == "_kafka_topic"
    assert stats["rows"] == 50 and stats["caught_up"] and stats["bad_records"] == 0
    assert sum(seen) == 50
    assert sum(stats["committed"].values()) == 50
    s = kelt.SqlSession()
    s.register_landing("p", str(tmp_path / "landing"), topic=topic)
    s.register_landing("d", str(tmp_path / "landing.duckdb"), format="duckdb", table="events")
    for view in ("p", "d"):
        assert s.query(f"SELECT count(DISTINCT id) AS n, count(*) AS c FROM {view}").to_pylist() == [
            {"n": 50, "c": 50}]
    # An incremental model reads only what is new each run.
    model = dict(name="ids", sql="SELECT id, name FROM df WHERE id % 2 = 0",
                 location=str(tmp_path / "landing"), topic=topic,
                 output_path=str(tmp_path / "curated.duckdb"))
    first = kelt.run_incremental(**model)
    assert first["rows_read"] == 50 and first["rows_written"] == 25
    assert sum(first["next_offsets"].values()) == 50
    # A second run finds its resume point in the sinks and lands nothing new.
    produce(mock_cluster.bootstraps, topic, range(50, 55))
    with kelt.EltLoop(mock_cluster.bootstraps, group, topic, SCHEMA, sinks,
                      until_caught_up=True, properties=FAST) as loop:
        assert loop.run()["rows"] == 5
    second = kelt.run_incremental(**model)
    assert second["rows_read"] == 5 and second["rows_written"] == 3  # 50, 52, 54


def test_elt_loop_callback_error_stops_the_run(mock_cluster, fresh, tmp_path):
    topic = fresh("eltcb")
    mock_cluster.create_topic(topic, 1)
    produce(mock_cluster.bootstraps, topic, range(10))

    def boom(stats, window):
        raise RuntimeError("stop here")

    loop = kelt.EltLoop(mock_cluster.bootstraps, fresh("g"), topic, SCHEMA,
                        [kelt.ParquetSink(root=str(tmp_path))], max_records=3,
                        until_caught_up=True, properties=FAST)
    with pytest.raises(RuntimeError, match="stop here"):
        loop.run(on_window=boom)
    # The first window's report raised; the run stopped cleanly after the second window,
    # which was being written meanwhile (the loop is pipelined): it was finished, not
    # dropped.
    assert loop.stats["windows"] == 2
    assert loop.stats["rows"] == 6
    loop.close()


def test_elt_loop_config_errors():
    with pytest.raises(kelt.InvalidError, match="sink"):
        kelt.EltLoop("b:1", "g", "t", SCHEMA, [{"kind": "nope"}])
    with pytest.raises(kelt.InvalidError, match="at least one sink"):
        kelt.EltLoop("b:1", "g", "t", SCHEMA, [])


def test_catch_up_without_an_assignment_fails_after_the_timeout(tmp_path):
    loop = kelt.EltLoop("127.0.0.1:1", "g-none", "t-none", SCHEMA,
                        [kelt.ParquetSink(root=str(tmp_path))], until_caught_up=True,
                        max_wait_ms=200, assignment_timeout_ms=1500,
                        min_records_per_loader=2)
    with pytest.raises(kelt.KeltError, match=r"no partition of t-none .*127\.0\.0\.1:1"):
        loop.run()


def test_elt_loop_from_the_clis_config_document(mock_cluster, fresh, tmp_path):
    topic, group = fresh("cfg"), fresh("g")
    mock_cluster.create_topic(topic, 1)
    produce(mock_cluster.bootstraps, topic, range(30))
    (tmp_path / "schema.json").write_text(json.dumps({"fields": SCHEMA[:2]}))
    config = tmp_path / "elt.yaml"
    config.write_text(f"""
brokers: {mock_cluster.bootstraps}
group: {group}
topics: [{topic}]
schema: schema.json
properties:
  session.timeout.ms: "6000"
window:
  max_records: 7
sinks:
  - parquet:
      root: landing
""")
    with kelt.EltLoop.from_config(config, overrides={"until_caught_up": True}) as loop:
        stats = loop.run()
    assert stats["rows"] == 30 and stats["windows"] >= 5
    landed = kelt.SqlSession()
    landed.register_landing("l", str(tmp_path / "landing"), topic=topic)
    assert landed.query("SELECT count(*) AS n FROM l").to_pylist() == [{"n": 30}]
    with pytest.raises(kelt.InvalidError) as info:
        kelt.EltLoop.from_config(text={"brokers": "b:1", "group": "g", "topics": ["t"],
                                       "sinks": [{"parquet": {"root": "x"}}],
                                       "window": {"max_records": "many"}})
    assert "window.max_records" in str(info.value)


def test_ctrl_c_ends_a_run_cleanly_then_raises(tmp_path):
    # In a child process: a service-mode loop (never caught up) on the mock cluster gets
    # SIGINT; run() must flush + commit, then raise KeyboardInterrupt.
    script = tmp_path / "run.py"
    script.write_text(f"""
import os, signal, threading, pyarrow as pa, kelt
mc = kelt._kelt.MockCluster(1)
mc.create_topic("t", 1)
kelt.export_dataset_to_kafka(mc.bootstraps, "t", pa.table({{"id": list(range(10))}}))
loop = kelt.EltLoop(mc.bootstraps, "g", "t", [{{"name": "id", "data_type": "int64"}}],
                    [kelt.ParquetSink(root={str(tmp_path / "landing")!r})],
                    max_wait_ms=200, properties={FAST!r})
timer = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
def on_window(stats, window):
    # Once everything landed, Ctrl-C (a service never ends) while the loop waits in a
    # poll without the GIL: the loop notices between windows.
    if stats["rows"] == 10 and timer.ident is None:
        timer.start()
try:
    loop.run(on_window)
    print("returned")
except KeyboardInterrupt:
    print("interrupted", loop.stats["rows"], sum(loop.stats["committed"].values()))
loop.close()
""")
    import subprocess
    import sys
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "interrupted 10 10"


def test_log_messages_reach_python(mock_cluster, fresh, caplog):
    import logging

    topic = fresh("log")
    mock_cluster.create_topic(topic, 1)
    messages = []
    kelt.set_log_handler(lambda level, component, message:
                         messages.append((level, component, message)), "info")
    try:
        with kelt.Consumer(mock_cluster.bootstraps, fresh("g"), topic, properties=FAST) as c:
            c.poll(SCHEMA, max_wait_ms=15000)
    finally:
        kelt.set_log_handler(None)
    assert ("info", "kafka", "assigned 1 partition(s)") in messages
    with pytest.raises(kelt.InvalidError, match="level"):
        kelt.set_log_handler(print, "loud")

    kelt.log_to_logging("info")
    try:
        with caplog.at_level(logging.INFO, logger="kelt"):
            with kelt.Consumer(mock_cluster.bootstraps, fresh("g"), topic,
                               properties=FAST) as c:
                c.poll(SCHEMA, max_wait_ms=15000)
    finally:
        kelt.set_log_handler(None)
    assert any(r.name == "kelt.kafka" and r.getMessage() == "assigned 1 partition(s)"
               for r in caplog.records)
