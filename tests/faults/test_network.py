# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Network faults between `kelt run` and the broker (issue 17, item 2): latency with
jitter, a connection cut for 30 s, a partition longer than the session timeout, and a
slow link of 1 MB/s.

The test makes its own network (tests/faults/netns.py; the `net` fixture of conftest.py): a
namespace `knf-<tag>` joined to the root namespace by a veth pair (10.213.<n>.1 on the root
side, .2 inside), and a broker of its own listening on the root side's address
(`kafka.sh start --host`). `kelt run` runs inside the namespace
(`ip netns exec`), so all of its broker traffic crosses the veth, and only the veth is
disturbed: a token bucket (`tc tbf`) on the veth's two ends, `iptables` rules inside the
namespace, and for latency a delaying proxy that a DNAT rule in the namespace puts in the
path (this VM's kernel has no `sch_netem`). The producer and the checks run in the root namespace and reach the broker
without crossing the veth. Other processes on the machine (brokers on loopback) see
nothing. Needs root (namespaces, tc, iptables).

Each test checks what kelt logs, what /metrics shows (served on the namespace's address,
reached through the veth), whether the run waits or fails and with which exit code, and
that Parquet and DuckDB hold every offset of the topic exactly once after recovery.
KELT_NET_RECORDS, KELT_NET_CUT_S and KELT_NET_PARTITION_S make it longer
(scripts/network_fault_test.sh).
"""
import os
import re
import signal
import subprocess
import time
import urllib.request
import uuid

import pytest

from conftest import (ROOT, Run, assert_ids_once, assert_same_once, duckdb_landing,
                      parquet_landing, read_env, run_kelt, summary_of, topic_records,
                      write_config, write_records)
from netns import sh

RECORDS = int(os.environ.get("KELT_NET_RECORDS", "4000"))
CUT_S = float(os.environ.get("KELT_NET_CUT_S", "30"))
PARTITION_S = float(os.environ.get("KELT_NET_PARTITION_S", "15"))
SESSION_MS = 6000  # the consumer's session timeout in the partition test (classic)
# librdkafka's request timeout (socket.timeout.ms) in the partition test: after a silent
# partition the connections recover when their requests time out, 60 s by default (the
# short variant uses 10 s; KELT_NET_SOCKET_TIMEOUT_MS= empty keeps librdkafka's default).
SOCKET_TIMEOUT_MS = os.environ.get("KELT_NET_SOCKET_TIMEOUT_MS", "10000")
METRICS_PORT = 9464
# A rotation publishes (and lets the offsets be committed) after 2 s: the recovery times
# measured below are the network's, not a rotation's age (60 s by default).
SINKS = """  - parquet: {root: landing, rotate_records: 2000, rotate_age_ms: 2000}
  - duckdb: {path: landing.duckdb, table: t}"""


def make_topic(net, kelt, partitions=3):
    name = "net-" + uuid.uuid4().hex[:10]
    p = subprocess.run(["bash", str(ROOT / "scripts/kafka.sh"), "create-topic", name,
                        str(partitions), "--dir", str(net.kafka_dir)], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "KELT_CLI": kelt})
    assert p.returncode == 0, p.stdout + p.stderr
    return name


def produce(net, kelt, tmp_path, topic, start, n, pad=100):
    f = tmp_path / f"r{start}.ndjson"
    write_records(f, start, n, pad=pad)
    run_kelt(kelt, "produce", "--brokers", net.bootstrap, "--topic", topic, "--file", str(f))


def start_run(net, kelt, cfg, *extra):
    """`kelt run` inside the namespace, /metrics on the namespace's address."""
    return Run("ip", ["netns", "exec", net.ns, kelt, "run", "-c", str(cfg), "--progress",
                      "lines", "--set", "progress_interval_ms=200", "--metrics-port",
                      str(METRICS_PORT), "--metrics-host", net.ns_ip, *extra])


def metrics(net, timeout=10):
    """{'name{labels}': value} from the run's /metrics (through the veth)."""
    with urllib.request.urlopen(f"http://{net.ns_ip}:{METRICS_PORT}/metrics",
                                timeout=timeout) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def wait_metrics(net, proc, timeout=60):
    deadline = time.time() + timeout
    while True:
        try:
            return metrics(net)
        except OSError:
            assert proc.poll() is None, "the run ended before serving /metrics"
            assert time.time() < deadline, "no /metrics within 60 s"
            time.sleep(0.2)


def scrape_until_exit(net, proc):
    """[(time, metrics)] scraped every 0.2 s from the first answer until the run ends."""
    out = [(time.time(), wait_metrics(net, proc))]
    while proc.poll() is None:
        try:
            out.append((time.time(), metrics(net)))
        except OSError:
            break
        time.sleep(0.2)
    return out


def wait_committed(net, proc, n, timeout=120):
    """Until /metrics says offsets up to n (over all partitions) are committed, i.e. landed
    in every sink."""
    deadline = time.time() + timeout
    while total(metrics(net), "kelt_committed_offset") < n:
        assert proc.poll() is None, "the run ended early"
        assert time.time() < deadline, f"/metrics: fewer than {n} rows landed in {timeout}s"
        time.sleep(0.2)


def total(m, name):
    return sum(v for k, v in m.items() if k == name or k.startswith(name + "{"))


def check_landing(kelt, net, tmp_path, topic, n):
    truth = topic_records(kelt, net.bootstrap, topic)
    assert_ids_once(truth, n)
    rows, hidden = parquet_landing(tmp_path / "landing", topic)
    assert_same_once(rows, truth, "parquet")
    assert not hidden, f"hidden files left: {hidden}"
    assert_same_once(duckdb_landing(tmp_path / "landing.duckdb"), truth, "duckdb")


def test_latency_and_jitter(fault, kelt, tmp_path):
    """50 ms ± 20 ms each way (RTT about 100 ms): a catch-up run is slower, does not fail
    (exit 0), /metrics shows windows landing while it goes, and every offset lands once."""
    n = RECORDS // 8
    topic = make_topic(fault, kelt)
    produce(fault, kelt, tmp_path, topic, 0, n)
    cfg = write_config(tmp_path, fault.bootstrap, topic, SINKS)
    fault.latency(50, 20)
    # One Kafka request (ApiVersions v0) from the namespace: its round trip crosses the
    # proxy both ways.
    rtt = float(sh("ip", "netns", "exec", fault.ns, "python3", "-c",
                   "import socket,struct,time; "
                   f"s=socket.create_connection(('{fault.host_ip}', {fault.port}), 5); "
                   "t=time.time(); s.sendall(struct.pack('>ihhih', 10, 18, 0, 1, -1)); "
                   "s.recv(4); print(time.time()-t)").stdout)
    assert rtt >= 0.05, f"the delay is not in the path: a request took {rtt * 1000:.0f} ms"
    t0 = time.time()
    run = start_run(fault, kelt, cfg, "--until-caught-up", "--set",
                    "window.max_records=50")
    scrapes = scrape_until_exit(fault, run.proc)
    # The last scrape that saw a window: how long windows take.
    m = next((m for _, m in reversed(scrapes)
              if total(m, "kelt_window_duration_seconds_count")), None)
    rc, out, err = run.finish()
    elapsed = time.time() - t0
    assert rc == 0, err
    s = summary_of(out)
    assert s["caught_up"] and s["records"] == n, s
    assert m is not None, "no scrape saw a window"
    windows = total(m, "kelt_window_duration_seconds_count")
    spent = total(m, "kelt_window_duration_seconds_sum")
    print(f"latency: a request {rtt * 1000:.0f} ms, run {elapsed:.1f}s, "
          f"{s['windows']} windows, /metrics: {windows:.0f} windows in {spent:.2f}s, "
          f"{total(m, 'kelt_rows_landed_total'):.0f} rows landed")
    assert total(m, "kelt_rows_landed_total") > 0, "/metrics: nothing landed under latency"
    # Joining the group and fetching take a dozen round trips at least.
    assert elapsed >= 12 * 0.05, f"the run took {elapsed:.1f}s: no latency in its path"
    check_landing(kelt, fault, tmp_path, topic, n)


def test_connection_cut(fault, kelt, tmp_path):
    """Every packet to and from the broker's port answered with a TCP reset for CUT_S (30 s):
    the service run logs the broken connections, keeps running (does not exit) with
    nothing landed meanwhile, reconnects when the path is back, lands what was produced
    during the cut, and stops on SIGTERM with exit 0; exactly once."""
    half = RECORDS // 2
    topic = make_topic(fault, kelt)
    produce(fault, kelt, tmp_path, topic, 0, half)
    cfg = write_config(tmp_path, fault.bootstrap, topic, SINKS)
    run = start_run(fault, kelt, cfg)
    run.wait_records(half)
    wait_metrics(fault, run.proc)
    fault.block(fault.port, "reject")
    cut = time.time()
    produce(fault, kelt, tmp_path, topic, half, RECORDS - half)  # from the root namespace
    time.sleep(2)
    during = metrics(fault)
    landed_at_cut = total(during, "kelt_rows_landed_total")
    while time.time() - cut < CUT_S:
        assert run.proc.poll() is None, "the run ended during the cut:\n" + "".join(run.err)
        time.sleep(0.5)
    late = metrics(fault)
    assert total(late, "kelt_rows_landed_total") == landed_at_cut, "rows landed during the cut"
    assert total(late, "kelt_caught_up") == 1 or landed_at_cut <= 2 * half
    log_during = "".join(run.err)
    fault.heal()
    healed = time.time()
    wait_committed(fault, run.proc, RECORDS)
    recovered = time.time() - healed
    run.proc.send_signal(signal.SIGTERM)
    rc, out, err = run.finish()
    assert rc == 0, err
    s = summary_of(out)
    assert sum(s["offsets"][topic].values()) == RECORDS, s
    broken = [line for line in log_during.splitlines()
              if re.search(r"level=(warning|error)", line)]
    print(f"cut: {CUT_S:.0f}s, rows landed during it {landed_at_cut:.0f} (unchanged), "
          f"caught up {recovered:.1f}s after the heal; {len(broken)} warning/error lines, "
          f"first: {broken[:1]}")
    assert broken, "nothing logged about the cut:\n" + log_during[-3000:]
    check_landing(kelt, fault, tmp_path, topic, RECORDS)


def test_partition_longer_than_session(fault, kelt, tmp_path):
    """Packets to and from the broker's port silently dropped for PARTITION_S (15 s), longer
    than the consumer's session timeout (6 s, classic): librdkafka logs the request
    timeouts and the session's end (SESSTMOUT) and revokes the assignment, the run keeps
    running and lands nothing, rejoins once its connections time out after the heal
    (socket.timeout.ms) and lands the rest; exactly once after SIGTERM (exit 0)."""
    half = RECORDS // 2
    topic = make_topic(fault, kelt)
    produce(fault, kelt, tmp_path, topic, 0, half)
    cfg = write_config(tmp_path, fault.bootstrap, topic, SINKS)
    extra = ["--property", f"socket.timeout.ms={SOCKET_TIMEOUT_MS}"] if SOCKET_TIMEOUT_MS else []
    run = start_run(fault, kelt, cfg, "--set", f"session_timeout_ms={SESSION_MS}", *extra)
    run.wait_records(half)
    fault.block(fault.port, "drop")
    cut = time.time()
    produce(fault, kelt, tmp_path, topic, half, RECORDS - half)
    time.sleep(1)
    during = metrics(fault)
    while time.time() - cut < PARTITION_S:
        assert run.proc.poll() is None, "the run ended in the partition:\n" + "".join(run.err)
        time.sleep(0.5)
    assert total(metrics(fault), "kelt_rows_landed_total") == total(
        during, "kelt_rows_landed_total"), "rows landed during the partition"
    log_during = "".join(run.err)
    fault.heal()
    healed = time.time()
    wait_committed(fault, run.proc, RECORDS)
    recovered = time.time() - healed
    run.proc.send_signal(signal.SIGTERM)
    rc, out, err = run.finish()
    assert rc == 0, err
    s = summary_of(out)
    assert sum(s["offsets"][topic].values()) == RECORDS, s
    warnings = [line for line in err.splitlines() if re.search(r"level=(warning|error)", line)]
    print(f"partition: {PARTITION_S:.0f}s (session {SESSION_MS} ms, socket.timeout.ms "
          f"{SOCKET_TIMEOUT_MS or 'default'}), caught up "
          f"{recovered:.1f}s after the heal; {len(warnings)} warning/error lines: "
          f"{warnings[:3]}")
    assert warnings, "nothing logged about the partition:\n" + log_during[-3000:]
    check_landing(kelt, fault, tmp_path, topic, RECORDS)


def test_slow_link(fault, kelt, tmp_path):
    """1 MB/s each way: a catch-up run of about RECORDS KB (records of 1,000 bytes) takes
    at least the link's time, does not fail, and lands every offset once."""
    topic = make_topic(fault, kelt)
    produce(fault, kelt, tmp_path, topic, 0, RECORDS, pad=1000)
    cfg = write_config(tmp_path, fault.bootstrap, topic, SINKS)
    fault.rate(1_000_000)
    t0 = time.time()
    run = start_run(fault, kelt, cfg, "--until-caught-up")
    scrapes = scrape_until_exit(fault, run.proc)
    rc, out, err = run.finish()
    elapsed = time.time() - t0
    assert rc == 0, err
    s = summary_of(out)
    assert s["records"] == RECORDS, s
    mb = s["bytes"] / 1e6
    # /metrics: the payload bytes extracted by the last scrape, over the time since the
    # run started (a rate between two scrapes can be higher: librdkafka's prefetched
    # queue hands records over in bursts).
    seen = [(t, total(m, "kelt_bytes_total")) for t, m in scrapes]
    seen = [x for x in seen if x[1] > 0]
    assert seen, "no scrape saw bytes"
    rate = seen[-1][1] / (seen[-1][0] - t0) / 1e6
    print(f"slow link: {mb:.1f} MB of payload in {elapsed:.1f}s ({mb / elapsed:.2f} MB/s); "
          f"/metrics: {seen[-1][1] / 1e6:.1f} MB after {seen[-1][0] - t0:.1f}s "
          f"({rate:.2f} MB/s), {len(seen)} scrapes")
    # The run cannot be faster than the payload through a 1 MB/s link, give or take the
    # bucket's burst.
    assert elapsed >= mb * 0.9, f"{mb:.1f} MB in {elapsed:.1f}s: the link was not slow"
    assert rate <= 1.2, f"/metrics: {rate:.2f} MB/s through a 1 MB/s link"
    check_landing(kelt, fault, tmp_path, topic, RECORDS)
