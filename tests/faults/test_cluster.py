# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt against a 3-node KRaft cluster (`kafka.sh start --brokers 3`: replication factor
3, min.insync.replicas=2) while nodes die: kill -9 of a partition leader in the middle of
`kelt run` and of `kelt produce`, and a rolling bounce of every node while a run lands.

Each test checks by content id that the producer lost and duplicated nothing, and that
Parquet and DuckDB hold every offset of the topic exactly once. KELT_FAULT_RECORDS scales
the record counts (scripts/cluster_fault_test.sh runs them long).
"""
import json
import os
import signal
import subprocess
import time
import uuid

import pytest

from conftest import (ROOT, Run, alive, assert_ids_once, assert_same_once, duckdb_landing,
                      parquet_landing, read_env, run_kelt, summary_of, topic_records,
                      write_config, write_records)

SCALE = int(os.environ.get("KELT_FAULT_RECORDS", "10000"))
SINKS = """  - parquet: {root: landing, rotate_records: 3000}
  - duckdb: {path: landing.duckdb, table: t}"""


class Cluster:
    def __init__(self, kelt, env_path):
        self.kelt = kelt
        self.env_path = env_path
        self._watermarks = None

    @property
    def env(self):
        return read_env(self.env_path)

    @property
    def bootstrap(self):
        return self.env["KELT_KAFKA_BOOTSTRAP"]

    def pid(self, node):
        return int(self.env[f"KELT_KAFKA_NODE{node}_PID"])

    def kafka_sh(self, *args):
        p = subprocess.run(["bash", str(ROOT / "scripts/kafka.sh"), *args, "--dir",
                            self.env["KELT_KAFKA_DIR"]], capture_output=True, text=True,
                           timeout=180, env={**os.environ, "KELT_CLI": self.kelt})
        assert p.returncode == 0, f"kafka.sh {args}: {p.stdout}{p.stderr}"

    def describe(self, topic):
        p = run_kelt(self.kelt, "topics", "describe", topic, "--json", "--bootstrap",
                     self.bootstrap, "--timeout", "30")
        return json.loads(p.stdout)[0]["partitions"]

    def leader(self, topic, partition):
        return next(p["leader"] for p in self.describe(topic) if p["partition"] == partition)

    def high_watermark(self, topic, partition):
        if self._watermarks is None:
            from confluent_kafka import Consumer
            self._watermarks = Consumer({"bootstrap.servers": self.bootstrap,
                                         "group.id": "fault-watermarks"})
        from confluent_kafka import TopicPartition
        return self._watermarks.get_watermark_offsets(TopicPartition(topic, partition),
                                                      timeout=10)[1]

    def kill(self, node):
        pid = self.pid(node)
        os.kill(pid, signal.SIGKILL)
        deadline = time.time() + 20
        while alive(pid) and time.time() < deadline:
            time.sleep(0.05)

    def wait_new_leader(self, topic, partition, old, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                leader = self.leader(topic, partition)
            except AssertionError:
                leader = None
            if leader not in (None, -1, old):
                return leader
            time.sleep(0.5)
        raise AssertionError(f"no new leader for {topic}/{partition} within {timeout}s")

    def wait_full_isr(self, topic, timeout=90):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if all(len(p["isr"]) == 3 for p in self.describe(topic)):
                    return
            except AssertionError:
                pass
            time.sleep(0.5)
        raise AssertionError(f"{topic}: ISR not back to 3 within {timeout}s: "
                             f"{self.describe(topic)}")

    def make_topic(self, partitions=3):
        name = "fault-" + uuid.uuid4().hex[:10]
        self.kafka_sh("create-topic", name, str(partitions))
        self.wait_full_isr(name)
        return name

    def restore(self):
        """Every node up again (after a test that killed one)."""
        for node in (1, 2, 3):
            if not alive(self.pid(node)):
                self.kafka_sh("start-node", str(node))


@pytest.fixture
def cluster(kelt, env_path):
    c = Cluster(kelt, env_path)
    assert c.env.get("KELT_KAFKA_BROKERS") == "3", "KELT_KAFKA_ENV must name a 3-node cluster"
    c.restore()
    yield c
    if c._watermarks is not None:
        c._watermarks.close()
    c.restore()


def check_landing(cluster, tmp_path, topic, n):
    truth = topic_records(cluster.kelt, cluster.bootstrap, topic)
    assert_ids_once(truth, n)
    rows, hidden = parquet_landing(tmp_path / "landing", topic)
    assert_same_once(rows, truth, "parquet")
    assert not hidden, f"hidden files left: {hidden}"
    assert_same_once(duckdb_landing(tmp_path / "landing.duckdb"), truth, "duckdb")


def test_leader_killed_mid_run(cluster, tmp_path):
    """kill -9 the leader of partition 0 while `kelt run` lands: the run goes on with the
    new leader (no restart) and lands every offset once."""
    n = SCALE
    topic = cluster.make_topic(3)
    write_records(tmp_path / "r.ndjson", 0, n)
    run_kelt(cluster.kelt, "produce", "--brokers", cluster.bootstrap, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    cfg = write_config(tmp_path, cluster.bootstrap, topic, SINKS)
    run = Run(cluster.kelt, ["run", "-c", str(cfg), "--until-caught-up", "--progress", "lines",
                             "--set", "progress_interval_ms=50", "--log-level", "warning",
                             "--set", "window.max_records=200"])
    run.wait_records(n // 10)
    old = cluster.leader(topic, 0)
    assert run.proc.poll() is None, "the run ended before the kill"
    cluster.kill(old)
    at_kill = run.records
    new = cluster.wait_new_leader(topic, 0, old)
    rc, out, err = run.finish()
    assert rc == 0, err
    s = summary_of(out)
    assert s["caught_up"] and at_kill < n, (at_kill, s)
    print(f"leader {old} killed at {at_kill}/{n} records; new leader {new}; summary {s}")
    check_landing(cluster, tmp_path, topic, n)


def test_leader_killed_mid_produce(cluster, tmp_path):
    """kill -9 the leader of partition 0 while `kelt produce` (idempotent, acks=all)
    writes: it finishes without error, and the topic holds each content id once."""
    n = SCALE * 6
    topic = cluster.make_topic(3)
    write_records(tmp_path / "r.ndjson", 0, n)
    old = cluster.leader(topic, 0)
    proc = subprocess.Popen([cluster.kelt, "produce", "--brokers", cluster.bootstrap,
                             "--topic", topic, "--file", str(tmp_path / "r.ndjson")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The kill comes once partition 0 holds some records and the producer is still
    # writing (not after a fixed sleep, which a fast machine outruns).
    deadline = time.time() + 60
    while cluster.high_watermark(topic, 0) == 0:
        assert proc.poll() is None, f"produce ended before the kill: {proc.communicate()}"
        assert time.time() < deadline, "nothing reached partition 0 within 60 s"
        time.sleep(0.02)
    assert proc.poll() is None, f"produce ended before the kill: {proc.communicate()}"
    cluster.kill(old)
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err
    assert f"produced {n} messages" in out + err, out + err
    cluster.wait_new_leader(topic, 0, old)
    truth = topic_records(cluster.kelt, cluster.bootstrap, topic)
    assert_ids_once(truth, n)
    cfg = write_config(tmp_path, cluster.bootstrap, topic, SINKS)
    s = summary_of(run_kelt(cluster.kelt, "run", "-c", str(cfg), "--until-caught-up",
                            "--progress", "none").stdout)
    assert s["caught_up"]
    check_landing(cluster, tmp_path, topic, n)


def test_rolling_bounce_while_landing(cluster, tmp_path):
    """Stop and restart each node in turn while `kelt run` (service mode) lands and
    `kelt produce` adds a batch with each node down; then exactly once."""
    batch = max(SCALE // 4, 1000)
    topic = cluster.make_topic(3)
    cfg = write_config(tmp_path, cluster.bootstrap, topic, SINKS)
    produced = 0

    def produce():
        nonlocal produced
        f = tmp_path / f"r{produced}.ndjson"
        write_records(f, produced, batch)
        run_kelt(cluster.kelt, "produce", "--brokers", cluster.bootstrap, "--topic", topic,
                 "--file", str(f))
        produced += batch

    produce()
    run = Run(cluster.kelt, ["run", "-c", str(cfg), "--progress", "lines",
                             "--set", "progress_interval_ms=100", "--log-level", "warning"])
    run.wait_records(1)
    for node in (1, 2, 3):
        cluster.kafka_sh("stop-node", str(node))
        produce()
        cluster.kafka_sh("start-node", str(node))
        cluster.wait_full_isr(topic)
    produce()
    run.wait_records(produced, timeout=180)
    run.proc.send_signal(signal.SIGTERM)
    rc, out, err = run.finish()
    assert rc == 0, err
    s = summary_of(out)
    assert s["records"] == produced, s
    check_landing(cluster, tmp_path, topic, produced)
