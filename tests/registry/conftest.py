# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Fixtures for the tests against a real Schema Registry (Apicurio Registry's
Confluent-compatible API, started by scripts/registry.sh).

Run by ctest (tests/CMakeLists.txt) under the `schema_registry` fixture, which provides
KELT_REGISTRY_ENV (the registry's env file). The registry keeps its schemas in memory for
the whole ctest run, so every test registers under subjects of its own.
"""
import json
import os
import pathlib
import subprocess
import sys
import urllib.error
import urllib.request
import time
import uuid

import pyarrow.parquet as pq
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from kelt_services.common import read_env  # noqa: E402  (the env files' one reader)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ROOT = pathlib.Path(__file__).resolve().parents[2]


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "python_package: needs the kelt Python package of this tree installed "
        "(ctest leaves these out; scripts/test.sh runs them after `pip install .`)")


def env_file(name):
    """The env file of a running service (scripts/<service>.sh start) named by `name`."""
    path = os.environ.get(name)
    if not path or not os.path.exists(path):
        pytest.fail(f"{name} must name a running service's env file")
    return read_env(pathlib.Path(path))


@pytest.fixture(scope="module")
def kelt():
    path = os.environ.get("KELT_BIN")
    assert path and os.access(path, os.X_OK), "KELT_BIN must name the kelt binary"
    return path


@pytest.fixture(scope="module")
def broker():
    return env_file("KELT_KAFKA_ENV")


def create_topic(kelt, broker, name, partitions=1):
    subprocess.run(
        ["bash", str(ROOT / "scripts/kafka.sh"), "create-topic", name, str(partitions),
         "--dir", broker["KELT_KAFKA_DIR"]],
        check=True, capture_output=True, timeout=120, env={**os.environ, "KELT_CLI": kelt})


@pytest.fixture(scope="session")
def registry_env():
    path = os.environ.get("KELT_REGISTRY_ENV")
    assert path and os.path.exists(path), \
        "KELT_REGISTRY_ENV must name a running registry's env file (scripts/registry.sh start)"
    return read_env(pathlib.Path(path))


@pytest.fixture(scope="session")
def registry_url(registry_env):
    return registry_env["KELT_REGISTRY_URL"]


class Rest:
    """The registry's REST API with the standard library: (status, JSON body) per call, so
    a test can look at a refusal as closely as at a success."""

    def __init__(self, url):
        self.url = url

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": CONTENT_TYPE,
                                                  "Accept": CONTENT_TYPE})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def get(self, path):
        return self.call("GET", path)

    def post(self, path, body):
        return self.call("POST", path, body)


@pytest.fixture(scope="session")
def rest(registry_url):
    return Rest(registry_url)


@pytest.fixture
def subject():
    """A fresh subject name, `<topic>-value` as the serializers name them by default."""
    return f"kelt-{uuid.uuid4().hex[:10]}-value"


# --- `kelt run` against the broker and PostgreSQL (test_kelt_avro.py, test_kelt_protobuf.py)


@pytest.fixture(scope="session")
def pg():
    return env_file("KELT_PG_ENV")


def landed_ids(root):
    """The `id` values of every Parquet file below `root` (a Parquet sink's topic)."""
    ids = set()
    for f in root.rglob("*.parquet") if root.exists() else []:
        ids.update(pq.read_table(f, columns=["id"]).column("id").to_pylist())
    return ids


def wait_for_ids(proc, root, n, seconds=60):
    """Wait until `n` ids landed below `root` while `proc` (a `kelt run`) runs."""
    deadline = time.time() + seconds
    while time.time() < deadline and len(landed_ids(root)) < n:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    assert len(landed_ids(root)) >= n


def every_sink_config(tmp_path, broker, pg, topic, schema, registry_url):
    """A catch-up run of `topic` with landing `schema` into Parquet (tmp_path/landing),
    DuckDB (tmp_path/orders.duckdb, table orders) and PostgreSQL (a fresh table), bad
    records as dead letters: the config file and the PostgreSQL table."""
    table = "orders_" + uuid.uuid4().hex[:8]
    config = tmp_path / "kelt.yaml"
    config.write_text(json.dumps({
        "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g", "topics": [topic],
        "schema": schema, "registry": {"url": registry_url},
        "until_caught_up": True, "on_bad_record": "dead_letter",
        "sinks": [{"parquet": {"root": str(tmp_path / "landing")}},
                  {"duckdb": {"path": str(tmp_path / "orders.duckdb"), "table": "orders"}},
                  {"postgres": {"conninfo": pg["KELT_PG_CONNINFO"], "table": table}}],
    }))
    return config, table


def validated(kelt, config):
    """`kelt validate --config config`'s output; it must succeed."""
    shown = subprocess.run([kelt, "validate", "--config", str(config)], capture_output=True,
                           text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


@pytest.fixture
def validate_subject(kelt, broker, registry_url, tmp_path):
    """`kelt validate` of a config landing `subject` into Parquet, from flags."""
    def validate(subject):
        return subprocess.run(
            [kelt, "validate", "--brokers", broker["KELT_KAFKA_BOOTSTRAP"], "--group", "g",
             "--topic", "t", "--schema", f"registry:{subject}",
             "--registry-url", registry_url, "--parquet", str(tmp_path)],
            capture_output=True, text=True, timeout=60)
    return validate


@pytest.fixture(scope="session")
def psql(pg):
    """The rows of a query on PostgreSQL, `|`-separated (psql -At)."""
    def query(sql):
        run = subprocess.run(["psql", pg["KELT_PG_CONNINFO"], "-At", "-c", sql],
                             capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout.splitlines()
    return query


def registry_client(url):
    """confluent-kafka's registry client with a request timeout (its default waits for
    ever: one stalled answer under load hung a whole ctest run)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    return SchemaRegistryClient({"url": url, "timeout": 30})


# confluent-kafka's serializers (>= 2.13) first ask the registry which subject is associated
# with the topic, an API Apicurio lacks; the tests use <topic>-value, the TOPIC strategy.
TOPIC_SUBJECTS = {"subject.name.strategy.type": "TOPIC"}



def start_run(kelt, config):
    """`kelt run --config config` as a service (info-level log, no progress lines),
    started: stop it with SIGTERM; its stdout and stderr are pipes of text."""
    return subprocess.Popen([kelt, "run", "--config", str(config), "--progress", "none",
                             "--log-level", "info"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

class AvroTopic:
    """A fresh topic (`prefix` + a random tail) and its value subject `<topic>-value`,
    with confluent-kafka's producer and AvroSerializer: produce(schema, values) writes
    each value with `schema`, registering it as the subject's next version the first
    time."""

    def __init__(self, kelt, broker, registry_url, prefix="avro-", partitions=1):
        from confluent_kafka import Producer
        self.topic = prefix + uuid.uuid4().hex[:10]
        self.subject = self.topic + "-value"
        create_topic(kelt, broker, self.topic, partitions)
        self._client = registry_client(registry_url)
        self._producer = Producer({"bootstrap.servers": broker["KELT_KAFKA_BOOTSTRAP"]})
        self._serializers = {}

    def write_config(self, path, broker, registry_url, sinks, window=None, **more):
        """Write a kelt config to `path` reading this topic (group `<topic>-g`) with the
        landing schema of its subject, into `sinks`; `window` and `more` are further
        keys. Returns `path`."""
        config = {
            "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": self.topic + "-g",
            "topics": [self.topic],
            "schema": {"registry": {"subject": self.subject, "url": registry_url}},
            "window": window or {"max_wait_ms": 200},
            **more,
            "sinks": sinks,
        }
        path.write_text(json.dumps(config))
        return path

    def produce(self, schema, values):
        from confluent_kafka.schema_registry.avro import AvroSerializer
        from confluent_kafka.serialization import MessageField, SerializationContext
        text = json.dumps(schema)
        if text not in self._serializers:
            self._serializers[text] = AvroSerializer(self._client, text, conf=TOPIC_SUBJECTS)
        serialize = self._serializers[text]
        ctx = SerializationContext(self.topic, MessageField.VALUE)
        for v in values:
            self._producer.produce(self.topic, value=serialize(v, ctx))
        assert self._producer.flush(30) == 0
