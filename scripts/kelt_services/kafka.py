# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""A single-node Apache Kafka broker (KRaft, combined broker+controller) on 127.0.0.1 for
tests, benchmarks and the demo, run from the jars that scripts/bootstrap.sh provisions.

  bash scripts/kafka.sh start [--dir DIR] [--secure] [--keep] [--kafka-version V]
  bash scripts/kafka.sh stop [--dir DIR]
  bash scripts/kafka.sh status [--dir DIR]
  bash scripts/kafka.sh create-topic NAME PARTITIONS [--dir DIR]
  bash scripts/kafka.sh describe-topic NAME [--dir DIR]
  bash scripts/kafka.sh start --brokers 3 [--dir DIR] [--keep]
  bash scripts/kafka.sh start --host ADDR [--dir DIR]
  bash scripts/kafka.sh start-node|stop-node I --dir DIR     (a --brokers 3 DIR)

start    Formats DIR (default $KELT_ROOT/build/kafka) and starts the broker on free ports,
         then waits until it serves on its PLAINTEXT listener (KELT_KAFKA_START_TIMEOUT,
         60 s). A stopped DIR from an earlier run is wiped first unless --keep is given
         (--keep reuses its data, ports, users and certificates). Prints
         KELT_KAFKA_BOOTSTRAP=... (the PLAINTEXT listener) on stdout; DIR/env (mode 600,
         KEY=value lines) also holds KELT_KAFKA_PID, KELT_KAFKA_DIR, KELT_KAFKA_BROKER_VERSION.
         Use it with: set -a; source DIR/env; set +a
         Already running in DIR: prints the same lines and exits 0.
--secure (alias --scram) adds, next to PLAINTEXT (whose anonymous principal stays a super
         user, for the topic commands and test data), three listeners that authenticate:
           SASL_PLAINTEXT  SCRAM-SHA-256/512       KELT_KAFKA_SASL_BOOTSTRAP
           SASL_SSL        SCRAM-SHA-256/512, TLS  KELT_KAFKA_SASL_SSL_BOOTSTRAP
           SSL             mutual TLS (client certificate required; CN=kelt is User:kelt)
                                                   KELT_KAFKA_SSL_BOOTSTRAP
         and an authorizer (StandardAuthorizer). SCRAM user "kelt" (random password) may
         use every topic, group and transactional id; user "kelt-denied" (random password)
         has no ACLs at all. openssl makes DIR/tls/: a test CA, the broker's certificate
         (localhost, 127.0.0.1), a client certificate (CN=kelt) and an unrelated CA that
         signed nothing (for "untrusted" tests). DIR/env then also holds
         KELT_KAFKA_SCRAM_USER/_PASSWORD, KELT_KAFKA_DENIED_USER/_PASSWORD,
         KELT_KAFKA_CA_PEM, KELT_KAFKA_CLIENT_CERT_PEM, KELT_KAFKA_CLIENT_KEY_PEM and
         KELT_KAFKA_OTHER_CA_PEM (paths); stdout has the bootstrap lines (no password).
         The ACLs are made, and every listener is logged in to with each mechanism, with
         the kelt binary (`kelt acls create`, `kelt cluster describe`) before start returns.
--kafka-version V  runs Kafka V (default $KELT_KAFKA_VERSION, the only one bootstrap.sh
         provisions) from $KELT_CACHE/kafka/V/libs (KELT_KAFKA_VERSION=V bash
         scripts/bootstrap.sh fetches it). The version is kept in DIR/kafka.version (--keep
         reuses it) and in DIR/env as KELT_KAFKA_BROKER_VERSION.
stop     SIGTERM, then SIGKILL after KELT_KAFKA_STOP_TIMEOUT (30 s). Fine when not running.
status   Exit 0 printing the bootstrap lines when the broker of DIR runs, else exit 1.
create-topic  Creates the topic (replication factor 1) unless it exists with that many
         partitions; fails (exit 3) when it exists with another count. describe-topic
         prints "NAME PARTITIONS". Both run `kelt topics` over PLAINTEXT, bounded by
         KELT_KAFKA_ADMIN_TIMEOUT (30 s); create-topic returns once every partition has a
         leader. The kelt binary: $KELT_CLI, else build/dev/cli/kelt, else
         build/release/cli/kelt, else `kelt` on PATH.
--host ADDR  the PLAINTEXT listener listens on and advertises ADDR (an IPv4 address of
         this machine) instead of 127.0.0.1; the controller stays on loopback. The
         network fault tests (tests/faults/test_network.py) put it on a veth address so
         that a client in another network namespace reaches it through that veth only.
         Single broker, without --secure; --keep reuses the DIR's address.
--brokers 3  a 3-node KRaft cluster (combined broker+controller nodes in DIR/node1..3,
         replication factor 3, min.insync.replicas=2) for the fault tests; see
         kafka_cluster.py. stop, status and create-topic act on every node; start-node
         and stop-node I start (its data kept) or stop node I and rewrite DIR/env.
         --brokers 1 (the default) is the single broker described here.
DIR holds server.properties, kafka.version, data/ (log.dirs), broker.log, broker.pid, env,
and with --secure tls/. JVM class-data-sharing archives in $KELT_CACHE/kafka/cds/ make
later starts faster (KELT_KAFKA_CDS=0 turns them off); KELT_KAFKA_JVM_OPTS adds JVM flags.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from . import kelt_cli, tls
from .common import (CACHE, ROOT, CommandLine, Console, DirLock, Fatal, env_seconds, free_ports,
                     is_uint, now, random_password, read_env, resolve_dir, secs_since, tcp_open,
                     wipe_dir, write_env)
from .supervisor import Supervisor, alive, cmdline, find_processes

console = Console("kafka")
say = console.say

DEFAULT_VERSION = os.environ.get("KELT_KAFKA_VERSION", "4.1.1")
DEFAULT_LIBS = Path(os.environ.get("KELT_KAFKA_LIBS")
                    or CACHE / "kafka" / DEFAULT_VERSION / "libs")
LOG4J = ROOT / "scripts/kafka/log4j2.properties"
SCRAM_USER = "kelt"            # --secure: the user with ACLs for everything
DENIED_USER = "kelt-denied"    # --secure: a user without any ACL
MARKER = ".kelt-kafka"         # a DIR holding this file (or an empty one) may be wiped
READY_LINE = "Kafka Server started"
GRANTED_CLUSTER_OPS = ["DESCRIBE", "IDEMPOTENT_WRITE"]  # the SCRAM user's cluster operations
# Quick-starting JVM for the short-lived tools (StorageTool format).
TOOL_JVM = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
            f"-Dlog4j2.configurationFile={LOG4J}", "-Dkelt.log.target=SYSTEM_ERR",
            "-Dkelt.log.level=warn"]


def libs_of(version: str) -> Path:
    return DEFAULT_LIBS if version == DEFAULT_VERSION else CACHE / "kafka" / version / "libs"


class Cds:
    """Class-data sharing: a JVM start loads thousands of classes from the jars; a dynamic
    CDS archive of them (made at the exit of the first run, kept in $KELT_CACHE/kafka/cds/)
    makes later starts faster: the broker by about 2 s, StorageTool format by about 1 s.
    A stale archive is ignored by the JVM (-Xshare:auto); the key changes with the JDK and
    the jars (one directory per Kafka version)."""

    enabled = os.environ.get("KELT_KAFKA_CDS", "1") != "0"
    _dirs: dict[Path, Path] = {}

    @classmethod
    def dir(cls, libs: Path) -> Path:
        if libs not in cls._dirs:
            java = subprocess.run(["java", "-version"], capture_output=True, text=True)
            listing = "\n".join(f"{e.name} {int(e.stat().st_mtime)} {e.stat().st_size}"
                                for e in sorted(libs.iterdir()))
            key = hashlib.sha256((java.stderr + java.stdout + listing).encode()).hexdigest()
            cls._dirs[libs] = CACHE / "kafka" / "cds" / key[:16]
        return cls._dirs[libs]

    @classmethod
    def flags(cls, name: str, dump: Path, libs: Path) -> list[str]:
        """Flags to use archive `name`, or to dump one into `dump` at the JVM's exit."""
        if not cls.enabled:
            return []
        archive = cls.dir(libs) / f"{name}.jsa"
        if archive.is_file() and archive.stat().st_size > 0:
            return [f"-XX:SharedArchiveFile={archive}", "-Xshare:auto", "-Xlog:cds*=off"]
        dump.unlink(missing_ok=True)
        return [f"-XX:ArchiveClassesAtExit={dump}", "-Xlog:cds*=off"]

    @classmethod
    def install(cls, name: str, dump: Path, libs: Path) -> None:
        """Puts a dump made at a JVM's exit into the cache (atomically)."""
        if not dump.is_file():
            return
        try:
            if cls.enabled and dump.stat().st_size > 0:
                target = cls.dir(libs) / f"{name}.jsa"
                if not (target.is_file() and target.stat().st_size > 0):
                    target.parent.mkdir(parents=True, exist_ok=True)
                    tmp = target.with_name(f".tmp.{os.getpid()}.{name}")
                    shutil.copyfile(dump, tmp)
                    tmp.chmod(0o444)
                    os.replace(tmp, target)
        except OSError:
            pass
        dump.unlink(missing_ok=True)


class Broker:
    """The broker of one DIR."""

    def __init__(self, directory: Path, secure: bool):
        self.dir = directory
        self.secure = secure
        self.props = directory / "server.properties"
        self.data = directory / "data"
        self.log = directory / "broker.log"
        self.pidfile = directory / "broker.pid"
        self.envfile = directory / "env"
        self.versionfile = directory / "kafka.version"
        self.tls = directory / "tls"
        self.dump = directory / "broker.jsa"
        self.version = ""
        self.host = "127.0.0.1"  # the PLAINTEXT listener's address (--host)
        self.libs = DEFAULT_LIBS
        self.password = ""
        self.denied_password = ""
        self.pid = 0
        self.supervisor = Supervisor(console, self.log, self.pidfile)
        self.start_timeout = env_seconds("KELT_KAFKA_START_TIMEOUT", 60)
        self.stop_timeout = env_seconds("KELT_KAFKA_STOP_TIMEOUT", 30)
        self.admin_timeout = env_seconds("KELT_KAFKA_ADMIN_TIMEOUT", 30)

    # ---- what DIR holds -----------------------------------------------------------------
    def prop(self, key: str) -> str:
        try:
            lines = self.props.read_text().splitlines()
        except OSError:
            return ""
        values = [line[len(key) + 1:] for line in lines if line.startswith(key + "=")]
        return values[-1] if values else ""

    def port_of(self, listener: str) -> str:
        """The port of listener NAME (PLAINTEXT, CONTROLLER, SASL_PLAINTEXT, SASL_SSL,
        SSL); empty when DIR has no such listener."""
        return self.address_of(listener)[1]

    def address_of(self, listener: str) -> tuple[str, str]:
        """(host, port) of listener NAME; ("", "") when DIR has no such listener."""
        for item in self.prop("listeners").split(","):
            m = re.fullmatch(rf"{listener}://([0-9.]+):([0-9]*)", item)
            if m:
                return m.group(1), m.group(2)
        return "", ""

    def is_secure_dir(self) -> bool:
        return bool(self.port_of("SASL_SSL"))

    def bootstrap(self, listener: str = "PLAINTEXT") -> str:
        host, port = self.address_of(listener)
        return f"{host or '127.0.0.1'}:{port}"

    def dir_version(self) -> str:
        try:
            v = self.versionfile.read_text().strip()
        except OSError:
            v = ""
        return v or DEFAULT_VERSION

    def is_our_broker(self, pid: int) -> bool:
        argv = cmdline(pid)
        return alive(pid) and any(a == "kafka.Kafka" and argv[i + 1:i + 2] == [str(self.props)]
                                  for i, a in enumerate(argv))

    def running_pid(self) -> int | None:
        """The pid of DIR's broker when it runs: by the pid file or, when that is missing
        or stale, by its command line (so that a lost pid file cannot make start wipe the
        data of a live broker)."""
        try:
            text = self.pidfile.read_text().strip()
        except OSError:
            text = ""
        if is_uint(text) and self.is_our_broker(int(text)):
            return int(text)
        props = str(self.props)
        pids = find_processes(lambda argv: len(argv) >= 2 and argv[-2:] == ["kafka.Kafka", props])
        for pid in pids:
            if self.is_our_broker(pid):
                self.pidfile.write_text(f"{pid}\n")
                return pid
        return None

    def bootstrap_lines(self) -> list[str]:
        """The lines start and status print (never a password)."""
        lines = [f"KELT_KAFKA_BOOTSTRAP={self.bootstrap()}"]
        for listener, var in (("SASL_PLAINTEXT", "SASL"), ("SASL_SSL", "SASL_SSL"),
                              ("SSL", "SSL")):
            port = self.port_of(listener)
            if port:
                lines.append(f"KELT_KAFKA_{var}_BOOTSTRAP=127.0.0.1:{port}")
        return lines

    def secure_env(self) -> list[str]:
        return [f"KELT_KAFKA_SCRAM_USER={SCRAM_USER}",
                f"KELT_KAFKA_SCRAM_PASSWORD={self.password}",
                f"KELT_KAFKA_DENIED_USER={DENIED_USER}",
                f"KELT_KAFKA_DENIED_PASSWORD={self.denied_password}",
                f"KELT_KAFKA_CA_PEM={self.tls}/ca.pem",
                f"KELT_KAFKA_CLIENT_CERT_PEM={self.tls}/client.pem",
                f"KELT_KAFKA_CLIENT_KEY_PEM={self.tls}/client.key",
                f"KELT_KAFKA_OTHER_CA_PEM={self.tls}/other-ca.pem"]

    def write_env(self, pid: int) -> None:
        lines = [f"KELT_KAFKA_BOOTSTRAP={self.bootstrap()}", f"KELT_KAFKA_PID={pid}",
                 f"KELT_KAFKA_DIR={self.dir}", f"KELT_KAFKA_BROKER_VERSION={self.version}"]
        if self.is_secure_dir():
            lines += self.bootstrap_lines()[1:] + self.secure_env()
        write_env(self.envfile, lines)

    def use_version(self, version: str) -> None:
        """The broker and StorageTool run from Kafka VERSION's jars."""
        self.version = version
        self.libs = libs_of(version)
        if (self.libs / f"kafka_2.13-{version}.jar").is_file():
            return
        if version == DEFAULT_VERSION:
            raise Fatal(f"no Kafka {version} jars in {self.libs} (run: bash scripts/bootstrap.sh)")
        raise Fatal(f"no Kafka {version} jars in {self.libs} (bootstrap.sh provides "
                    f"{DEFAULT_VERSION}; for {version}: KELT_KAFKA_VERSION={version} bash "
                    "scripts/bootstrap.sh)")

    # ---- making DIR ---------------------------------------------------------------------
    def write_props(self, plain: int, ctrl: int, sasl: int, sasl_ssl: int, ssl: int) -> None:
        listeners = f"PLAINTEXT://{self.host}:{plain},CONTROLLER://127.0.0.1:{ctrl}"
        protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
        if self.secure:
            listeners += (f",SASL_PLAINTEXT://127.0.0.1:{sasl},SASL_SSL://127.0.0.1:{sasl_ssl}"
                          f",SSL://127.0.0.1:{ssl}")
            protocols += ",SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL"
        text = f"""\
# Written by scripts/kafka.sh: single-node KRaft broker+controller on loopback, for tests.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:{ctrl}
listeners={listeners}
advertised.listeners={listeners}
listener.security.protocol.map={protocols}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs={self.data}
num.partitions=1
default.replication.factor=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
"""
        # The share-group coordinator (KIP-932) is new in 4.0; 3.x would warn about it.
        if int(self.version.split(".")[0]) >= 4:
            text += """\
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# KIP-848 groups (group_protocol consumer): the broker owns their session timeout (45 s
# by default, and at least 45 s). Tests kill members and wait for their sessions to end:
# 10 s here, heartbeats every second.
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=10000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=1000
"""
        if self.secure:
            # ACLs decide; the anonymous principal of the PLAINTEXT and CONTROLLER listeners
            # (the broker itself, the topic commands, tests that make topics and test data)
            # may do anything. SCRAM users are made at format time, their ACLs once the
            # broker serves. TLS: PEM key and trust stores (no keytool); a client
            # certificate is required on the SSL listener only, and its subject CN=NAME
            # becomes the principal User:NAME.
            mechanisms = "SCRAM-SHA-256,SCRAM-SHA-512"
            jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            text += "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
            text += "super.users=User:ANONYMOUS\n"
            text += f"sasl.enabled.mechanisms={mechanisms}\n"
            for listener in ("sasl_plaintext", "sasl_ssl"):
                text += f"listener.name.{listener}.sasl.enabled.mechanisms={mechanisms}\n"
                for m in ("scram-sha-256", "scram-sha-512"):
                    text += f"listener.name.{listener}.{m}.sasl.jaas.config={jaas}\n"
            text += f"""\
ssl.keystore.type=PEM
ssl.keystore.location={self.tls}/broker-keystore.pem
ssl.truststore.type=PEM
ssl.truststore.location={self.tls}/ca.pem
listener.name.ssl.ssl.client.auth=required
ssl.principal.mapping.rules=RULE:^CN=([^,]*).*$/$1/,DEFAULT
"""
        self.props.write_text(text)

    def format_storage(self, cluster_id: str) -> None:
        """StorageTool format --standalone (a single-voter dynamic quorum, KIP-853: 3.9
        and later). With --secure it also makes the SCRAM users (SHA-256 and SHA-512
        credentials each); their arguments go through a mode-600 Java @argfile so that the
        passwords never show on a command line."""
        argfile = self.dir / ".format-args"
        args = ["kafka.tools.StorageTool", "format", "--standalone", "-t", cluster_id,
                "-c", str(self.props)]
        if self.secure:
            for m in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                args += ["--add-scram", f"{m}=[name={SCRAM_USER},password={self.password}]",
                         "--add-scram", f"{m}=[name={DENIED_USER},password={self.denied_password}]"]
        fd = os.open(argfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write("".join(a + "\n" for a in args))
        dump = self.dir / ".format.jsa"
        try:
            p = subprocess.run(["java", *TOOL_JVM, *Cds.flags("format", dump, self.libs),
                                "-cp", f"{self.libs}/*", f"@{argfile}"],
                               capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess([], 124, "", "timed out after 120 s")
        finally:
            argfile.unlink(missing_ok=True)
        if p.returncode != 0:
            dump.unlink(missing_ok=True)
            sys.stderr.write(p.stdout + p.stderr)
            raise Fatal(f"StorageTool format (Kafka {self.version}) failed")
        Cds.install("format", dump, self.libs)

    # ---- running ------------------------------------------------------------------------
    def launch_and_wait(self) -> str:
        """Starts the broker and waits until it serves. Returns "ready" (its pid in
        self.pid), "port" (it died of a port taken meanwhile: retry) or "failed"."""
        t0 = now()
        extra = os.environ.get("KELT_KAFKA_JVM_OPTS", "").split()
        argv = ["java", "-Xms256m", "-Xmx512m", "-XX:+ExitOnOutOfMemoryError",
                "-Djava.awt.headless=true", f"-XX:ErrorFile={self.dir}/hs_err_%p.log",
                f"-Dlog4j2.configurationFile={LOG4J}",
                *Cds.flags("broker", self.dump, self.libs),  # dumped when `stop` ends it
                *extra, "-cp", f"{self.libs}/*", "kafka.Kafka", str(self.props)]
        sup = self.supervisor
        pid = sup.launch(argv)
        # The broker opens its client listeners once it is unfenced and serving, just
        # before it logs READY_LINE.
        host, plain = self.address_of("PLAINTEXT")
        outcome = sup.wait_ready(lambda: sup.log_contains(READY_LINE) and tcp_open(plain,
                                                                                   host=host),
                                 self.start_timeout)
        settled = sup.settle_start(outcome, pid, "the broker", "serve", self.start_timeout,
                                   ("BindException", "Address already in use"))
        if settled != "ready":
            return settled
        if self.is_secure_dir():
            try:
                self.secure_check(t0)
            except Fatal as e:
                say(str(e))
                sup.show_log_tail()
                sup.kill(pid)
                return "failed"
        say(f"broker pid {pid} (Kafka {self.version}) up in {secs_since(t0)}s (log: {self.log})")
        self.pid = pid
        return "ready"

    def secure_check(self, t0: float) -> None:
        """Grants user kelt its ACLs (over PLAINTEXT), then logs in to every secure
        listener (SCRAM-SHA-256 and -512 on SASL_PLAINTEXT and SASL_SSL, the client
        certificate on SSL) until kelt has its cluster operations there, and once as
        kelt-denied (which must have none): ACLs take effect asynchronously."""
        kelt = kelt_cli.find()
        deadline = t0 + self.start_timeout
        plain = ["--bootstrap", self.bootstrap(), "--timeout", "20"]
        principal = f"User:{SCRAM_USER}"
        for acl in (["--operation", "all", "--topic", "*", "--group", "*",
                     "--transactional-id", "*"],
                    ["--operation", "describe", "--operation", "idempotent-write",
                     "--cluster"]):
            p = kelt_cli.run(kelt, ["acls", "create", "--principal", principal, *acl, *plain],
                             20)
            if p.returncode != 0:
                raise Fatal(f"kelt acls create failed (exit {p.returncode}): "
                            f"{p.stderr.strip()}")
        ca = str(self.tls / "ca.pem")
        logins = []  # (what, bootstrap, properties, password, wanted operations)
        for listener in ("SASL_PLAINTEXT", "SASL_SSL"):
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                props = {"security.protocol": listener, "sasl.mechanism": mechanism,
                         "sasl.username": SCRAM_USER}
                if listener == "SASL_SSL":
                    props["ssl.ca.location"] = ca
                logins.append((f"{listener} {mechanism} as {SCRAM_USER}", listener, props,
                               self.password, GRANTED_CLUSTER_OPS))
        logins.append(("SSL (client certificate)", "SSL",
                       {"security.protocol": "SSL", "ssl.ca.location": ca,
                        "ssl.certificate.location": str(self.tls / "client.pem"),
                        "ssl.key.location": str(self.tls / "client.key")}, None,
                       GRANTED_CLUSTER_OPS))
        logins.append((f"SASL_SSL SCRAM-SHA-512 as {DENIED_USER}", "SASL_SSL",
                       {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                        "sasl.username": DENIED_USER, "ssl.ca.location": ca},
                       self.denied_password, []))
        results: list[str | Fatal] = [""] * len(logins)

        def check(i: int) -> None:
            what, listener, props, password, wanted = logins[i]
            args = ["cluster", "describe", "--json", "--bootstrap", self.bootstrap(listener)]
            for k, v in props.items():
                args += ["--property", f"{k}={v}"]
            env = {"KELT_PROPERTY_SASL_PASSWORD": password} if password else {}
            last = ""
            while True:
                left = deadline - now()
                p = kelt_cli.run(kelt, args + ["--timeout", f"{max(left, 1):.0f}"],
                                 max(left, 1), env)
                if p.returncode == 0:
                    c = json.loads(p.stdout)
                    ops = c["authorized_operations"]
                    last = (f"{self.bootstrap(listener)} {what}: cluster {c['cluster_id']}, "
                            f"{len(c['brokers'])} broker(s), cluster operations {ops}")
                    if ops == wanted:
                        results[i] = last
                        return
                else:
                    last = f"{self.bootstrap(listener)} {what}: {p.stderr.strip()}"
                if now() > deadline:
                    results[i] = Fatal(f"login check failed: {last}, not {wanted}")
                    return
                threading.Event().wait(0.05)

        threads = [threading.Thread(target=check, args=(i,)) for i in range(len(logins))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for r in results:
            if isinstance(r, Fatal):
                raise r
            say(f"ready: {r}")

    # ---- commands -----------------------------------------------------------------------
    def start(self, keep: bool, version: str) -> int:
        if shutil.which("java") is None:
            raise Fatal("java not found (run: bash scripts/bootstrap.sh)")
        if not (DEFAULT_LIBS / f"kafka_2.13-{DEFAULT_VERSION}.jar").is_file():
            raise Fatal(f"no Kafka {DEFAULT_VERSION} jars in {DEFAULT_LIBS} "
                        "(run: bash scripts/bootstrap.sh)")
        if not LOG4J.is_file():
            raise Fatal(f"missing {LOG4J}")
        if self.secure:
            kelt_cli.find()  # needed for the ACLs: fail before anything is made
            if shutil.which("openssl") is None:
                raise Fatal("openssl not found (--secure makes certificates with it)")
        _lock = DirLock(self.dir, self.start_timeout + self.stop_timeout + 30, "kafka.sh")
        t0 = now()
        pid = self.running_pid()
        if pid is not None:
            if self.secure and not self.is_secure_dir():
                raise Fatal(f"a broker without --secure already runs in {self.dir} (pid {pid}); "
                            "stop it first")
            have = self.dir_version()
            if version and version != have:
                raise Fatal(f"a Kafka {have} broker already runs in {self.dir} (pid {pid}), "
                            f"not {version}; stop it first")
            say(f"already running in {self.dir} (pid {pid}, Kafka {have})")
            print("\n".join(self.bootstrap_lines()), flush=True)
            return 0
        self.pidfile.unlink(missing_ok=True)

        keep_dir = keep and self.props.is_file() and (self.data / "meta.properties").is_file()
        if keep_dir:
            have = self.dir_version()
            if version and version != have:
                raise Fatal(f"--keep: {self.dir} holds Kafka {have} data, not {version} "
                            "(start it without --keep)")
            self.use_version(have)
            # The DIR decides: a --secure one stays secure (its users live in the metadata).
            if self.is_secure_dir():
                self.secure = True
                env = read_env(self.envfile)
                self.password = env.get("KELT_KAFKA_SCRAM_PASSWORD", "")
                self.denied_password = env.get("KELT_KAFKA_DENIED_PASSWORD", "")
                if not self.password or not self.denied_password:
                    raise Fatal(f"--keep: {self.dir} is --secure but {self.envfile} lacks its "
                                "passwords")
                if not tls.present(self.tls):
                    raise Fatal(f"--keep: {self.dir} is --secure but {self.tls} lacks some "
                                f"of: {' '.join(tls.FILES)}")
                kelt_cli.find()
            elif self.port_of("SASL_PLAINTEXT"):
                raise Fatal(f"--keep: {self.dir} is from an older kafka.sh --scram (no TLS "
                            "listeners); start it without --keep")
            elif self.secure:
                raise Fatal(f"--keep: {self.dir} was formatted without --secure (SCRAM users "
                            "are made at format time)")
            say(f"keeping {self.dir} (same ports and data)")
            rc = self.launch_and_wait()
            if rc != "ready":
                if rc == "port":
                    self.supervisor.show_log_tail()
                raise Fatal("start failed")
        else:
            self.use_version(version or DEFAULT_VERSION)
            if self.secure:
                self.password = random_password()
                self.denied_password = random_password()
            rc = "failed"
            for attempt in (1, 2, 3):
                wipe_dir(self.dir, MARKER, "kafka.sh")
                self.versionfile.write_text(self.version + "\n")
                plain, ctrl, sasl, sasl_ssl, ssl = free_ports(5)
                self.write_props(plain, ctrl, sasl, sasl_ssl, ssl)
                if self.secure:
                    tls.make(self.tls)
                self.format_storage(cluster_id())
                rc = self.launch_and_wait()
                if rc != "port":
                    break
                say(f"a port was taken meanwhile (attempt {attempt}); trying new ports")
            if rc == "port":
                self.supervisor.show_log_tail()
                raise Fatal("start failed: ports kept being taken")
            if rc != "ready":
                raise Fatal("start failed")
        self.write_env(self.pid)
        say(f"start took {secs_since(t0)}s in total")
        print("\n".join(self.bootstrap_lines()), flush=True)
        return 0

    def stop(self) -> int:
        _lock = DirLock(self.dir, self.start_timeout + self.stop_timeout + 30, "kafka.sh")
        pid = self.running_pid()
        if pid is None:
            self.pidfile.unlink(missing_ok=True)
            say(f"not running ({self.dir})")
            return 0
        steps = [(signal.SIGTERM, self.stop_timeout,
                  f"pid {pid} still running after {self.stop_timeout}s; SIGKILL"),
                 (signal.SIGKILL, 10, "")]
        ended = self.supervisor.stop(pid, steps)
        if ended is None:
            raise Fatal(f"pid {pid} survives SIGKILL")
        # The broker writes its CDS dump (first run only) as it exits; a killed one, maybe
        # half of one.
        if ended > 0:
            self.dump.unlink(missing_ok=True)
        else:
            Cds.install("broker", self.dump, libs_of(self.dir_version()))
        say(f"stopped (pid {pid})")
        return 0

    def status(self) -> int:
        pid = self.running_pid()
        host, port = self.address_of("PLAINTEXT")
        if pid is not None and tcp_open(port, host=host):
            print("\n".join(self.bootstrap_lines()), flush=True)
            return 0
        say(f"not running ({self.dir})")
        return 1

    def running_bootstrap(self) -> str:
        if self.running_pid() is None:
            raise Fatal(f"no broker runs in {self.dir} (start one: bash scripts/kafka.sh start)")
        return self.bootstrap()

    def describe(self, kelt: str, name: str, bootstrap: str) -> int:
        """The topic's partition count (Fatal when kelt fails)."""
        p = kelt_cli.run(kelt, ["topics", "describe", name, "--json", "--bootstrap", bootstrap,
                                "--timeout", str(self.admin_timeout)], self.admin_timeout)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            raise Fatal(f"kelt topics describe {name} failed (exit {p.returncode})")
        return json.loads(p.stdout)[0]["partition_count"]

    def create_topic(self, name: str, partitions: int) -> int:
        kelt = kelt_cli.find()
        bootstrap = self.running_bootstrap()
        p = kelt_cli.run(kelt, ["topics", "create", name, "--partitions", str(partitions),
                                "--replication-factor", "1", "--if-not-exists",
                                "--bootstrap", bootstrap, "--timeout", str(self.admin_timeout)],
                         self.admin_timeout)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            return p.returncode
        if "already exists" not in p.stdout:
            print(f"created topic {name} with {partitions} partition(s)", file=sys.stderr)
            return 0
        have = self.describe(kelt, name, bootstrap)
        if have != partitions:
            print(f"topic {name} already exists with {have} partition(s), not {partitions}",
                  file=sys.stderr)
            return 3
        print(f"topic {name} already exists with {have} partition(s)", file=sys.stderr)
        return 0

    def describe_topic(self, name: str) -> int:
        kelt = kelt_cli.find()
        bootstrap = self.running_bootstrap()
        print(f"{name} {self.describe(kelt, name, bootstrap)}", flush=True)
        return 0


def cluster_id() -> str:
    """A cluster id in Kafka's Uuid form (22 chars of url-safe base64, not starting with
    '-'), as StorageTool random-uuid makes, without a JVM start."""
    while True:
        cid = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def valid_topic(name: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,249}", name) or name in (".", ".."):
        raise Fatal(f"invalid topic name '{name}' (letters, digits, '.', '_', '-'; at most 249)")


COMMAND_LINE = CommandLine(__doc__, ("start", "stop", "status", "create-topic", "describe-topic",
                                     "start-node", "stop-node"),
                           ROOT / "build/kafka", positional=True)
COMMAND_LINE.flag("--secure", "--scram")
COMMAND_LINE.flag("--keep")
COMMAND_LINE.option("--kafka-version", "a version")
COMMAND_LINE.option("--brokers", "1 or 3", "1", lambda v: v in ("1", "3"))
COMMAND_LINE.option("--host", "an IPv4 address of this machine", "127.0.0.1",
                    lambda v: re.fullmatch(r"[0-9]{1,3}(\.[0-9]{1,3}){3}", v) is not None)


def cluster_main(command: str, options, path: Path | None) -> int:
    """The commands for a cluster DIR (kafka_cluster.py), or for `start --brokers 3`."""
    from .kafka_cluster import Cluster
    if options.secure:
        raise Fatal("--secure is for a single broker (--brokers 1)")
    if options.host != "127.0.0.1":
        raise Fatal("--host is for a single broker (--brokers 1)")
    if path is None:
        raise Fatal(f"no cluster in {options.dir}")
    cluster = Cluster.of(path)
    if command == "start":
        # A cluster DIR stays one (start without --brokers restarts it, as --keep says).
        if cluster is not None and options.brokers != "1" and \
                cluster.count != int(options.brokers):
            raise Fatal(f"{path} holds a cluster of {cluster.count}, not {options.brokers}")
        return (cluster or Cluster(path, int(options.brokers))).start(options.keep,
                                                                       options.kafka_version)
    if cluster is None:
        raise Fatal(f"{path} holds no cluster (start one: kafka.sh start --brokers 3)")
    if command == "stop":
        return cluster.stop()
    if command == "status":
        return cluster.status()
    if command in ("start-node", "stop-node"):
        if len(options.args) != 1:
            raise Fatal(f"usage: kafka.sh {command} NODE --dir DIR")
        if command == "start-node":
            return cluster.start_node(options.args[0])
        return cluster.stop_one(options.args[0])
    if command == "create-topic":
        if len(options.args) != 2 or not is_uint(options.args[1]):
            raise Fatal("usage: kafka.sh create-topic NAME PARTITIONS [--dir DIR]")
        valid_topic(options.args[0])
        return cluster.create_topic(options.args[0], int(options.args[1]))
    raise Fatal(f"{command} is not supported for a cluster DIR")


def main(args: list[str]) -> int:
    command, options = COMMAND_LINE.parse(args)
    directory, secure, keep = options.dir, options.secure, options.keep
    version, positional = options.kafka_version, options.args
    for var, default in (("KELT_KAFKA_START_TIMEOUT", 60), ("KELT_KAFKA_STOP_TIMEOUT", 30),
                         ("KELT_KAFKA_ADMIN_TIMEOUT", 30)):
        env_seconds(var, default)
    if version:
        if command != "start":
            raise Fatal("--kafka-version applies to start only")
        if not re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", version):
            raise Fatal(f"--kafka-version '{version}': expected MAJOR.MINOR.PATCH, e.g. "
                        f"{DEFAULT_VERSION}")
    path = resolve_dir(directory, command, console)
    if options.brokers != "1" or command in ("start-node", "stop-node") or (
            path is not None and (path / "cluster.nodes").is_file()):
        if command == "stop" and path is None:
            say(f"not running ({directory} does not exist)")
            return 0
        return cluster_main(command, options, path)
    if path is None:
        if command in ("stop", "status"):
            say(f"not running ({directory} does not exist)")
            return 0 if command == "stop" else 1
        raise Fatal(f"no broker runs in {directory} (start one: bash scripts/kafka.sh start)")
    broker = Broker(path, secure)
    if options.host != "127.0.0.1":
        if command != "start" or secure:
            raise Fatal("--host applies to start without --secure only")
        broker.host = options.host
    if command == "start":
        if positional:
            raise Fatal("start takes no arguments besides options")
        return broker.start(keep, version)
    if command == "stop":
        if positional:
            raise Fatal("stop takes no arguments besides options")
        return broker.stop()
    if command == "status":
        if positional:
            raise Fatal("status takes no arguments besides options")
        return broker.status()
    if command == "create-topic":
        if len(positional) != 2:
            raise Fatal("usage: kafka.sh create-topic NAME PARTITIONS [--dir DIR]")
        name, parts = positional
        valid_topic(name)
        if not is_uint(parts) or int(parts) == 0:
            raise Fatal(f"PARTITIONS must be a positive integer, not '{parts}'")
        return broker.create_topic(name, int(parts))
    if len(positional) != 1:
        raise Fatal("usage: kafka.sh describe-topic NAME [--dir DIR]")
    valid_topic(positional[0])
    return broker.describe_topic(positional[0])
