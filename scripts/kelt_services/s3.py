# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""A local S3-compatible object store on 127.0.0.1 for tests and the demo: moto's server
mode (Apache-2.0, from PyPI; scripts/bootstrap.sh installs it into the venv).

  bash scripts/s3.sh start [--dir DIR] [--bucket NAME] [--host ADDR]
  bash scripts/s3.sh stop [--dir DIR]
  bash scripts/s3.sh status [--dir DIR]

start   Starts moto_server on a free loopback port, waits until it answers (bounded by
        KELT_S3_START_TIMEOUT, 30 s), creates the bucket (default `kelt`) and writes
        DIR/env (default DIR: $KELT_ROOT/build/s3): KELT_S3_ENDPOINT=http://127.0.0.1:PORT,
        KELT_S3_BUCKET, KELT_S3_PID, and the fixed test credentials AWS_ACCESS_KEY_ID /
        AWS_SECRET_ACCESS_KEY (`testing`) with AWS_REGION=us-east-1. Prints the endpoint
        line. Already running in DIR: prints it again and exits 0. Data lives in memory.
        The server's log: DIR/moto.log.
--host ADDR  moto_server listens on ADDR (an IPv4 address of this machine) instead of
        127.0.0.1, and KELT_S3_ENDPOINT names it. The network fault tests
        (tests/faults/test_network_sinks.py) put it on a veth address so that kelt in
        another network namespace reaches it through that veth only.
stop    SIGTERM, then SIGKILL after 10 s. Fine when not running.
status  Exit 0 printing the endpoint line when DIR's server answers, else 1.
"""
from __future__ import annotations

import os
import re
import signal
import urllib.error
import urllib.request
from pathlib import Path

from .common import (ROOT, VENV, CommandLine, Console, Fatal, env_seconds, free_ports, read_env,
                     write_env)
from .supervisor import Supervisor, alive, cmdline

console = Console("s3")
say = console.say


def answers(endpoint: str) -> bool:
    try:
        with urllib.request.urlopen(endpoint + "/", timeout=2) as r:
            return 200 <= r.status < 400
    except (urllib.error.URLError, OSError, ValueError):
        return False


class Server:
    def __init__(self, directory: Path):
        self.dir = directory
        self.envfile = directory / "env"
        self.moto = VENV / "bin/moto_server"
        self.supervisor = Supervisor(console, directory / "moto.log")

    def running(self) -> tuple[int, str] | None:
        """(pid, endpoint) of DIR's server when it runs and answers."""
        env = read_env(self.envfile)
        pid, endpoint = env.get("KELT_S3_PID", ""), env.get("KELT_S3_ENDPOINT", "")
        if not pid.isdigit() or not alive(int(pid)):
            return None
        if not any("moto_server" in a for a in cmdline(int(pid))):
            return None  # a stale pid that names another process now
        return int(pid), endpoint

    def start(self, bucket: str, host: str = "127.0.0.1") -> int:
        if not os.access(self.moto, os.X_OK):
            raise Fatal(f"no {self.moto}; run scripts/bootstrap.sh")
        self.dir.mkdir(parents=True, exist_ok=True)
        run = self.running()
        if run is not None and answers(run[1]):
            print(f"KELT_S3_ENDPOINT={run[1]}", flush=True)
            return 0
        timeout = env_seconds("KELT_S3_START_TIMEOUT", 30)
        port = free_ports(1)[0]
        endpoint = f"http://{host}:{port}"
        sup = self.supervisor
        pid = sup.launch([str(self.moto), "-H", host, "-p", str(port)])
        outcome = sup.wait_ready(lambda: answers(endpoint), timeout, interval=0.2)
        if outcome.state == "exited":
            raise Fatal(f"moto_server exited (see {sup.log})")
        if outcome.state == "timeout":
            sup.stop(pid, [(signal.SIGTERM, 5, ""), (signal.SIGKILL, 5, "")])
            raise Fatal(f"moto_server did not answer within {timeout}s")
        write_env(self.envfile, [
            f"KELT_S3_ENDPOINT={endpoint}", f"KELT_S3_BUCKET={bucket}", f"KELT_S3_PID={pid}",
            "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing",
            "AWS_REGION=us-east-1"])
        # Create the bucket (an unsigned PUT is accepted by moto).
        try:
            urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method="PUT"),
                                   timeout=10).close()
        except (urllib.error.URLError, OSError) as e:
            raise Fatal(f"creating bucket {bucket} failed: {e}") from None
        say(f"moto_server on {endpoint}, bucket {bucket}")
        print(f"KELT_S3_ENDPOINT={endpoint}", flush=True)
        return 0

    def stop(self) -> int:
        run = self.running()
        if run is None:
            say("not running")
            return 0
        self.supervisor.stop(run[0], [(signal.SIGTERM, 10, ""), (signal.SIGKILL, 5, "")])
        say("stopped")
        return 0

    def status(self) -> int:
        run = self.running()
        if run is not None and answers(run[1]):
            print(f"KELT_S3_ENDPOINT={run[1]}", flush=True)
            return 0
        return 1


COMMAND_LINE = CommandLine(__doc__, ("start", "stop", "status"), ROOT / "build/s3")
COMMAND_LINE.option("--bucket", "an S3 bucket name", "kelt",
                    lambda name: re.fullmatch(r"[a-z0-9][a-z0-9.-]{2,62}", name) is not None)
COMMAND_LINE.option("--host", "an IPv4 address of this machine", "127.0.0.1",
                    lambda v: re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", v) is not None)


def main(args: list[str]) -> int:
    command, options = COMMAND_LINE.parse(args)
    server = Server(Path(options.dir))
    if options.host != "127.0.0.1" and command != "start":
        raise Fatal("--host applies to start only")
    if command == "start":
        return server.start(options.bucket, options.host)
    if command == "stop":
        return server.stop()
    return server.status()
