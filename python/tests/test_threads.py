# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The module's calls from several Python threads at once, on librdkafka's mock cluster.

Every blocking call releases the GIL, so these run kelt's native code on several threads
at the same time: consumers polling in parallel, one consumer shared by threads (and
closed under them), an ELT loop running in a thread while another asks for its stats,
loads, SQL and the log hook changing meanwhile. The results are checked here; the tsan
preset runs this file with the module built under ThreadSanitizer (ctest
`python_tsan_tests`), which checks that none of it is a data race.
"""

from __future__ import annotations

import json
import os
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


def run_threads(targets):
    """Run each callable on its own thread; re-raise the first exception."""
    errors: list[BaseException] = []

    def guarded(fn):
        def body():
            try:
                fn()
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        return body

    threads = [threading.Thread(target=guarded(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
        assert not t.is_alive(), "a thread did not finish within 300 s"
    if errors:
        raise errors[0]


def test_the_module_under_test_is_the_one_asked_for():
    # The tsan preset points PYTHONPATH at its instrumented build: make sure it is used.
    expected = os.environ.get("KELT_EXPECT_MODULE_DIR")
    if expected is None:
        return  # the ordinary suite: whatever `pip install` put in the venv
    assert os.path.realpath(kelt._kelt.__file__).startswith(os.path.realpath(expected))


def test_consumers_on_several_threads_each_read_every_record(mock_cluster, fresh):
    topic = fresh("par")
    mock_cluster.create_topic(topic, 3)
    produce(mock_cluster.bootstraps, topic, range(300))
    seen: dict[int, list[int]] = {}

    def member(i):
        def body():
            ids = []
            with kelt.Consumer(mock_cluster.bootstraps, fresh(f"g{i}"), topic,
                               properties=FAST) as c:
                deadline = time.monotonic() + 60
                while len(ids) < 300 and time.monotonic() < deadline:
                    w = c.poll(SCHEMA, max_records=40, max_wait_ms=2000)
                    ids += [r[0] for r in w.to_rows()]
                    c.commit(w)
                    c.lag()  # a broker round trip while the others poll
            seen[i] = ids
        return body

    run_threads([member(i) for i in range(3)])
    for i in range(3):
        assert sorted(seen[i]) == list(range(300)), i


def test_one_consumer_shared_by_threads_and_closed_under_them(mock_cluster, fresh):
    topic = fresh("shared")
    mock_cluster.create_topic(topic, 2)
    produce(mock_cluster.bootstraps, topic, range(200))
    c = kelt.Consumer(mock_cluster.bootstraps, fresh("g"), topic, properties=FAST)
    ids: list[int] = []
    closed_seen = threading.Event()
    stop_watching = threading.Event()

    def poller():
        while True:
            try:
                w = c.poll(SCHEMA, max_records=25, max_wait_ms=300, stop_at_end=False)
                ids.extend(r[0] for r in w.to_rows())
                c.commit(w)
            except kelt.InvalidError as e:  # closed by the other thread
                assert "closed" in str(e)
                return

    def watcher():
        # The cheap properties, asked while the other threads poll and close.
        deadline = time.monotonic() + 90
        while not stop_watching.is_set() and time.monotonic() < deadline:
            _ = c.caught_up
            if c.closed:
                closed_seen.set()
                return
            time.sleep(0.001)

    def closer():
        deadline = time.monotonic() + 60
        while len(ids) < 200 and time.monotonic() < deadline:
            c.assignment()
            time.sleep(0.05)
        c.close()

    try:
        run_threads([poller, poller, closer, watcher])
    finally:
        stop_watching.set()
    assert c.closed
    assert sorted(ids) == list(range(200))
    assert closed_seen.is_set()
    with pytest.raises(kelt.InvalidError, match="closed"):
        c.assignment()


def test_closed_is_read_while_another_thread_closes(mock_cluster, fresh):
    # The closed property while close() runs on another thread (close leaves the group:
    # a broker round trip without the GIL).
    topic = fresh("closing")
    mock_cluster.create_topic(topic, 1)
    for _ in range(3):
        c = kelt.Consumer(mock_cluster.bootstraps, fresh("g"), topic, properties=FAST)
        c.poll(SCHEMA, max_wait_ms=3000)  # joined: closing talks to the group
        done = threading.Event()
        states: list[bool] = []

        def watch(c=c, done=done, states=states):
            while not done.is_set():
                states.append(c.closed)

        t = threading.Thread(target=watch)
        t.start()
        try:
            c.close()
        finally:
            time.sleep(0.01)
            done.set()
            t.join()
        assert states and states[-1] is True
        assert states == sorted(states)  # never open again once seen closed


def test_an_elt_loop_in_a_thread_while_others_ask_and_load(mock_cluster, fresh, tmp_path):
    topic = fresh("eltthr")
    mock_cluster.create_topic(topic, 2)
    produce(mock_cluster.bootstraps, topic, range(120))
    loop = kelt.EltLoop(mock_cluster.bootstraps, fresh("g"), topic, SCHEMA,
                        [kelt.ParquetSink(root=str(tmp_path / "landing"))],
                        max_records=10, until_caught_up=True, properties=FAST)
    result = {}
    running = threading.Event()
    windows: list[int] = []

    def run():
        running.set()
        # The callback takes the GIL on the loop's thread and asks the loop itself.
        result.update(loop.run(on_window=lambda st, win: windows.append(
            loop.stats["windows"])))

    def ask():
        running.wait(30)
        # Waits (without the GIL) for the run to end: the run's callbacks need the GIL.
        result["asked"] = loop.stats["rows"]

    def load():
        records = [{"topic": topic, "partition": 0, "offset": i,
                    "value": json.dumps({"id": i, "name": f"x{i}"})} for i in range(50)]
        for _ in range(5):
            w = kelt.elt_load_kafka_records_json(records, SCHEMA)
            assert w.row_count() == 50

    def query():
        for _ in range(5):
            t = kelt.sql("SELECT sum(a) AS s FROM df", pa.table({"a": list(range(100))}))
            assert t.to_pylist() == [{"s": 4950}]

    def logs():
        got = []
        for _ in range(20):
            kelt.set_log_handler(lambda *a: got.append(a), "info")
            time.sleep(0.01)
            kelt.set_log_handler(None)

    try:
        run_threads([run, ask, load, query, logs])
    finally:
        kelt.set_log_handler(None)
        loop.close()
    assert result["rows"] == 120 and result["caught_up"]
    assert result["asked"] == 120
    assert windows == sorted(windows) and len(windows) == result["windows"]
    s = kelt.SqlSession()
    s.register_landing("p", str(tmp_path / "landing"), topic=topic)
    assert s.query("SELECT count(DISTINCT id) AS n, count(*) AS c FROM p").to_pylist() == [
        {"n": 120, "c": 120}]
