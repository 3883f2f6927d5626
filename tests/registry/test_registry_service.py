# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""scripts/registry.sh's start outcome with the real app: a port taken between the pick
and Quarkus's bind is seen in the log (settle_start → "port") and start retries on other
ports. (tests/services checks the same message without the app.)"""
import os
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from kelt_services import registry  # noqa: E402
from kelt_services.common import read_env  # noqa: E402

# The service tool in a child process (its directory lock lasts as long as the process)
# whose first pick of free ports returns TAKEN as the HTTP port.
START_ON_A_TAKEN_PORT = """\
import sys
from kelt_services import registry
taken, directory = int(sys.argv[1]), sys.argv[2]
pick = registry.free_ports
picks = []
def free_ports(count):
    picks.append(count)
    return [taken, *pick(count)[1:]] if len(picks) == 1 else pick(count)
registry.free_ports = free_ports
sys.exit(registry.main(["start", "--dir", directory]))
"""


def service(*args, timeout=300):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")})


def test_a_port_taken_meanwhile_is_retried(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    directory = tmp_path / "registry"
    try:
        start = service("-c", START_ON_A_TAKEN_PORT, str(port), str(directory))
        assert start.returncode == 0, start.stderr
        assert "a port was taken meanwhile (attempt 1); trying others" in start.stderr
        env = read_env(directory / "env")
        assert env["KELT_REGISTRY_PORT"] != str(port)
        assert start.stdout == f"KELT_REGISTRY_URL={env['KELT_REGISTRY_URL']}\n"
        assert registry.answers(env["KELT_REGISTRY_URL"])
    finally:
        stop = service("-m", "kelt_services", "registry", "stop", "--dir", str(directory))
        taken.close()
    assert stop.returncode == 0, stop.stderr
