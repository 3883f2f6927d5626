# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""What every service shares: paths, messages, arguments, the service directory (lock,
marker, env file), ports and passwords."""
from __future__ import annotations

import fcntl
import os
import re
import secrets
import shutil
import socket
import string
import sys
import time
from pathlib import Path

ROOT = Path(os.environ.get("KELT_ROOT") or Path(__file__).resolve().parents[2])
CACHE = Path(os.environ.get("KELT_CACHE") or Path(os.environ.get("HOME", "/root")) / ".cache/kelt")
VENV = Path(os.environ.get("KELT_VENV") or ROOT / ".venv")

# A DIR path goes into config files and KEY=value lines unquoted.
SAFE_PATH = re.compile(r"^[A-Za-z0-9._/+,:@=~-]+$")


class Fatal(Exception):
    """Ends the command: the message goes to stderr as an ERROR, the exit code is 1."""


class Console:
    """`[name] message` lines on stderr."""

    def __init__(self, name: str):
        self.name = name

    def say(self, msg: str) -> None:
        print(f"[{self.name}] {msg}", file=sys.stderr, flush=True)

    def error(self, msg: str) -> None:
        print(f"[{self.name}] ERROR: {msg}", file=sys.stderr, flush=True)


def now() -> float:
    return time.monotonic()


def secs_since(t0: float) -> str:
    return f"{time.monotonic() - t0:.1f}"


def is_uint(text: str) -> bool:
    return bool(re.fullmatch(r"[0-9]+", text or ""))


def env_seconds(name: str, default: int) -> int:
    """A positive number of seconds from the environment (Fatal otherwise)."""
    value = os.environ.get(name, str(default))
    if not is_uint(value) or int(value) == 0:
        raise Fatal(f"{name} must be a positive number of seconds")
    return int(value)


def usage_of(module_doc: str) -> str:
    return module_doc.strip("\n") + "\n"


def dir_arg(args: list[str], i: int, name: str = "--dir") -> tuple[str, int]:
    """The value of `--dir X` at args[i] (Fatal when missing or empty); next index."""
    if i + 1 >= len(args) or not args[i + 1]:
        raise Fatal(f"{name} needs a directory")
    return args[i + 1], i + 2


def resolve_dir(raw: str, command: str, console: Console) -> Path | None:
    """Checks DIR, creates it for start, and returns it absolute (symlinks resolved).
    None when it does not exist (the caller decides what that means)."""
    if not SAFE_PATH.match(raw):
        raise Fatal(f"--dir '{raw}': use a path without spaces, quotes, backslashes or "
                    "other shell specials")
    path = Path(raw)
    if command == "start":
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            raise Fatal(f"cannot create {raw}") from None
    if path.is_dir():
        return path.resolve()
    return None


class DirLock:
    """An exclusive flock on a directory, so that two start/stop calls on one DIR do not
    interleave. The descriptor is not inherited by children (PEP 446)."""

    def __init__(self, path: Path, timeout: float, who: str):
        self.fd = os.open(path, os.O_RDONLY)
        deadline = now() + timeout
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if now() > deadline:
                    os.close(self.fd)
                    raise Fatal(f"another {who} holds {path} (timed out waiting for it)") \
                        from None
                time.sleep(0.1)


def wipe_dir(path: Path, marker: str, who: str) -> None:
    """Empties DIR: only one that `who` made (it holds `marker`), or an empty one."""
    entries = list(path.iterdir())
    if entries and not (path / marker).exists():
        raise Fatal(f"{path} is not empty and was not made by {who} (no {marker}); "
                    "refusing to wipe it")
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    (path / marker).touch()


def read_env(path: Path) -> dict[str, str]:
    """KEY=value lines (the last value of a key wins); empty without the file."""
    out: dict[str, str] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key] = value
    return out


def write_env(path: Path, lines: list[str]) -> None:
    """Writes KEY=value lines atomically, mode 600."""
    tmp = path.with_name(f"{path.name}.tmp.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    os.chmod(tmp, 0o600)
    os.replace(tmp, path)


def free_ports(count: int) -> list[int]:
    """`count` distinct free loopback ports (held together while picked)."""
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def tcp_open(port: int | str, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def random_password(length: int = 32) -> str:
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(length))


def run_main(console: Console, body) -> int:
    """Runs a service's main body: Fatal → `[name] ERROR: …` and exit 1."""
    try:
        return body()
    except Fatal as e:
        console.error(str(e))
        return 1
    except KeyboardInterrupt:
        return 130
