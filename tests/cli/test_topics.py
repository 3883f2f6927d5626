# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kelt topics create|describe|delete|list` and `kelt cluster describe` against the real
broker (the ctest `kafka_broker` fixture), as a user runs them."""
import json
import time
import uuid

from conftest import run_kelt, topic_contents


def fresh():
    return "topics-" + uuid.uuid4().hex[:10]


def test_create_describe_delete(kelt, brokers, tmp_path):
    name = fresh()
    p = run_kelt(kelt, "topics", "create", name, "--partitions", "3",
                 "--replication-factor", "1", "--config", "retention.ms=3600000",
                 "--bootstrap", brokers)
    assert p.stdout == f"created topic {name}\n"

    # Ready at once: a producer right after finds every partition.
    (tmp_path / "r.ndjson").write_text("".join(json.dumps({"id": i}) + "\n" for i in range(30)))
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", name,
             "--file", str(tmp_path / "r.ndjson"))
    assert sum(len(o) for o in topic_contents(kelt, brokers, name).values()) == 30

    text = run_kelt(kelt, "topics", "describe", name, "--brokers", brokers).stdout
    lines = text.splitlines()
    assert lines[0] == f"Topic: {name}\tPartitionCount: 3\tReplicationFactor: 1"
    assert [line.split("\t")[2] for line in lines[1:]] == [
        "Partition: 0", "Partition: 1", "Partition: 2"]
    assert all("\tLeader: 1\tReplicas: 1\tIsr: 1" in line for line in lines[1:])

    described = json.loads(run_kelt(kelt, "topics", "describe", name, "--json",
                                    "--bootstrap", brokers).stdout)
    assert described == [{
        "name": name, "partition_count": 3, "replication_factor": 1,
        "partitions": [{"partition": i, "leader": 1, "replicas": [1], "isr": [1]}
                       for i in range(3)]}]

    listed = json.loads(run_kelt(kelt, "topics", "list", "--json", "--bootstrap",
                                 brokers).stdout)
    assert {"name": name, "partition_count": 3, "replication_factor": 1} in listed
    assert name in run_kelt(kelt, "topics", "list", "--bootstrap", brokers).stdout.split()

    p = run_kelt(kelt, "topics", "delete", name, "--bootstrap", brokers)
    assert p.stdout == f"deleted topic {name}\n"
    # Gone from the metadata when delete returns.
    assert name not in run_kelt(kelt, "topics", "list", "--bootstrap", brokers).stdout.split()
    p = run_kelt(kelt, "topics", "describe", name, "--bootstrap", brokers, check=False)
    assert p.returncode == 1
    assert f"topic '{name}' does not exist" in p.stderr


def test_create_again_fails_unless_if_not_exists(kelt, brokers):
    name = fresh()
    run_kelt(kelt, "topics", "create", name, "--partitions", "2", "--bootstrap", brokers)
    p = run_kelt(kelt, "topics", "create", name, "--partitions", "2", "--bootstrap", brokers,
                 check=False)
    assert p.returncode == 1
    assert p.stderr.strip() == f"kelt: topics create: topic '{name}' already exists"
    p = run_kelt(kelt, "topics", "create", name, "--partitions", "2", "--if-not-exists",
                 "--bootstrap", brokers)
    assert p.stdout == f"topic {name} already exists\n"

    p = run_kelt(kelt, "topics", "delete", name, "--bootstrap", brokers)
    p = run_kelt(kelt, "topics", "delete", name, "--bootstrap", brokers, check=False)
    assert p.returncode == 1
    assert f"topic '{name}' does not exist" in p.stderr
    p = run_kelt(kelt, "topics", "delete", name, "--if-exists", "--bootstrap", brokers)
    assert p.stdout == f"topic {name} does not exist\n"


def test_describing_a_missing_topic_does_not_create_it(kelt, brokers):
    # The broker auto-creates topics that a metadata request names; describe must not.
    name = fresh()
    p = run_kelt(kelt, "topics", "describe", name, "--json", "--bootstrap", brokers,
                 check=False)
    assert p.returncode == 1
    assert p.stdout == ""
    time.sleep(0.5)
    assert name not in run_kelt(kelt, "topics", "list", "--bootstrap", brokers).stdout.split()


def test_brokers_from_the_environment_and_several_topics_at_once(kelt, brokers):
    a, b = fresh(), fresh()
    p = run_kelt(kelt, "topics", "create", a, b, "--partitions", "1",
                 env={"KELT_BROKERS": brokers})
    assert p.stdout == f"created topic {a}\ncreated topic {b}\n"
    counts = [t["partition_count"] for t in json.loads(
        run_kelt(kelt, "topics", "describe", a, b, "--json", env={"KELT_BROKERS": brokers}).stdout)]
    assert counts == [1, 1]
    run_kelt(kelt, "topics", "delete", a, b, env={"KELT_BROKERS": brokers})


def test_bad_bootstrap_fails_fast_with_a_clear_error(kelt):
    t0 = time.monotonic()
    p = run_kelt(kelt, "topics", "list", "--bootstrap", "127.0.0.1:1", "--timeout", "30",
                 check=False)
    assert p.returncode == 1
    assert time.monotonic() - t0 < 15
    last = p.stderr.strip().splitlines()[-1]
    assert last.startswith("kelt: topics list: cannot reach the cluster at 127.0.0.1:1: ")
    assert "Connection refused" in last


def test_usage_errors_exit_2(kelt, brokers):
    for args in (["topics", "create", "bad name", "--bootstrap", brokers],
                 ["topics", "create", "t", "--partitions", "0", "--bootstrap", brokers],
                 ["topics", "create", "t", "--config", "novalue", "--bootstrap", brokers],
                 ["topics", "describe", "t", "--property", "novalue", "--bootstrap", brokers],
                 ["topics", "list"],
                 ["topics"]):
        p = run_kelt(kelt, *args, check=False, env={"KELT_BROKERS": ""})
        assert p.returncode == 2, (args, p.stderr)


def test_cluster_describe(kelt, brokers):
    c = json.loads(run_kelt(kelt, "cluster", "describe", "--json", "--bootstrap",
                            brokers).stdout)
    host, port = brokers.split(":")
    assert c["brokers"] == [{"id": 1, "host": host, "port": int(port)}]
    assert c["controller"] == 1
    assert len(c["cluster_id"]) == 22
    # No authorizer: every cluster operation is allowed.
    assert "DESCRIBE" in c["authorized_operations"]
