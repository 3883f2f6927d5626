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
import uuid

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
from kelt_services.common import read_env  # noqa: E402  (the env files' one reader)

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ROOT = pathlib.Path(__file__).resolve().parents[2]


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


# `kelt run --schema registry:…` end to end (test_kelt_*.py): the binary under test
# (KELT_BIN), the broker (KELT_KAFKA_ENV) and PostgreSQL (KELT_PG_ENV).
def env_file(name):
    path = os.environ.get(name)
    if not path or not os.path.exists(path):
        pytest.fail(f"{name} must name a running service's env file")
    return read_env(pathlib.Path(path))


@pytest.fixture(scope="session")
def kelt():
    path = os.environ.get("KELT_BIN")
    assert path and os.access(path, os.X_OK), "KELT_BIN must name the kelt binary"
    return path


@pytest.fixture(scope="session")
def broker():
    return env_file("KELT_KAFKA_ENV")


@pytest.fixture(scope="session")
def pg():
    return env_file("KELT_PG_ENV")


@pytest.fixture(scope="session")
def create_topic(kelt, broker):
    """Create a topic of `partitions` partitions on the broker."""
    def create(name, partitions):
        subprocess.run(
            ["bash", str(ROOT / "scripts/kafka.sh"), "create-topic", name, str(partitions),
             "--dir", broker["KELT_KAFKA_DIR"]],
            check=True, capture_output=True, timeout=120,
            env={**os.environ, "KELT_CLI": kelt})
    return create


@pytest.fixture
def every_sink_config(broker, pg, registry_url, tmp_path):
    """Write a config that lands `topic` by the registry's `subject` into Parquet
    (tmp_path/landing), DuckDB (tmp_path/orders.duckdb, table orders) and PostgreSQL (a
    fresh table) until caught up, bad records dead-lettered; return its path and the
    PostgreSQL table."""
    def write(topic, subject):
        table = "orders_" + uuid.uuid4().hex[:8]
        config = tmp_path / "kelt.yaml"
        config.write_text(json.dumps({
            "brokers": broker["KELT_KAFKA_BOOTSTRAP"], "group": topic + "-g",
            "topics": [topic], "schema": f"registry:{subject}",
            "registry": {"url": registry_url}, "until_caught_up": True,
            "on_bad_record": "dead_letter",
            "sinks": [{"parquet": {"root": str(tmp_path / "landing")}},
                      {"duckdb": {"path": str(tmp_path / "orders.duckdb"),
                                  "table": "orders"}},
                      {"postgres": {"conninfo": pg["KELT_PG_CONNINFO"], "table": table}}],
        }))
        return config, table
    return write


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
