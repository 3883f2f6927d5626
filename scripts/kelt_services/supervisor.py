# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The one supervisor of kelt's local services: start a process detached with its log
file, write its pid, wait until a probe says it is ready (bounded, the log's tail on
failure), and stop it with a sequence of signals ending in SIGKILL."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from .common import Console, now


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (one that nobody reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1]


def find_processes(match: Callable[[list[str]], bool]) -> list[int]:
    """Pids whose command line satisfies `match`, oldest first."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        argv = cmdline(pid)
        if argv and match(argv) and alive(pid):
            try:
                start = int((entry / "stat").read_text().rpartition(")")[2].split()[19])
            except (OSError, IndexError, ValueError):
                continue
            found.append((start, pid))
    return [pid for _, pid in sorted(found)]


@dataclass
class Outcome:
    """What wait_ready saw: "ready", "exited" (the process died) or "timeout"."""
    state: str
    detail: str = ""


class Supervisor:
    """One supervised process of a service: `name` for messages, its log file and its pid
    file (optional)."""

    def __init__(self, console: Console, log: Path, pidfile: Path | None = None,
                 log_tail_lines: int = 40):
        self.console = console
        self.log = log
        self.pidfile = pidfile
        self.log_tail_lines = log_tail_lines
        self.proc: subprocess.Popen | None = None

    # ---- start ------------------------------------------------------------------------
    def launch(self, argv: Sequence[str], *, env: dict | None = None, cwd: str | None = None,
               append_log: bool = False, user: str | None = None) -> int:
        """Starts argv in a session of its own (a ^C or a test runner's group kill of the
        caller does not reach it), stdin from /dev/null, stdout and stderr to the log.
        With `user` (as root) it runs as that OS user. Returns the pid (also written to
        the pid file)."""
        extra = {}
        if user is not None:
            import pwd
            entry = pwd.getpwnam(user)
            extra = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        with open(self.log, "ab" if append_log else "wb") as log:
            self.proc = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=env, cwd=cwd, start_new_session=True, **extra)
        if self.pidfile is not None:
            self.pidfile.write_text(f"{self.proc.pid}\n")
        return self.proc.pid

    def exited(self) -> bool:
        """The launched process has ended (it is reaped here, so never a zombie)."""
        return self.proc is not None and self.proc.poll() is not None

    def wait_ready(self, probe: Callable[[], bool], timeout: float,
                   interval: float = 0.1) -> Outcome:
        """Calls probe() until it returns True, the process exits or `timeout` seconds
        passed (probe() itself should be bounded)."""
        deadline = now() + timeout
        while True:
            if self.exited():
                return Outcome("exited", f"exit status {self.proc.returncode}")
            if probe():
                return Outcome("ready")
            if now() > deadline:
                return Outcome("timeout")
            time.sleep(interval)

    def settle_start(self, outcome: Outcome, pid: int, what: str, serving: str,
                     timeout: float, port_taken: Sequence[str]) -> str:
        """What a start that wait_ready watched came to: "ready"; "port" when the
        process exited because its port was taken (its log says one of `port_taken`;
        the caller picks another); else "failed", after saying why and showing the end
        of the log. `what` names the service ("the broker"), `serving` what it did not
        do in time ("serve"). A process that did not come up in time is killed."""
        if outcome.state == "exited":
            if self.pidfile is not None:
                self.pidfile.unlink(missing_ok=True)
            if self.log_contains(*port_taken):
                return "port"
            self.console.say(f"{what} exited during startup ({outcome.detail})")
            self.show_log_tail()
            return "failed"
        if outcome.state == "timeout":
            self.console.say(f"{what} did not {serving} within {timeout}s")
            self.show_log_tail()
            self.kill(pid)
            return "failed"
        return "ready"

    def log_contains(self, *needles: str) -> bool:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return False
        return any(n in text for n in needles)

    def show_log_tail(self) -> None:
        try:
            lines = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return
        print(f"[{self.console.name}] last {self.log_tail_lines} lines of {self.log}:",
              file=sys.stderr)
        for line in lines[-self.log_tail_lines:]:
            print(line, file=sys.stderr)
        sys.stderr.flush()

    # ---- stop -------------------------------------------------------------------------
    def stop(self, pid: int, steps: Sequence[tuple[int, float, str]]) -> int | None:
        """Sends each (signal, seconds to wait, what to say when it did not end the
        process) in turn until the process is gone. Returns the index of the step that
        ended it, None if it survived them all. Removes the pid file when it is gone."""
        ended = None
        for index, (sig, wait, note) in enumerate(steps):
            ended = index
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
            deadline = now() + wait
            while alive(pid) and now() < deadline:
                if self.proc is not None and self.proc.pid == pid:
                    self.proc.poll()
                time.sleep(0.1)
            if not alive(pid):
                break
            if note:
                self.console.say(note)
        if alive(pid):
            return None
        if self.pidfile is not None:
            self.pidfile.unlink(missing_ok=True)
        return ended

    def kill(self, pid: int) -> None:
        """SIGKILL (a service that did not come up is of no use half-started)."""
        self.stop(pid, [(signal.SIGKILL, 5, "")])
        if self.pidfile is not None:
            self.pidfile.unlink(missing_ok=True)
