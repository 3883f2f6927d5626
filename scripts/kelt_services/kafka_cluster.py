# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""`kafka.sh start --brokers 3`: a 3-node KRaft cluster on 127.0.0.1 for the fault tests
(leader kill, rolling bounce).

Each node is a combined broker+controller (process.roles=broker,controller) in DIR/node<i>/
(server.properties, data/, broker.log, broker.pid), with a static quorum of the three
(controller.quorum.voters). Combined nodes are 3 JVMs instead of 6 on a 2-core machine;
a quorum of 3 keeps a controller leader while any one node is down, which is all the fault
tests take away. Heaps are small (-Xmx384m each). Topics default to replication factor 3
and min.insync.replicas=2, so an acks=all write survives one node down and a second
loss stops writes instead of losing them; the internal topics are the same.

DIR/env lists KELT_KAFKA_BOOTSTRAP (all three PLAINTEXT listeners, comma-separated),
KELT_KAFKA_BROKERS=3, KELT_KAFKA_PID (node 1's, for scripts that read one pid) and, per node
i, KELT_KAFKA_NODE<i>_PID, KELT_KAFKA_NODE<i>_PORT and KELT_KAFKA_NODE<i>_DIR. A test
kills one with kill -9 and brings it back with `kafka.sh start-node I --dir DIR`, which
rewrites DIR/env with the new pid.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from . import kelt_cli
from .common import DirLock, Fatal, free_ports, now, secs_since, tcp_open, wipe_dir
from .common import write_env as write_env_file
from .kafka import LOG4J, MARKER, READY_LINE, TOOL_JVM, Broker, Cds, cluster_id, console

say = console.say
NODES_FILE = "cluster.nodes"   # DIR holds this when it is a cluster (its node count)
HEAP = ["-Xms128m", "-Xmx384m"]


class Node(Broker):
    """One combined broker+controller of the cluster, in DIR/node<id>."""

    def __init__(self, directory: Path, node_id: int):
        super().__init__(directory, secure=False)
        self.node_id = node_id

    def write_node_props(self, plain: int, ctrl: int, voters: str) -> None:
        listeners = f"PLAINTEXT://127.0.0.1:{plain},CONTROLLER://127.0.0.1:{ctrl}"
        self.props.write_text(f"""\
# Written by scripts/kafka.sh --brokers: node {self.node_id} of a KRaft cluster on loopback.
process.roles=broker,controller
node.id={self.node_id}
controller.quorum.voters={voters}
listeners={listeners}
advertised.listeners={listeners}
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs={self.data}
num.partitions=1
default.replication.factor=3
min.insync.replicas=2
offsets.topic.replication.factor=3
transaction.state.log.replication.factor=3
transaction.state.log.min.isr=2
share.coordinator.state.topic.replication.factor=3
share.coordinator.state.topic.min.isr=2
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
# A node killed with -9 is fenced after this long without heartbeats (default 9 s);
# a new partition leader is elected then. Short, for the tests.
broker.session.timeout.ms=4000
broker.heartbeat.interval.ms=500
# Unclean election would lose acknowledged writes: keep it off (the default), say so.
unclean.leader.election.enable=false
group.consumer.min.session.timeout.ms=6000
group.consumer.session.timeout.ms=10000
group.consumer.min.heartbeat.interval.ms=500
group.consumer.heartbeat.interval.ms=1000
""")

    def format_static(self, cid: str) -> None:
        """StorageTool format for a static quorum (controller.quorum.voters: no
        --standalone / --initial-controllers)."""
        dump = self.dir / ".format.jsa"
        try:
            p = subprocess.run(["java", *TOOL_JVM, *Cds.flags("format", dump, self.libs),
                                "-cp", f"{self.libs}/*", "kafka.tools.StorageTool", "format",
                                "-t", cid, "-c", str(self.props)],
                               capture_output=True, text=True, timeout=120,
                               stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            p = subprocess.CompletedProcess([], 124, "", "timed out after 120 s")
        if p.returncode != 0:
            dump.unlink(missing_ok=True)
            raise Fatal(f"StorageTool format of node {self.node_id} failed: "
                        f"{(p.stdout + p.stderr).strip()[-2000:]}")
        Cds.install("format", dump, self.libs)

    def launch(self) -> int:
        extra = os.environ.get("KELT_KAFKA_JVM_OPTS", "").split()
        argv = ["java", *HEAP, "-XX:+UseSerialGC", "-XX:+ExitOnOutOfMemoryError",
                "-Djava.awt.headless=true", f"-XX:ErrorFile={self.dir}/hs_err_%p.log",
                f"-Dlog4j2.configurationFile={LOG4J}",
                *Cds.flags("broker", self.dump, self.libs),
                *extra, "-cp", f"{self.libs}/*", "kafka.Kafka", str(self.props)]
        self.pid = self.supervisor.launch(argv)
        return self.pid

    def ready(self) -> bool:
        return self.supervisor.log_contains(READY_LINE) and tcp_open(self.port_of("PLAINTEXT"))


class Cluster:
    """The nodes of a cluster DIR."""

    def __init__(self, directory: Path, count: int):
        self.dir = directory
        self.count = count
        self.nodes = [Node(directory / f"node{i}", i) for i in range(1, count + 1)]
        self.envfile = directory / "env"
        self.versionfile = directory / "kafka.version"
        self.start_timeout = self.nodes[0].start_timeout
        self.stop_timeout = self.nodes[0].stop_timeout

    @staticmethod
    def of(directory: Path) -> "Cluster | None":
        """The cluster of DIR when DIR is one."""
        try:
            count = int((directory / NODES_FILE).read_text().strip())
        except (OSError, ValueError):
            return None
        return Cluster(directory, count)

    def lock(self) -> DirLock:
        return DirLock(self.dir, self.start_timeout + self.stop_timeout + 30, "kafka.sh")

    def bootstrap(self) -> str:
        return ",".join(n.bootstrap() for n in self.nodes)

    def version(self) -> str:
        return self.nodes[0].dir_version()

    def write_env(self) -> None:
        pids = [n.running_pid() or 0 for n in self.nodes]
        lines = [f"KELT_KAFKA_BOOTSTRAP={self.bootstrap()}", f"KELT_KAFKA_PID={pids[0]}",
                 f"KELT_KAFKA_DIR={self.dir}", f"KELT_KAFKA_BROKER_VERSION={self.version()}",
                 f"KELT_KAFKA_BROKERS={self.count}"]
        for n, pid in zip(self.nodes, pids):
            lines += [f"KELT_KAFKA_NODE{n.node_id}_PID={pid}",
                      f"KELT_KAFKA_NODE{n.node_id}_PORT={n.port_of('PLAINTEXT')}",
                      f"KELT_KAFKA_NODE{n.node_id}_DIR={n.dir}"]
        write_env_file(self.envfile, lines)

    def wait_all(self, nodes: list[Node], t0: float) -> None:
        deadline = t0 + self.start_timeout
        waiting = list(nodes)
        while waiting:
            for n in list(waiting):
                if n.supervisor.exited():
                    n.supervisor.show_log_tail()
                    raise Fatal(f"node {n.node_id} exited during startup")
                if n.ready():
                    say(f"node {n.node_id} pid {n.pid} serves on {n.bootstrap()} "
                        f"({secs_since(t0)}s)")
                    waiting.remove(n)
            if waiting and now() > deadline:
                for n in waiting:
                    n.supervisor.show_log_tail()
                raise Fatal(f"nodes {[n.node_id for n in waiting]} did not serve within "
                            f"{self.start_timeout}s")
            if waiting:
                time.sleep(0.2)

    def start(self, keep: bool, version: str) -> int:
        _lock = self.lock()
        t0 = now()
        running = [n for n in self.nodes if n.running_pid() is not None]
        formatted = all((n.data / "meta.properties").is_file() for n in self.nodes)
        if running or (keep and formatted):
            if not formatted:
                raise Fatal(f"{self.dir}: a node runs but the cluster is not formatted")
            for n in self.nodes:
                n.use_version(self.version())
            down = [n for n in self.nodes if n.running_pid() is None]
            for n in down:
                n.launch()
            self.wait_all(down, t0)
        else:
            wipe_dir(self.dir, MARKER, "kafka.sh")
            (self.dir / NODES_FILE).write_text(f"{self.count}\n")
            ports = free_ports(2 * self.count)
            voters = ",".join(f"{i + 1}@127.0.0.1:{ports[2 * i + 1]}" for i in range(self.count))
            cid = cluster_id()
            for i, n in enumerate(self.nodes):
                n.dir.mkdir()
                (n.dir / MARKER).touch()
                n.use_version(version or n.dir_version())
                n.versionfile.write_text(n.version + "\n")
                n.write_node_props(ports[2 * i], ports[2 * i + 1], voters)
                n.format_static(cid)
            for n in self.nodes:
                n.launch()
            self.wait_all(self.nodes, t0)
        self.write_env()
        say(f"cluster of {self.count} up in {secs_since(t0)}s")
        print(f"KELT_KAFKA_BOOTSTRAP={self.bootstrap()}", flush=True)
        return 0

    def node(self, index: str) -> Node:
        if not index.isdigit() or not 1 <= int(index) <= self.count:
            raise Fatal(f"node must be 1..{self.count}, not '{index}'")
        return self.nodes[int(index) - 1]

    def start_node(self, index: str) -> int:
        n = self.node(index)
        _lock = self.lock()
        t0 = now()
        if n.running_pid() is None:
            n.use_version(self.version())
            n.launch()
            self.wait_all([n], t0)
        self.write_env()
        return 0

    def stop_node(self, n: Node) -> None:
        pid = n.running_pid()
        if pid is None:
            n.pidfile.unlink(missing_ok=True)
            return
        steps = [(signal.SIGTERM, self.stop_timeout,
                  f"node {n.node_id} pid {pid} still running after {self.stop_timeout}s; "
                  "SIGKILL"), (signal.SIGKILL, 10, "")]
        if n.supervisor.stop(pid, steps) is None:
            raise Fatal(f"pid {pid} survives SIGKILL")
        n.dump.unlink(missing_ok=True)
        say(f"stopped node {n.node_id} (pid {pid})")

    def stop_one(self, index: str) -> int:
        _lock = self.lock()
        self.stop_node(self.node(index))
        self.write_env()
        return 0

    def stop(self) -> int:
        _lock = self.lock()
        # The last ones stop slowly when the others are gone (controlled shutdown waits
        # for a controller): SIGTERM all, then wait.
        for n in self.nodes:
            pid = n.running_pid()
            if pid is not None:
                try:
                    os.kill(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for n in self.nodes:
            self.stop_node(n)
        if self.envfile.is_file():
            self.write_env()
        say(f"stopped the cluster in {self.dir}")
        return 0

    def status(self) -> int:
        up = [n for n in self.nodes if n.running_pid() is not None
              and tcp_open(n.port_of("PLAINTEXT"))]
        for n in self.nodes:
            say(f"node {n.node_id}: {'up' if n in up else 'down'} ({n.bootstrap()})")
        if up:
            print(f"KELT_KAFKA_BOOTSTRAP={self.bootstrap()}", flush=True)
        return 0 if len(up) == self.count else 1

    def create_topic(self, name: str, partitions: int) -> int:
        kelt = kelt_cli.find()
        timeout = self.nodes[0].admin_timeout
        p = kelt_cli.run(kelt, ["topics", "create", name, "--partitions", str(partitions),
                                "--replication-factor", str(min(3, self.count)),
                                "--if-not-exists", "--bootstrap", self.bootstrap(),
                                "--timeout", str(timeout)], timeout)
        if p.returncode != 0:
            sys.stderr.write(p.stderr)
            return p.returncode
        return 0
