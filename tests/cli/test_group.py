# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Group membership as an operator meets it: a worker killed with kill -9 and started
again, with and without a static instance_id, under both group protocols."""
import re
import signal
import time

import pytest

from conftest import run_kelt, summary_of
from test_cli import assert_exactly_once, start_run, write_config, write_records


def produce(kelt, brokers, topic, tmp_path, n):
    write_records(tmp_path / "r.ndjson", n)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))


def start_service_run(kelt, cfg):
    """A service run that prints a progress line every 50 ms."""
    return start_run(kelt, ["run", "-c", str(cfg), "--progress", "lines",
                            "--set", "progress_interval_ms=50", "--log-level", "warning"])


def seconds_until_rows_landed(proc, started, timeout=60):
    """Read `proc`'s progress lines until one reports landed rows; the seconds since
    `started` (time.monotonic()). Kills the run and fails when none comes."""
    seen = []
    while time.monotonic() - started < timeout:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.match(r"progress records=\d+ bytes=\d+ rows=(\d+)", line)
        if m and int(m.group(1)) > 0:
            return time.monotonic() - started
    proc.kill()
    proc.wait()
    raise AssertionError("the run landed nothing:\n" + "".join(seen))


def run_until_landed(kelt, cfg):
    """Start a service run, wait until it has landed rows, kill it with SIGKILL."""
    proc = start_service_run(kelt, cfg)
    seconds_until_rows_landed(proc, time.monotonic())
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def seconds_until_rows(kelt, cfg):
    """Start a service run; return the seconds until it reports landed rows (it is then
    stopped with SIGTERM and must exit 0)."""
    started = time.monotonic()
    proc = start_service_run(kelt, cfg)
    took = seconds_until_rows_landed(proc, started)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == 0
    return took


def test_killed_static_worker_lands_again_within_5_s(kelt, brokers, make_topic, tmp_path):
    """classic + instance_id: the restarted worker replaces its dead predecessor at once,
    with no wait for the dead one's session."""
    topic = make_topic(4)
    produce(kelt, brokers, topic, tmp_path, 20000)
    cfg = write_config(tmp_path, brokers, topic,
                       "instance_id: worker-0\nsession_timeout_ms: 30000\n")
    for _ in range(2):  # killed twice in a row, as the issue saw it
        run_until_landed(kelt, cfg)
    took = seconds_until_rows(kelt, cfg)
    print(f"restart after kill -9 (classic, instance_id): rows landed after {took:.1f} s")
    assert took < 5.0, f"the restarted worker landed its first rows after {took:.1f} s"
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 timeout=120)
    assert summary_of(p.stdout)["caught_up"]
    truth = assert_exactly_once(kelt, brokers, topic, tmp_path / "landing",
                                tmp_path / "landing.duckdb")
    assert sum(len(v) for v in truth.values()) == 20000


def test_killed_static_worker_under_kip848_fails_fast_then_resumes(
        kelt, brokers, make_topic, tmp_path):
    """consumer + instance_id: KIP-848 fences the newcomer while the dead member's session
    lasts. The restart fails at once, says why and what to do, and lands nothing twice; once
    the session ended (10 s on the test broker) a restart lands the rest exactly once."""
    topic = make_topic(4)
    produce(kelt, brokers, topic, tmp_path, 5000)
    cfg = write_config(tmp_path, brokers, topic,
                       "group_protocol: consumer\ninstance_id: worker-0\n")
    run_until_landed(kelt, cfg)
    started = time.monotonic()
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 check=False, timeout=60)
    assert p.returncode != 0
    assert time.monotonic() - started < 15
    assert "is still held by a member that did not leave the group" in p.stderr, p.stderr
    assert "group_protocol classic" in p.stderr
    time.sleep(14)  # the test broker's group.consumer.session.timeout.ms is 10 s
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 timeout=120)
    assert summary_of(p.stdout)["caught_up"]
    truth = assert_exactly_once(kelt, brokers, topic, tmp_path / "landing",
                                tmp_path / "landing.duckdb")
    assert sum(len(v) for v in truth.values()) == 5000


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_catch_up_waits_for_dead_members_instead_of_failing(
        kelt, brokers, make_topic, tmp_path, protocol):
    """Without an instance_id, killed members hold their partitions until their session
    times out: the catch-up run says it waits, and lands everything once."""
    topic = make_topic(4)
    produce(kelt, brokers, topic, tmp_path, 5000)
    extra = f"group_protocol: {protocol}\n"
    if protocol == "classic":
        extra += "session_timeout_ms: 8000\n"
    cfg = write_config(tmp_path, brokers, topic, extra)
    run_until_landed(kelt, cfg)
    started = time.monotonic()
    # assignment_timeout shorter than the dead member's session: it must still wait.
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "lines",
                 "--set", "assignment_timeout_ms=4000", "--set", "progress_interval_ms=500",
                 timeout=180, check=False)
    took = time.monotonic() - started
    assert p.returncode == 0, p.stderr
    assert summary_of(p.stdout)["caught_up"]
    assert "other member(s) hold the partitions; waiting for them" in p.stderr, p.stderr
    assert "waiting_for_members=" in p.stderr, p.stderr
    assert_exactly_once(kelt, brokers, topic, tmp_path / "landing",
                        tmp_path / "landing.duckdb")
    print(f"catch-up after kill -9 without instance_id ({protocol}): {took:.1f} s")
