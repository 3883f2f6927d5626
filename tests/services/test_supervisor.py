# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The service tool's supervisor (scripts/kelt_services/supervisor.py) on plain processes:
detached start with log and pid file, readiness, a process that dies while starting, and
stop by signals ending in SIGKILL. (The services themselves are exercised by every ctest
fixture that starts them.)"""
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import pytest  # noqa: E402
from kelt_services.common import Console, DirLock, Fatal, free_ports, read_env, write_env  # noqa: E402
from kelt_services.supervisor import Supervisor, alive  # noqa: E402


def test_start_wait_ready_and_stop(tmp_path):
    sup = Supervisor(Console("test"), tmp_path / "p.log", tmp_path / "p.pid")
    marker = tmp_path / "ready"
    pid = sup.launch(["sh", "-c", f"echo hello; sleep 0.3; touch {marker}; exec sleep 60"])
    assert (tmp_path / "p.pid").read_text().strip() == str(pid)
    assert os.getsid(pid) == pid  # a session of its own
    assert sup.wait_ready(marker.exists, timeout=10).state == "ready"
    assert sup.log_contains("hello")
    assert sup.stop(pid, [(signal.SIGTERM, 5, "still there"), (signal.SIGKILL, 5, "")]) == 0
    assert not alive(pid)
    assert not (tmp_path / "p.pid").exists()


def test_a_process_that_ignores_sigterm_is_killed(tmp_path, capsys):
    sup = Supervisor(Console("test"), tmp_path / "p.log", tmp_path / "p.pid")
    marker = tmp_path / "trapped"
    pid = sup.launch(["sh", "-c", f"trap '' TERM; touch {marker}; while :; do sleep 0.1; done"])
    assert sup.wait_ready(marker.exists, timeout=10).state == "ready"
    t0 = time.monotonic()
    ended = sup.stop(pid, [(signal.SIGTERM, 0.5, "ignored SIGTERM"), (signal.SIGKILL, 5, "")])
    assert ended == 1
    assert time.monotonic() - t0 < 5
    assert not alive(pid)
    assert "[test] ignored SIGTERM" in capsys.readouterr().err


def test_exit_during_start_and_timeout_show_the_log(tmp_path, capsys):
    sup = Supervisor(Console("test"), tmp_path / "p.log", log_tail_lines=2)
    sup.launch(["sh", "-c", "echo one; echo two; echo three; exit 3"])
    outcome = sup.wait_ready(lambda: False, timeout=10)
    assert (outcome.state, outcome.detail) == ("exited", "exit status 3")
    sup.show_log_tail()
    err = capsys.readouterr().err
    assert "two\nthree\n" in err and "one" not in err.split("lines of")[1]

    pid = sup.launch(["sleep", "60"])
    assert sup.wait_ready(lambda: False, timeout=0.3).state == "timeout"
    sup.kill(pid)
    assert not alive(pid)


def test_dir_lock_env_file_and_ports(tmp_path):
    lock = DirLock(tmp_path, 1, "test")
    with pytest.raises(Fatal, match="another test holds"):
        DirLock(tmp_path, 0.2, "test")
    del lock  # the lock goes with its object, not only with the process
    DirLock(tmp_path, 1, "test")

    write_env(tmp_path / "env", ["A=1", "B=x=y", "A=2"])
    assert (tmp_path / "env").stat().st_mode & 0o777 == 0o600
    assert read_env(tmp_path / "env") == {"A": "2", "B": "x=y"}
    ports = free_ports(5)
    assert len(set(ports)) == 5


def test_settle_start_tells_a_taken_port_from_a_failure(tmp_path, capsys):
    sup = Supervisor(Console("test"), tmp_path / "p.log", tmp_path / "p.pid")
    pid = sup.launch(["sh", "-c", "echo 'bind: Address already in use'; exit 1"])
    outcome = sup.wait_ready(lambda: False, timeout=10)
    assert sup.settle_start(outcome, pid, "the server", "serve", 10,
                            ("Address already in use",)) == "port"
    assert not (tmp_path / "p.pid").exists()

    pid = sup.launch(["sh", "-c", "echo 'some other trouble'; exit 3"])
    outcome = sup.wait_ready(lambda: False, timeout=10)
    assert sup.settle_start(outcome, pid, "the server", "serve", 10,
                            ("Address already in use",)) == "failed"
    err = capsys.readouterr().err
    assert "the server exited during startup (exit status 3)" in err
    assert "some other trouble" in err

    pid = sup.launch(["sleep", "60"])
    outcome = sup.wait_ready(lambda: False, timeout=0.3)
    assert sup.settle_start(outcome, pid, "the broker", "serve", 0.3, ("x",)) == "failed"
    assert "the broker did not serve within 0.3s" in capsys.readouterr().err
    assert not alive(pid)
