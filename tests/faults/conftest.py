# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Helpers for the fault tests (tests/faults): the kelt binary under test, records with
content ids, what a topic holds, and what the Parquet and DuckDB landings hold.

Run by ctest (tests/CMakeLists.txt): test_cluster.py under the `kafka_cluster` fixture
(KELT_KAFKA_ENV names a `kafka.sh start --brokers 3` cluster), test_full_disk.py under
`kafka_broker`. KELT_BIN is the binary under test.
"""
import hashlib
import importlib.util
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from kelt_services.common import read_env  # noqa: E402  (the env files' one reader)
from kelt_services.supervisor import alive  # noqa: E402,F401  (zombies count as dead)

# The kelt binary fixture and the summary reader are the CLI tests' (one definition).
_spec = importlib.util.spec_from_file_location("kelt_cli_conftest",
                                               ROOT / "tests/cli/conftest.py")
_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_cli)
kelt = _cli.kelt
summary_of = _cli.summary_of

SCHEMA = {"fields": [{"name": "id", "data_type": "Int64"},
                     {"name": "pad", "data_type": "Utf8"}]}


@pytest.fixture(scope="session")
def env_path():
    path = os.environ.get("KELT_KAFKA_ENV")
    assert path and os.path.exists(path), "KELT_KAFKA_ENV must name a running broker's env file"
    return pathlib.Path(path)


def run_kelt(kelt, *args, timeout=300, check=True):
    """The CLI tests' run_kelt, with the longer timeout a run through faults may need."""
    return _cli.run_kelt(kelt, *args, timeout=timeout, check=check)


def write_records(path, start, n, pad=0):
    """NDJSON records with ids start..start+n-1 (the content ids the checks count)."""
    with open(path, "w") as f:
        for i in range(start, start + n):
            # A pad of hashes of the id: it compresses poorly (to about half: hex digits),
            # so that the full-disk tests fill their filesystem with few records.
            text = "".join(hashlib.sha256(f"{i}.{k}".encode()).hexdigest()
                           for k in range(pad // 64 + 1))[:pad]
            f.write(json.dumps({"id": i, "pad": text}) + "\n")


def write_config(directory, brokers, topic, sinks, extra=""):
    (directory / "schema.json").write_text(json.dumps(SCHEMA))
    cfg = directory / "kelt.yaml"
    cfg.write_text(f"""brokers: {brokers}
group: g-{topic}
topics: [{topic}]
schema: schema.json
window: {{max_records: 500, max_wait_ms: 300}}
sinks:
{sinks}
{extra}""")
    return cfg


def topic_records(kelt, brokers, topic):
    """[(partition, offset, id)] of every record of the topic (`kelt tail`, no commit)."""
    p = run_kelt(kelt, "tail", "--brokers", brokers, "--topic", topic, "--from", "beginning",
                 "--exit-at-end", "--format", "json")
    out = []
    for line in p.stdout.splitlines():
        r = json.loads(line)
        out.append((r["partition"], r["offset"], json.loads(r["value"])["id"]))
    return out


def parquet_landing(root, topic):
    """[(partition, offset, id)] of every row of the published Parquet files (each file
    must read back whole), and the hidden files left."""
    import pyarrow.parquet as pq
    base = pathlib.Path(root) / topic
    rows, hidden = [], []
    for f in sorted(base.rglob("*")) if base.exists() else []:
        if f.name.startswith("."):
            hidden.append(f)
        elif f.suffix == ".parquet":
            t = pq.read_table(f, columns=["_kafka_partition", "_kafka_offset", "id"])
            rows += list(zip(*(t.column(i).to_pylist() for i in range(3))))
    return rows, hidden


def duckdb_landing(path, table="t"):
    import duckdb
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [tuple(r) for r in con.execute(
            f"SELECT _kafka_partition, _kafka_offset, id FROM {table}").fetchall()]
    finally:
        con.close()


def assert_same_once(landed, truth, what):
    dup = len(landed) - len(set(landed))
    assert dup == 0, f"{what}: {dup} rows landed twice"
    missing = set(truth) - set(landed)
    extra = set(landed) - set(truth)
    assert not missing and not extra, (f"{what}: {len(missing)} missing (e.g. "
                                       f"{sorted(missing)[:5]}), {len(extra)} extra")


def assert_ids_once(truth, n, start=0):
    """The topic holds each content id start..start+n-1 exactly once."""
    ids = sorted(r[2] for r in truth)
    dup = len(ids) - len(set(ids))
    assert dup == 0, f"the producer duplicated {dup} records"
    assert ids == list(range(start, start + n)), (
        f"the producer lost {start + n - len(ids)} records")


@pytest.fixture(scope="session")
def net(kelt, tmp_path_factory):
    """The network fault tests' namespace and veth (tests/faults/netns.py) with a broker of
    their own on the veth's root-side address (`kafka.sh start --host`): one per session,
    for test_network.py and test_network_sinks.py alike."""
    from netns import Net
    assert os.geteuid() == 0, "the network fault tests need root (namespaces, tc, iptables)"
    n = Net()
    kdir = tmp_path_factory.mktemp("kafka")
    env = {**os.environ, "KELT_CLI": kelt}
    try:
        n.make()
        p = subprocess.run(["bash", str(ROOT / "scripts/kafka.sh"), "start", "--host",
                            n.host_ip, "--dir", str(kdir)], capture_output=True, text=True,
                           timeout=180, env=env)
        assert p.returncode == 0, f"kafka.sh start --host {n.host_ip}: {p.stdout}{p.stderr}"
        n.kafka_dir = kdir
        n.bootstrap = read_env(kdir / "env")["KELT_KAFKA_BOOTSTRAP"]
        n.port = int(n.bootstrap.rsplit(":", 1)[1])
        yield n
    finally:
        subprocess.run(["bash", str(ROOT / "scripts/kafka.sh"), "stop", "--dir", str(kdir)],
                       capture_output=True, timeout=120, env=env)
        n.remove()


@pytest.fixture
def fault(net):
    net.heal()
    yield net
    net.heal()


_RUNS = []


@pytest.fixture(autouse=True)
def _no_run_outlives_its_test():
    """A test that fails between Run(...) and finish() leaves no `kelt run` behind."""
    yield
    while _RUNS:
        proc = _RUNS.pop().proc
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


class Run:
    """`kelt run` in the background, its progress lines read by a thread."""

    def __init__(self, kelt, args):
        self.proc = subprocess.Popen([kelt, *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        _RUNS.append(self)
        self.records = 0
        self.err = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.err.append(line)
            m = re.match(r"progress records=(\d+)", line)
            if m:
                self.records = int(m.group(1))

    def wait_records(self, at_least, timeout=120):
        deadline = time.time() + timeout
        while self.records < at_least:
            assert self.proc.poll() is None, "the run ended early:\n" + "".join(self.err)
            assert time.time() < deadline, (f"the run reached {self.records} records, not "
                                            f"{at_least}:\n" + "".join(self.err[-30:]))
            time.sleep(0.05)
        return self.records

    def finish(self, timeout=240):
        # Not communicate(): it would read stderr too, racing the reader thread for it (a
        # line's start could go one way and its end the other). stdout holds only the
        # summary, well within a pipe's buffer, so waiting first cannot block the run.
        self.proc.wait(timeout=timeout)
        out = self.proc.stdout.read()
        self.reader.join(timeout=10)
        return self.proc.returncode, out, "".join(self.err)
