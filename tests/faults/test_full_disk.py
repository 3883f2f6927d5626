# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""A full filesystem under the landing: the Parquet root, or the DuckDB file, on a small
tmpfs (`mount -t tmpfs -o size=…`, so the test runs as root) that fills in the middle of a
run. The run must fail with an error naming the path; every published Parquet file reads
back whole; nothing is committed to Kafka past what the sink holds; after the filesystem
grows (`mount -o remount,size=…`) a new run lands the rest exactly once.

A machine where mounting is refused fails these tests: they do not skip.
"""
import os
import subprocess
import uuid

import pytest

from conftest import (ROOT, assert_same_once, duckdb_landing, parquet_landing, read_env,
                      run_kelt, summary_of, topic_records, write_config, write_records)

N = int(os.environ.get("KELT_FULL_DISK_RECORDS", "8000"))
PAD = 1000       # bytes of poorly compressible text per record: N * PAD ≈ 8 MB
SMALL = "3m"     # the filesystem while it fills
LARGE = "256m"   # after space was freed


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "fs"
    mnt.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL},mode=0755", "tmpfs",
                        str(mnt)], capture_output=True, text=True)
    assert p.returncode == 0, f"cannot mount a tmpfs (these tests need root): {p.stderr}"
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def grow(mnt):
    subprocess.run(["mount", "-o", f"remount,size={LARGE}", str(mnt)], check=True)


def committed(brokers, group, topic, partitions):
    """The group's committed offset per partition (-1001: none)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": brokers, "group.id": group,
                  "enable.auto.commit": False})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=30)
        return {tp.partition: tp.offset for tp in tps}
    finally:
        c.close()


def make_topic(kelt, env, partitions=3):
    name = "disk-" + uuid.uuid4().hex[:10]
    p = subprocess.run(["bash", str(ROOT / "scripts/kafka.sh"), "create-topic", name,
                        str(partitions), "--dir", env["KELT_KAFKA_DIR"]],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "KELT_CLI": kelt})
    assert p.returncode == 0, p.stderr
    return name


@pytest.mark.parametrize("sink", ["parquet", "duckdb"])
def test_full_disk_fails_then_lands_the_rest_once(kelt, env_path, small_fs, tmp_path, sink):
    env = read_env(env_path)
    brokers = env["KELT_KAFKA_BOOTSTRAP"]
    topic = make_topic(kelt, env)
    write_records(tmp_path / "r.ndjson", 0, N, pad=PAD)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    truth = topic_records(kelt, brokers, topic)
    assert len(truth) == N
    root, db = small_fs / "landing", small_fs / "landing.duckdb"
    sinks = (f"  - parquet: {{root: {root}, rotate_records: 1000}}" if sink == "parquet"
             else f"  - duckdb: {{path: {db}, table: t}}")
    cfg = write_config(tmp_path, brokers, topic, sinks)
    first = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                     check=False)
    assert first.returncode == 1, (f"the run did not fail (exit 1) on a full disk: "
                                   f"{first.returncode}\n{first.stdout}")
    assert str(small_fs) in first.stderr, f"the error names no path:\n{first.stderr}"
    assert "No space left on device" in first.stderr, f"the cause is lost:\n{first.stderr}"
    landed = (parquet_landing(root, topic)[0] if sink == "parquet" else duckdb_landing(db))
    assert 0 < len(landed) < N, f"the disk did not fill mid-run ({len(landed)} of {N})"
    assert_same_once(landed, [r for r in truth if r in set(landed)], sink)
    # Nothing committed past what the sink holds: below each committed offset, every
    # offset of the partition is landed.
    held = {}
    for part, off, _ in landed:
        held.setdefault(part, set()).add(off)
    for part, off in committed(brokers, f"g-{topic}", topic, 3).items():
        if off >= 0:
            missing = set(range(off)) - held.get(part, set())
            assert not missing, (f"partition {part} committed at {off} but "
                                 f"{len(missing)} offsets below it are not landed")
    print(f"{sink}: failed after {len(landed)}/{N} rows: "
          f"{first.stderr.strip().splitlines()[-1]}")
    grow(small_fs)
    second = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    assert summary_of(second.stdout)["caught_up"]
    if sink == "parquet":
        rows, hidden = parquet_landing(root, topic)
        assert_same_once(rows, truth, "parquet")
        assert not hidden, f"hidden files left: {hidden}"
    else:
        assert_same_once(duckdb_landing(db), truth, "duckdb")
