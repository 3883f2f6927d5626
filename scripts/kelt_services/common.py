# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""What every service shares: paths, messages, the command line, the service directory (lock,
marker, env file), ports and passwords."""
from __future__ import annotations

import argparse
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


class _HelpWanted(Exception):
    """-h/--help met among the options."""


class _Help(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        raise _HelpWanted


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise Fatal(f"{message} (see --help)")


class CommandLine:
    """A service's command line (argparse): COMMAND first, then options (`--dir DIR`
    always; `--opt V` and `--opt=V` alike) and, with `positional`, the command's arguments,
    in any order. The module docstring is the usage.

    No arguments or an unknown COMMAND: the usage on stderr, exit 2. -h/--help (once what
    precedes it is valid) or COMMAND -h/--help/help: the usage on stdout, exit 0. Both
    raise SystemExit, as argparse does. An option without a valid value or an unknown one
    is a Fatal (exit 1): "--dir needs a directory", "unknown option X (see --help)", or
    "unknown argument X (see --help)" when the commands take no arguments."""

    def __init__(self, doc: str, commands: tuple[str, ...], directory: Path,
                 positional: bool = False):
        self.usage = doc.strip("\n") + "\n"
        self.commands = commands
        self.positional = positional
        self.parser = _Parser(add_help=False, allow_abbrev=False, exit_on_error=False)
        self.parser.add_argument("-h", "--help", action=_Help)
        self.defaults: dict[str, object] = {}
        self.needs: dict[str, str] = {}
        self.option("--dir", "a directory", str(directory))

    def flag(self, *names: str) -> None:
        action = self.parser.add_argument(*names, action="store_true")
        self.defaults[action.dest] = False

    def option(self, name: str, needs: str, default: str = "", valid=bool) -> None:
        """`name VALUE` or `name=VALUE`; Fatal `name needs <needs>` unless valid(VALUE)."""
        def value(text: str) -> str:
            if not valid(text):
                raise ValueError(text)
            return text
        action = self.parser.add_argument(name, type=value)
        self.defaults[action.dest] = default
        self.needs[name] = f"{name} needs {needs}"

    def parse(self, args: list[str]) -> tuple[str, argparse.Namespace]:
        """(COMMAND, options); the command's arguments are in options.args."""
        if not args:
            self.exit(2)
        command, rest = args[0], args[1:]
        try:
            options = self.scan(rest)
        except _HelpWanted:
            # As before, what precedes the first -h/--help must be valid.
            first = next(i for i, a in enumerate(rest) if a in ("-h", "--help"))
            self.scan(rest[:first])
            self.exit(0)
        if command in ("-h", "--help", "help"):
            self.exit(0)
        if command not in self.commands:
            self.exit(2)
        return command, options

    def scan(self, args: list[str]) -> argparse.Namespace:
        try:
            options, rest = self.parser.parse_known_args(
                args, argparse.Namespace(**self.defaults))
        except argparse.ArgumentError as e:
            if e.argument_name in self.needs:
                raise Fatal(self.needs[e.argument_name]) from None
            # A flag given a value (--keep=1, -hx): an unknown option, as it always was.
            names = tuple(e.argument_name.split("/")) if e.argument_name else ()
            written = [a for a in args if names and a.startswith(names) and a not in names]
            raise (self.unknown(written[0]) if written else Fatal(f"{e} (see --help)")) \
                from None
        unknown = [a for a in rest if not self.positional or a.startswith("-")]
        if unknown:
            raise self.unknown(unknown[0])
        options.args = rest
        return options

    def unknown(self, arg: str) -> Fatal:
        return Fatal(f"unknown {'option' if self.positional else 'argument'} {arg} (see --help)")

    def exit(self, code: int) -> None:
        (sys.stdout if code == 0 else sys.stderr).write(self.usage)
        raise SystemExit(code)


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
    interleave. Held until the object goes away (or the process ends), so a command that
    calls another in the same process (registry.sh aot: start, then stop) does not wait
    for itself. The descriptor is not inherited by children (PEP 446)."""

    def __init__(self, path: Path, timeout: float, who: str):
        self.fd = -1
        fd = os.open(path, os.O_RDONLY)
        deadline = now() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self.fd = fd
                return
            except BlockingIOError:
                if now() > deadline:
                    os.close(fd)
                    raise Fatal(f"another {who} holds {path} (timed out waiting for it)") \
                        from None
                time.sleep(0.1)

    def __del__(self):
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


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


def tcp_open(port: int | str, timeout: float = 2.0, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
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
