# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""A private PostgreSQL cluster on 127.0.0.1 for tests, benchmarks and the demo, run from
Debian's postgresql package (scripts/bootstrap.sh installs it).

  bash scripts/postgres.sh start [--dir DIR] [--keep] [--host ADDR]
  bash scripts/postgres.sh stop [--dir DIR]
  bash scripts/postgres.sh status [--dir DIR]

start    Runs initdb into DIR/data (default DIR: $KELT_ROOT/build/postgres) and starts the
         server on a free loopback port with its unix socket in DIR/sock, waits until it
         accepts connections (KELT_PG_START_TIMEOUT, 60 s) and creates database `kelt`.
         Superuser `kelt`, trust authentication from loopback and the socket, except role
         `kelt_password` (random password, scram-sha-256) for tests of password logins.
         A stopped DIR from an earlier run is wiped first unless --keep is given (--keep
         reuses its data, port and password). Prints KELT_PG_CONNINFO=postgresql://... on
         stdout; DIR/env (mode 600, KEY=value lines, no spaces or quotes in values) also
         holds KELT_PG_HOST, KELT_PG_PORT, KELT_PG_USER, KELT_PG_DB, KELT_PG_SOCKET_DIR,
         KELT_PG_PID, KELT_PG_DIR, KELT_PG_PASSWORD_USER and KELT_PG_PASSWORD.
         Use it with: set -a; source DIR/env; set +a
         Already running in DIR: prints the same line and exits 0.
         As root (initdb and postgres refuse root) the cluster runs as the OS user
         $KELT_PG_OS_USER (default `postgres`, which Debian's package creates; another name
         is created as a system user if missing). That user must be able to reach DIR.
         The cluster is for tests: fsync is off. The server's binaries: $KELT_PG_BIN, else
         the newest /usr/lib/postgresql/*/bin.
stop     SIGINT (fast shutdown), then SIGQUIT (immediate), then SIGKILL, waiting
         KELT_PG_STOP_TIMEOUT (30 s) after each. Fine when not running.
--host ADDR  the server also listens on ADDR (an IPv4 address of this machine) and the
         conninfo, KELT_PG_HOST and the env file name ADDR instead of 127.0.0.1 (loopback
         stays open for the scripts' own psql). From ADDR itself the superuser logs in
         without a password, as on loopback; from the other addresses of ADDR's subnet only
         role `kelt_password` with its password (scram-sha-256). The network fault tests
         (tests/faults/test_network_sinks.py) put it on a veth address so that kelt in
         another network namespace reaches it through that veth only. --keep with --host
         moves a kept DIR to ADDR; --keep alone keeps the DIR's address.
status   Exit 0 printing the conninfo line when DIR's server accepts connections, else 1.
DIR holds data/ (the cluster), sock/, postgres.log, env and a .kelt-postgres marker.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from .common import (ROOT, CommandLine, Console, DirLock, Fatal, env_seconds, free_ports, is_uint,
                     now, random_password, read_env, resolve_dir, secs_since, wipe_dir,
                     write_env)
from .supervisor import Supervisor, alive, cmdline

console = Console("postgres")
say = console.say

SUPERUSER = "kelt"
DATABASE = "kelt"
PASSWORD_USER = "kelt_password"
MARKER = ".kelt-postgres"  # a DIR holding this file (or an empty one) may be wiped


def find_bin() -> Path:
    """The newest installed PostgreSQL (Debian: /usr/lib/postgresql/<major>/bin), or
    $KELT_PG_BIN."""
    if os.environ.get("KELT_PG_BIN"):
        return Path(os.environ["KELT_PG_BIN"])
    best, best_version = None, -1
    for d in Path("/usr/lib/postgresql").glob("*/bin"):
        v = d.parent.name
        if (d / "initdb").is_file() and is_uint(v) and int(v) > best_version:
            best, best_version = d, int(v)
    if best is not None:
        return best
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else Path("/nonexistent")


class Cluster:
    def __init__(self, directory: Path):
        self.dir = directory
        self.data = directory / "data"
        self.sock = directory / "sock"
        self.log = directory / "postgres.log"
        self.envfile = directory / "env"
        self.bin = find_bin()
        self.start_timeout = env_seconds("KELT_PG_START_TIMEOUT", 60)
        self.stop_timeout = env_seconds("KELT_PG_STOP_TIMEOUT", 30)
        self.os_user = os.environ.get("KELT_PG_OS_USER", "postgres")
        self.as_root = os.geteuid() == 0
        self.supervisor = Supervisor(console, self.log, log_tail_lines=30)
        self.pid = 0
        self.host = ""  # --host: a further address to listen on ("" keeps DIR's)

    def need_tools(self) -> None:
        for tool in ("initdb", "postgres", "psql", "pg_isready"):
            if not os.access(self.bin / tool, os.X_OK):
                raise Fatal(f"no PostgreSQL server binaries in '{self.bin}' "
                            "(run: bash scripts/bootstrap.sh)")

    def user(self) -> str | None:
        """The OS user the cluster's programs run as (None: this one)."""
        return self.os_user if self.as_root else None

    def run_as_cluster_user(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess:
        extra = {}
        if self.as_root:
            import pwd
            entry = pwd.getpwnam(self.os_user)
            extra = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  cwd="/", stdin=subprocess.DEVNULL, **extra)
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", f"timed out after {timeout}s")

    def prepare_os_user(self) -> None:
        """As root: makes sure the OS user exists and can reach DIR."""
        if not self.as_root:
            return
        import pwd
        try:
            pwd.getpwnam(self.os_user)
        except KeyError:
            say(f"creating system user {self.os_user}")
            subprocess.run(["useradd", "--system", "--no-create-home", "--home-dir",
                            "/nonexistent", "--shell", "/usr/sbin/nologin", self.os_user],
                           capture_output=True)
            try:
                pwd.getpwnam(self.os_user)
            except KeyError:
                raise Fatal(f"cannot create OS user {self.os_user}") from None
        if self.run_as_cluster_user(["test", "-x", str(self.dir)], 10).returncode != 0:
            raise Fatal(f"OS user {self.os_user} cannot enter {self.dir} (a parent directory "
                        "is not searchable); use another --dir")

    def chown(self, *paths: Path) -> None:
        if self.as_root:
            for p in paths:
                shutil.chown(p, user=self.os_user, group=self.os_user_group())

    def os_user_group(self) -> int:
        import pwd
        return pwd.getpwnam(self.os_user).pw_gid

    # ---- what DIR holds -----------------------------------------------------------------
    def running_pid(self) -> int | None:
        """The postmaster's pid when DIR's cluster runs: postmaster.pid's first line,
        checked against the process's command line (a stale file after a crash or reboot
        can name an unrelated process)."""
        try:
            first = (self.data / "postmaster.pid").read_text().splitlines()[0].strip()
        except (OSError, IndexError):
            return None
        if not is_uint(first) or not alive(int(first)):
            return None
        argv = cmdline(int(first))
        ok = any("postgres" in a for a in argv) and any(
            a == "-D" and argv[i + 1:i + 2] == [str(self.data)] for i, a in enumerate(argv))
        return int(first) if ok else None

    def port(self) -> str:
        try:
            text = (self.data / "postgresql.conf").read_text()
        except OSError:
            return ""
        ports = re.findall(r"^port = ([0-9]*)", text, re.M)
        return ports[-1] if ports else ""

    def address(self) -> str:
        """The address clients use: --host's, else the one DIR's settings name (the last
        of listen_addresses), else 127.0.0.1."""
        if self.host:
            return self.host
        try:
            text = (self.data / "postgresql.conf").read_text()
        except OSError:
            return "127.0.0.1"
        found = re.findall(r"^listen_addresses = '([^']*)'", text, re.M)
        return found[-1].split(",")[-1] if found else "127.0.0.1"

    def conninfo(self) -> str:
        return f"postgresql://{SUPERUSER}@{self.address()}:{self.port()}/{DATABASE}"

    def print_conninfo(self) -> None:
        print(f"KELT_PG_CONNINFO={self.conninfo()}", flush=True)

    def accepting(self, port: str) -> bool:
        try:
            p = subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p",
                                port, "-U", SUPERUSER, "-d", "postgres"],
                               capture_output=True, timeout=10, stdin=subprocess.DEVNULL,
                               env={**os.environ, "PGCONNECT_TIMEOUT": "5"})
        except subprocess.TimeoutExpired:
            return False
        return p.returncode == 0

    def psql(self, args: list[str], stdin: str = "") -> subprocess.CompletedProcess:
        """psql as the superuser over TCP, bounded, quiet, stopping on errors."""
        argv = [str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                "-p", self.port(), "-U", SUPERUSER, *args]
        try:
            return subprocess.run(argv, input=stdin, capture_output=True, text=True,
                                  timeout=60, env={**os.environ, "PGCONNECT_TIMEOUT": "10"})
        except subprocess.TimeoutExpired:
            return subprocess.CompletedProcess(argv, 124, "", "psql timed out after 60 s")

    # ---- making DIR ---------------------------------------------------------------------
    def init_cluster(self) -> None:
        self.data.mkdir(parents=True, exist_ok=True)
        self.sock.mkdir(parents=True, exist_ok=True)
        self.log.write_text("")
        self.chown(self.data, self.sock, self.log)
        self.data.chmod(0o700)
        p = self.run_as_cluster_user(
            [str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
             "--encoding=UTF8", "--locale=C.UTF-8", "--no-sync"], 120)
        if p.returncode != 0:
            sys.stderr.write(p.stdout + p.stderr)
            raise Fatal("initdb failed")
        self.write_hba()

    def write_hba(self) -> None:
        """Trust on loopback, the socket and --host's own address; the password role
        logs in with SCRAM everywhere, and from the rest of --host's subnet it alone may
        (the first matching line wins, so its lines come first)."""
        address = self.address()
        extra_password = extra_trust = ""
        if address != "127.0.0.1":
            extra_password = (f"host    all       {PASSWORD_USER}  {subnet_of(address):<14} "
                              "scram-sha-256\n")
            extra_trust = f"host    all       all             {address + '/32':<14} trust\n"
        hba = self.data / "pg_hba.conf"
        hba.write_text(f"""\
# Written by scripts/postgres.sh: a test cluster reachable from this machine only.
# TYPE  DATABASE  USER            ADDRESS        METHOD
local   all       {PASSWORD_USER}                 scram-sha-256
host    all       {PASSWORD_USER}  127.0.0.1/32   scram-sha-256
{extra_password}local   all       all                            trust
host    all       all             127.0.0.1/32   trust
{extra_trust}""")
        self.chown(hba)

    def set_port(self, port: int) -> None:
        """(Re)writes kelt's settings at the end of postgresql.conf."""
        conf = self.data / "postgresql.conf"
        text = conf.read_text()
        at = text.find("\n# kelt settings")
        if text.startswith("# kelt settings"):
            at = 0
        if at >= 0:
            text = text[:at + 1] if at > 0 else ""
        # A unix socket path longer than 107 bytes cannot be bound: then TCP only.
        sockdir = str(self.sock) if len(str(self.sock)) + 20 < 107 else ""
        text += f"""\
# kelt settings (scripts/postgres.sh)
port = {port}
listen_addresses = '{",".join(dict.fromkeys(["127.0.0.1", self.address()]))}'
unix_socket_directories = '{sockdir}'
fsync = off
full_page_writes = off
max_connections = 50
shared_buffers = 64MB
log_min_messages = warning
"""
        conf.write_text(text)

    # ---- running ------------------------------------------------------------------------
    def launch_and_wait(self) -> str:
        """Starts the postmaster and waits until it accepts connections: "ready" (pid in
        self.pid), "port" (the port was taken meanwhile: retry) or "failed"."""
        t0 = now()
        port = self.port()
        sup = self.supervisor
        pid = sup.launch([str(self.bin / "postgres"), "-D", str(self.data)], cwd="/",
                         append_log=True, user=self.user())
        outcome = sup.wait_ready(lambda: self.accepting(port), self.start_timeout)
        settled = sup.settle_start(outcome, pid, "the server", "accept connections",
                                   self.start_timeout, ("could not bind", "Address already in use"))
        if settled != "ready":
            return settled
        if self.running_pid() != pid:
            say("the server is up but its pid was not found")
            return "failed"
        version = subprocess.run([str(self.bin / "postgres"), "--version"], capture_output=True,
                                 text=True).stdout.split()
        say(f"server pid {pid} (PostgreSQL {version[2] if len(version) > 2 else '?'}) on "
            f"{self.address()}:{port} up in {secs_since(t0)}s (log: {self.log})")
        self.pid = pid
        return "ready"

    def provision(self, password: str) -> None:
        """Creates database kelt and the password role (idempotent). The password goes
        through stdin."""
        p = self.psql(["-d", "postgres", "-tA", "-c",
                       f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'"])
        if p.stdout.strip() != "1":
            p = self.psql(["-d", "postgres", "-c", f"CREATE DATABASE {DATABASE}"])
            if p.returncode != 0:
                sys.stderr.write(p.stderr)
                raise Fatal(f"could not create database {DATABASE}")
        script = f"""\
SET password_encryption = 'scram-sha-256';
SELECT format('CREATE ROLE %I LOGIN', '{PASSWORD_USER}')
  WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{PASSWORD_USER}') \\gexec
ALTER ROLE {PASSWORD_USER} PASSWORD :'pw';
GRANT ALL ON DATABASE {DATABASE} TO {PASSWORD_USER};
\\connect {DATABASE}
GRANT USAGE, CREATE ON SCHEMA public TO {PASSWORD_USER};
"""
        p = self.psql(["-d", "postgres", "-v", f"pw={password}"], stdin=script)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            raise Fatal(f"could not create role {PASSWORD_USER}")

    def write_env(self, password: str) -> None:
        write_env(self.envfile, [
            f"KELT_PG_CONNINFO={self.conninfo()}", f"KELT_PG_HOST={self.address()}",
            f"KELT_PG_PORT={self.port()}", f"KELT_PG_USER={SUPERUSER}", f"KELT_PG_DB={DATABASE}",
            f"KELT_PG_SOCKET_DIR={self.sock}", f"KELT_PG_PID={self.pid}",
            f"KELT_PG_DIR={self.dir}", f"KELT_PG_PASSWORD_USER={PASSWORD_USER}",
            f"KELT_PG_PASSWORD={password}"])

    # ---- commands -----------------------------------------------------------------------
    def lock(self) -> DirLock:
        return DirLock(self.dir, self.start_timeout + 3 * self.stop_timeout + 30,
                       "postgres.sh")

    def start(self, keep: bool) -> int:
        self.need_tools()
        _lock = self.lock()
        self.prepare_os_user()
        t0 = now()
        pid = self.running_pid()
        if pid is not None:
            say(f"already running in {self.dir} (pid {pid})")
            self.print_conninfo()
            return 0
        password = ""
        if keep and (self.data / "PG_VERSION").is_file() and self.port():
            say(f"keeping {self.dir} (same port and data)")
            password = read_env(self.envfile).get("KELT_PG_PASSWORD", "")
            if self.host:
                self.set_port(int(self.port()))
                self.write_hba()
            rc = self.launch_and_wait()
            if rc != "ready":
                if rc == "port":
                    self.supervisor.show_log_tail()
                raise Fatal("start failed")
        else:
            wipe_dir(self.dir, MARKER, "postgres.sh")
            self.init_cluster()
            rc = "failed"
            for attempt in (1, 2, 3):
                self.set_port(free_ports(1)[0])
                rc = self.launch_and_wait()
                if rc != "port":
                    break
                say(f"the port was taken meanwhile (attempt {attempt}); trying another")
            if rc == "port":
                self.supervisor.show_log_tail()
                raise Fatal("start failed: ports kept being taken")
            if rc != "ready":
                raise Fatal("start failed")
        password = password or random_password()
        self.provision(password)
        self.write_env(password)
        say(f"start took {secs_since(t0)}s in total")
        self.print_conninfo()
        return 0

    def stop(self) -> int:
        _lock = self.lock()
        pid = self.running_pid()
        if pid is None:
            say(f"not running ({self.dir})")
            return 0
        t = self.stop_timeout
        steps = [(signal.SIGINT, t, f"pid {pid} still running after a fast shutdown (SIGINT)"),
                 (signal.SIGQUIT, t,
                  f"pid {pid} still running after an immediate shutdown (SIGQUIT); SIGKILL"),
                 (signal.SIGKILL, t, "")]
        if self.supervisor.stop(pid, steps) is None:
            raise Fatal(f"pid {pid} survives SIGKILL")
        say(f"stopped (pid {pid})")
        return 0

    def status(self) -> int:
        if self.running_pid() is not None and self.accepting(self.port()):
            self.print_conninfo()
            return 0
        say(f"not running ({self.dir})")
        return 1


COMMAND_LINE = CommandLine(__doc__, ("start", "stop", "status"), ROOT / "build/postgres")
COMMAND_LINE.flag("--keep")
COMMAND_LINE.option("--host", "an IPv4 address of this machine", "",
                    lambda v: re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", v) is not None)


def subnet_of(address: str) -> str:
    """ADDRESS's subnet as an interface of this machine has it (`ip -4 -o addr`), e.g.
    10.213.4.0/30; ADDRESS/32 when no interface has it."""
    import ipaddress
    try:
        out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True,
                             timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    for m in re.finditer(r"\binet ([0-9.]+/[0-9]+)", out):
        iface = ipaddress.ip_interface(m.group(1))
        if str(iface.ip) == address:
            return str(iface.network)
    return f"{address}/32"


def main(args: list[str]) -> int:
    command, options = COMMAND_LINE.parse(args)
    directory = options.dir
    env_seconds("KELT_PG_START_TIMEOUT", 60)
    env_seconds("KELT_PG_STOP_TIMEOUT", 30)
    path = resolve_dir(directory, command, console)
    if path is None:
        say(f"not running ({directory} does not exist)")
        return 0 if command == "stop" else 1
    cluster = Cluster(path)
    if options.host:
        if command != "start":
            raise Fatal("--host applies to start only")
        cluster.host = options.host
    if command == "start":
        return cluster.start(options.keep)
    if command == "stop":
        return cluster.stop()
    return cluster.status()
