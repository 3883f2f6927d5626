# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The chaos group (issue 17, item 4): 3 `kelt run` workers (one group, static members
`chaos-w0..2`, group_protocol classic) on one topic of 12 partitions while a producer
keeps writing; for the given time, random faults on random workers:

  kill9    kill -9, restarted after 0-3 s (same instance_id: takes its partitions back)
  sigterm  SIGTERM once the worker's run loop runs (a clean stop, which must exit 0),
           restarted after 0-3 s
  stop     SIGSTOP for 1-4 s, then SIGCONT (a pause shorter than the session timeout
           of 10 s: a longer one lets the group hand its partitions on while it may still
           publish a Parquet file, the unfenced case GUARANTEES §6 does not promise)

Then the producer stops, every worker runs until the group's committed offsets reach the
end of every partition, they stop on SIGTERM, and the check: the topic holds each produced
content id once (the producer is idempotent), and every sink holds every (partition,
offset) of the topic exactly once: the Parquet directory the three share, the Iceberg
table the three share (SQL catalog on SQLite, local warehouse; fenced by the catalog's
compare-and-swap; read back by pyiceberg), and with --pg-conninfo a PostgreSQL table the
three share (fenced by its offsets row lock). DuckDB (one writer per file) is not in it.
After the workers' final stop, one more start of a worker (catch-up: it lands nothing)
removes what killed commits left, and then no file of the Iceberg table's data/ or
metadata/ may be left that the table does not name. Prints each fault and the check;
exit 0 when the check holds.

  python tests/faults/chaos.py --kelt BIN (--brokers B | --kafka-env FILE) --work DIR
         [--seconds S] [--rate R] [--pg-conninfo URI | --pg-env FILE] [--seed N]

scripts/chaos_test.sh runs it long (its own broker and PostgreSQL); ctest runs 60 s.
"""
import argparse
import json
import os
import pathlib
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from conftest import assert_same_once, parquet_landing, read_env  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "fixtures"))
from iceberg_lineage import iceberg_leftovers  # noqa: E402

PARTITIONS = 12
WORKERS = 3
SESSION_MS = 10000
SCHEMA = {"fields": [{"name": "id", "data_type": "Int64"},
                     {"name": "pad", "data_type": "Utf8"}]}


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


class Producer(threading.Thread):
    """Writes records with content ids 0, 1, 2, … at about `rate` per second (idempotent,
    acks=all) until stopped; `count` is how many were acknowledged."""

    def __init__(self, brokers, topic, rate):
        super().__init__(daemon=True)
        from confluent_kafka import Producer as P
        self.p = P({"bootstrap.servers": brokers, "enable.idempotence": True,
                    "linger.ms": 20})
        self.topic, self.rate = topic, rate
        self.sent = 0
        self.acked = 0
        self.errors = []
        self.halt = threading.Event()

    def _ack(self, err, _msg):
        if err is None:
            self.acked += 1
        else:
            self.errors.append(str(err))

    def run(self):
        t0 = time.time()
        while not self.halt.is_set():
            due = int((time.time() - t0) * self.rate)
            while self.sent < due:
                v = json.dumps({"id": self.sent, "pad": f"chaos-{self.sent:012d}"})
                try:
                    self.p.produce(self.topic, v.encode(), on_delivery=self._ack)
                except BufferError:
                    break
                self.sent += 1
            self.p.poll(0.05)
        left = self.p.flush(60)
        assert left == 0, f"{left} records not delivered"


class Worker:
    def __init__(self, i, kelt, cfg, work):
        self.i, self.kelt, self.cfg, self.work = i, kelt, cfg, work
        self.proc = None
        self.stopped = False
        self.starts = 0
        self.exits = []  # (returncode, why)

    def start(self, log_level="warning"):
        self.starts += 1
        logf = open(self.work / f"w{self.i}.log", "a")
        self.log_start = logf.tell()
        self.proc = subprocess.Popen(
            [self.kelt, "run", "-c", str(self.cfg), "--instance-id", f"chaos-w{self.i}",
             "--progress", "lines", "--set", "progress_interval_ms=500", "--log-level",
             log_level], stdout=logf, stderr=subprocess.STDOUT)
        logf.close()

    def wait_running(self, timeout=60):
        """Until this start printed a progress line: its run loop runs, so its SIGTERM
        handler is in place (a signal during the process's start-up, before main() installs
        it, ends it by the default action: exit -15; seen on a loaded machine)."""
        deadline = time.time() + timeout
        while time.time() < deadline and self.alive():
            with open(self.work / f"w{self.i}.log", "rb") as f:
                f.seek(self.log_start)
                if b"progress " in f.read():
                    return True
            time.sleep(0.1)
        return False

    def output(self):
        """What this start printed so far."""
        with open(self.work / f"w{self.i}.log", "rb") as f:
            f.seek(self.log_start)
            return f.read().decode(errors="replace")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def reap(self, why):
        rc = self.proc.wait(timeout=120)
        self.exits.append((rc, why))
        return rc


def committed_ends(brokers, group, topic):
    """(sum of the group's committed offsets, sum of the high watermarks)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": brokers, "group.id": group,
                  "enable.auto.commit": False})
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        committed = c.committed(tps, timeout=20)
        done = sum(max(tp.offset, 0) for tp in committed)
        ends = sum(c.get_watermark_offsets(tp, timeout=20)[1] for tp in tps)
        return done, ends
    finally:
        c.close()


def topic_truth(brokers, topic):
    """[(partition, offset, id)] of every record of the topic."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": brokers, "group.id": "chaos-truth-" + uuid.uuid4().hex,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1]
            for p in range(PARTITIONS)}
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS) if ends[p] > 0])
    out, left = [], {p for p in range(PARTITIONS) if ends[p] > 0}
    deadline = time.time() + 300
    while left and time.time() < deadline:
        for m in c.consume(1000, timeout=1):
            if m.error():
                continue
            out.append((m.partition(), m.offset(), json.loads(m.value())["id"]))
            if m.offset() + 1 >= ends[m.partition()]:
                left.discard(m.partition())
    c.close()
    assert not left, f"could not read partitions {sorted(left)} to their end"
    return out


def pg_landing(conninfo, table):
    import psycopg2
    con = psycopg2.connect(conninfo)
    try:
        cur = con.cursor()
        cur.execute(f'SELECT _kafka_partition, _kafka_offset, id FROM "{table}"')
        return [tuple(r) for r in cur.fetchall()]
    finally:
        con.close()


def iceberg_table(work, name):
    from pyiceberg.catalog.sql import SqlCatalog
    cat = SqlCatalog("kelt", uri=f"sqlite:///{work / 'iceberg' / 'catalog.db'}",
                     warehouse=f"file://{work / 'iceberg' / 'warehouse'}")
    return cat.load_table(f"chaos.{name}")


def iceberg_landing(table):
    """[(partition, offset, id)] of the table's current snapshot, read by pyiceberg."""
    t = table.scan(selected_fields=("_kafka_partition", "_kafka_offset", "id")).to_arrow()
    return list(zip(*(t.column(c).to_pylist()
                      for c in ("_kafka_partition", "_kafka_offset", "id"))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kelt", required=True)
    ap.add_argument("--brokers", default="")
    ap.add_argument("--kafka-env", default="", help="a kafka.sh env file (for --brokers)")
    ap.add_argument("--pg-env", default="", help="a postgres.sh env file (--pg-conninfo)")
    ap.add_argument("--work", required=True)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--rate", type=int, default=500)
    ap.add_argument("--pg-conninfo", default="")
    ap.add_argument("--seed", type=int, default=None)
    a = ap.parse_args()
    if a.kafka_env:
        a.brokers = read_env(pathlib.Path(a.kafka_env))["KELT_KAFKA_BOOTSTRAP"]
    if a.pg_env:
        a.pg_conninfo = read_env(pathlib.Path(a.pg_env))["KELT_PG_CONNINFO"]
    if not a.brokers:
        ap.error("--brokers or --kafka-env is required")
    seed = a.seed if a.seed is not None else random.randrange(1 << 30)
    rnd = random.Random(seed)
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    topic = "chaos-" + uuid.uuid4().hex[:8]
    group = "g-" + topic
    table = topic.replace("-", "_")
    subprocess.run([a.kelt, "topics", "create", topic, "--partitions", str(PARTITIONS),
                    "--bootstrap", a.brokers], check=True, capture_output=True)
    (work / "schema.json").write_text(json.dumps(SCHEMA))
    sinks = f"  - parquet: {{root: {work / 'landing'}, rotate_records: 2000, rotate_age_ms: 3000}}\n"
    sinks += (f"  - iceberg: {{catalog: {work / 'iceberg' / 'catalog.db'}, warehouse: "
              f"{work / 'iceberg' / 'warehouse'}, namespace: chaos, table: {table}}}\n")
    if a.pg_conninfo:
        sinks += f"  - postgres: {{conninfo: '{a.pg_conninfo}', table: {table}}}\n"
    cfg = work / "kelt.yaml"
    cfg.write_text(f"""brokers: {a.brokers}
group: {group}
topics: [{topic}]
schema: {work / 'schema.json'}
session_timeout_ms: {SESSION_MS}
window: {{max_records: 1000, max_wait_ms: 500}}
sinks:
{sinks}""")
    log(f"topic {topic} ({PARTITIONS} partitions), {WORKERS} workers, {a.seconds:.0f} s of "
        f"faults, {a.rate} records/s, seed {seed}, sinks: parquet, iceberg"
        + (", postgres" if a.pg_conninfo else ""))
    t0 = time.time()
    producer = Producer(a.brokers, topic, a.rate)
    producer.start()
    workers = [Worker(i, a.kelt, cfg, work) for i in range(WORKERS)]
    for w in workers:
        w.start()
    faults = []
    unexpected = []
    end = time.time() + a.seconds
    while time.time() < end:
        time.sleep(rnd.uniform(2, 6))
        for w in workers:  # a worker that ended by itself is a finding: note, restart
            if not w.stopped and w.proc.poll() is not None:
                unexpected.append((w.i, w.proc.returncode))
                log(f"worker {w.i} exited by itself with {w.proc.returncode}; restarting")
                w.reap("by itself")
                w.start()
        w = rnd.choice(workers)
        kind = rnd.choice(["kill9", "sigterm", "stop"])
        at = time.time() - t0
        if kind == "kill9":
            w.proc.send_signal(signal.SIGKILL)
            w.reap("kill9")
            pause = rnd.uniform(0, 3)
            time.sleep(pause)
            w.start()
            detail = f"restarted after {pause:.1f}s"
        elif kind == "sigterm":
            w.wait_running()
            w.proc.send_signal(signal.SIGTERM)
            rc = w.reap("sigterm")
            if rc != 0:
                unexpected.append((w.i, rc))
            pause = rnd.uniform(0, 3)
            time.sleep(pause)
            w.start()
            detail = f"exit {rc}, restarted after {pause:.1f}s"
        else:
            pause = rnd.uniform(1, 4)
            w.proc.send_signal(signal.SIGSTOP)
            w.stopped = True
            time.sleep(pause)
            w.proc.send_signal(signal.SIGCONT)
            w.stopped = False
            detail = f"SIGCONT after {pause:.1f}s"
        faults.append((round(at, 1), w.i, kind, detail))
        log(f"fault {len(faults)}: t={at:.1f}s worker {w.i} {kind} ({detail}); "
            f"produced {producer.acked}")
    faults_end = time.time()
    producer.halt.set()
    producer.join()
    assert not producer.errors, producer.errors[:5]
    produced = producer.acked
    log(f"faults over; producer stopped at {produced} records; waiting for the group "
        "to catch up")
    for w in workers:
        if not w.alive():
            w.reap("found dead")
            unexpected.append((w.i, w.exits[-1][0]))
            w.start()
    deadline = time.time() + 300
    while True:
        done, ends = committed_ends(a.brokers, group, topic)
        if done >= ends == produced:
            break
        assert time.time() < deadline, f"the group committed {done} of {ends} in 300 s"
        time.sleep(2)
    caught = time.time()
    for w in workers:
        w.wait_running()
        w.proc.send_signal(signal.SIGTERM)
    codes = [w.reap("final sigterm") for w in workers]
    log(f"caught up {caught - faults_end:.1f}s after the faults; final SIGTERM exit "
        f"codes {codes}")
    # One more start of w0, now that no commit is in flight: its Iceberg sink removes
    # what killed commits left before the run loop starts; stopped once that runs (the
    # other static members' partitions stay theirs until their session ends: a catch-up
    # run would wait that long for nothing).
    clean_t0 = time.time()
    w0 = workers[0]
    w0.start(log_level="info")
    clean_running = w0.wait_running()
    w0.proc.send_signal(signal.SIGTERM)
    clean_rc = w0.reap("clean start")
    clean_out = w0.output()
    cleaned = re.findall(r"removed (\d+) (uncommitted data file|metadata, manifest)", clean_out)
    log(f"clean start: exit {clean_rc} in {time.time() - clean_t0:.1f}s; removed "
        + (", ".join(f"{n} {what}" for n, what in cleaned) or "nothing"))

    truth = topic_truth(a.brokers, topic)
    ids = sorted(r[2] for r in truth)
    ok = True
    checks = []

    def check(what, fn):
        nonlocal ok
        try:
            fn()
            checks.append(f"{what}: ok")
        except AssertionError as e:
            ok = False
            checks.append(f"{what}: FAILED: {e}")

    def ids_once():
        assert len(ids) == produced, f"topic holds {len(ids)} records, produced {produced}"
        assert ids == list(range(produced)), "the producer lost or duplicated records"

    def clean_start():
        assert clean_running and clean_rc == 0, f"exit {clean_rc}: {clean_out[-3000:]}"
        rows = re.findall(r"^progress records=\d+ bytes=\d+ rows=(\d+)", clean_out, re.M)
        assert rows, f"no progress line in the clean start's output: {clean_out[-2000:]}"
        assert int(rows[-1]) == 0, f"the clean start landed {rows[-1]} rows"

    iceberg_stats = {}

    def iceberg_once():
        t = iceberg_table(work, table)
        assert_same_once(iceberg_landing(t), truth, "iceberg")
        extra, n_data, n_meta = iceberg_leftovers(t)
        iceberg_stats.update(snapshots=len(t.snapshots()), data_files=n_data,
                             metadata_files=n_meta)
        assert not extra, f"left over after the clean start: {extra[:10]} ({len(extra)})"

    def parquet_once():
        rows, hidden = parquet_landing(work / "landing", topic)
        assert_same_once(rows, truth, "parquet")
        # In-progress files of a killed worker are removed at the next assignment of
        # their partition; a leftover would be a finding.
        assert not hidden, f"hidden files left: {hidden[:5]}"

    check("topic: each content id once", ids_once)
    check(f"parquet: {len(truth)} offsets once", parquet_once)
    check("the clean start exited 0 and landed nothing", clean_start)
    check(f"iceberg: {len(truth)} offsets once, no leftover file", iceberg_once)
    if a.pg_conninfo:
        check(f"postgres: {len(truth)} offsets once",
              lambda: assert_same_once(pg_landing(a.pg_conninfo, table), truth, "postgres"))
    check("every SIGTERM exited 0 and no worker died by itself",
          lambda: (_ for _ in ()).throw(AssertionError(f"{unexpected}, final {codes}"))
          if unexpected or any(codes) else None)
    kinds = {k: sum(1 for f in faults if f[2] == k) for k in ("kill9", "sigterm", "stop")}
    log(f"summary: {len(faults)} faults ({kinds}), {produced} records produced in "
        f"{a.seconds:.0f} s, worker starts {[w.starts for w in workers]}, "
        f"total {time.time() - t0:.0f} s; iceberg table {iceberg_stats}")
    for c in checks:
        log("check " + c)
    (work / "chaos.json").write_text(json.dumps({
        "seed": seed, "seconds": a.seconds, "rate": a.rate, "produced": produced,
        "faults": faults, "iceberg": iceberg_stats, "checks": checks, "ok": ok},
        indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
