# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Fixtures for the tests that drive the real `kelt` binary against a real broker.

Run by ctest (tests/CMakeLists.txt) under the `kafka_broker` fixture, which provides
KELT_KAFKA_ENV (the broker's env file) and KELT_BIN (the binary under test).
"""
import json
import os
import pathlib
import subprocess
import sys
import uuid

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
from kelt_services.common import read_env  # noqa: E402  (the env files' one reader)

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def kelt():
    path = os.environ.get("KELT_BIN")
    assert path and os.access(path, os.X_OK), "KELT_BIN must name the kelt binary"
    return path


@pytest.fixture(scope="session")
def broker_env():
    path = os.environ.get("KELT_KAFKA_ENV")
    assert path and os.path.exists(path), "KELT_KAFKA_ENV must name a running broker's env file"
    return read_env(pathlib.Path(path))


@pytest.fixture(scope="session")
def brokers(broker_env):
    return broker_env["KELT_KAFKA_BOOTSTRAP"]


@pytest.fixture
def make_topic(broker_env, kelt):
    """Create a fresh topic with N partitions (names are unique per test), with
    scripts/kafka.sh create-topic, which runs `kelt topics create` of the binary under test."""

    def make(partitions=3):
        name = "cli-" + uuid.uuid4().hex[:10]
        subprocess.run(
            ["bash", str(ROOT / "scripts/kafka.sh"), "create-topic", name, str(partitions),
             "--dir", broker_env["KELT_KAFKA_DIR"]],
            check=True, capture_output=True, timeout=120, env={**os.environ, "KELT_CLI": kelt})
        return name

    return make


def run_kelt(kelt, *args, timeout=180, env=None, check=True):
    """Run kelt to completion; return the CompletedProcess (text)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([kelt, *args], capture_output=True, text=True, timeout=timeout,
                       env=full_env)
    if check and p.returncode != 0:
        raise AssertionError(f"kelt {' '.join(args)} exited {p.returncode}\n"
                             f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}")
    return p


def summary_of(stdout):
    """The run's final summary: the last stdout line that is a JSON object."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{") and '"windows"' in line:
            return json.loads(line)
    raise AssertionError("no summary JSON in:\n" + stdout)


def topic_contents(kelt, brokers, topic):
    """Every record of the topic via `kelt tail -e --format json` (a consumer that never
    commits): {partition: [offsets...]}."""
    p = run_kelt(kelt, "tail", "--brokers", brokers, "--topic", topic, "--from", "beginning",
                 "--exit-at-end", "--format", "json")
    parts = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        parts.setdefault(r["partition"], []).append(r["offset"])
    return parts
