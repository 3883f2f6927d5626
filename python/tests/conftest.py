# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Shared fixtures: the real broker (from KELT_KAFKA_BOOTSTRAP or the KELT_KAFKA_ENV file),
librdkafka's mock cluster, fresh names, the repository's fixtures."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

import kelt

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


def broker_bootstrap() -> str | None:
    value = os.environ.get("KELT_KAFKA_BOOTSTRAP")
    if value:
        return value
    env_file = os.environ.get("KELT_KAFKA_ENV")
    if env_file and Path(env_file).is_file():
        for line in Path(env_file).read_text().splitlines():
            key, _, val = line.partition("=")
            if key.strip() == "KELT_KAFKA_BOOTSTRAP" and val.strip():
                return val.strip()
    return None


@pytest.fixture(scope="session")
def broker() -> str:
    """The real broker's bootstrap address. Missing is a failure, never a skip."""
    bootstrap = broker_bootstrap()
    if not bootstrap:
        pytest.fail("no Kafka broker: set KELT_KAFKA_BOOTSTRAP, or KELT_KAFKA_ENV to the env "
                    "file of `bash scripts/kafka.sh start --dir DIR` (DIR/env)")
    return bootstrap


@pytest.fixture
def mock_cluster():
    """librdkafka's in-process mock cluster (no broker needed)."""
    return kelt._kelt.MockCluster(1)


@pytest.fixture
def fresh():
    """fresh("topic") -> a name no other test or run uses."""
    return lambda prefix: f"py-{prefix}-{uuid.uuid4().hex[:12]}"


def registry_client(url):
    """confluent-kafka's registry client with a request timeout (its default waits for
    ever: one stalled answer under load hung a whole ctest run)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient
    return SchemaRegistryClient({"url": url, "timeout": 30})


# confluent-kafka's serializers (>= 2.13) first ask the registry which subject is associated
# with the topic, an API Apicurio lacks; the tests use <topic>-value, the TOPIC strategy.
TOPIC_SUBJECTS = {"subject.name.strategy.type": "TOPIC"}
