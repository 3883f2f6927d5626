# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The network namespace of the network fault tests (test_network.py, test_network_sinks.py;
the `net` fixture in conftest.py makes one per session): a namespace `knf-<pid>` joined to
the root namespace by a veth pair (10.213.<n>.1 on the root side, .2 inside), and the
faults on it: a token bucket (`tc tbf`) on the veth's two ends, `iptables` rules inside the
namespace, and for latency a delaying proxy (tests/fixtures/delay_proxy.py) that a DNAT rule
in the namespace puts in the path (this VM's kernel has no `sch_netem`). Needs root.
"""
import os
import pathlib
import shutil
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def sh(*argv, check=True):
    p = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(argv)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


class Net:
    """A namespace joined to the root namespace by a veth pair, and the faults on it."""

    def __init__(self):
        tag = f"{os.getpid() % 100000}"
        self.ns = f"knf-{tag}"
        self.host_if, self.ns_if = f"knfh{tag}", f"knfn{tag}"
        # A /30 of 10.213.0.0/16 no interface of the machine uses yet.
        used = sh("ip", "-4", "-o", "addr").stdout
        n = next(i for i in [os.getpid() % 250, *range(250)] if f"10.213.{i}." not in used)
        self.host_ip, self.ns_ip = f"10.213.{n}.1", f"10.213.{n}.2"
        self.made = False
        self.proxy = None

    def make(self):
        for tool in ("ip", "tc", "iptables"):
            assert shutil.which(tool), f"{tool} not found (scripts/bootstrap.sh installs it)"
        sh("ip", "netns", "add", self.ns)
        self.made = True
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", self.ns_if)
        sh("ip", "link", "set", self.ns_if, "netns", self.ns)
        sh("ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        sh("ip", "-n", self.ns, "addr", "add", f"{self.ns_ip}/30", "dev", self.ns_if)
        sh("ip", "-n", self.ns, "link", "set", self.ns_if, "up")
        sh("ip", "-n", self.ns, "link", "set", "lo", "up")

    def remove(self):
        if self.made:
            # Removing the namespace removes the veth pair, its qdiscs and the rules.
            sh("ip", "netns", "del", self.ns, check=False)

    def in_ns(self, *argv):
        return ["ip", "netns", "exec", self.ns, *argv]

    # ---- faults ---------------------------------------------------------------------
    def qdisc(self, *spec):
        """The same qdisc on both ends of the veth (both directions)."""
        sh("tc", "qdisc", "replace", "dev", self.host_if, "root", *spec)
        sh("ip", "netns", "exec", self.ns, "tc", "qdisc", "replace", "dev", self.ns_if,
           "root", *spec)

    def latency(self, delay_ms, jitter_ms, port=None):
        """Each direction delayed by delay_ms ± jitter_ms. This kernel has no `tc netem`
        (sch_netem is not built in), so a delaying proxy (tests/fixtures/delay_proxy.py) on
        the root side's address takes the namespace's connections to the broker's port
        (or `port`, a sink's service) (a DNAT rule inside the namespace); they still cross
        the veth."""
        port = port or self.port
        s = socket.socket()
        s.bind((self.host_ip, 0))
        proxy_port = s.getsockname()[1]
        s.close()
        self.proxy = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/fixtures/delay_proxy.py"), self.host_ip,
             str(proxy_port), self.host_ip, str(port), str(delay_ms), str(jitter_ms)],
            stdout=subprocess.PIPE, text=True)
        assert self.proxy.stdout.readline().strip() == "ready", "the delay proxy did not start"
        sh("ip", "netns", "exec", self.ns, "iptables", "-t", "nat", "-A", "OUTPUT", "-p",
           "tcp", "-d", self.host_ip, "--dport", str(port), "-j", "DNAT",
           "--to-destination", f"{self.host_ip}:{proxy_port}")

    def rate(self, bytes_per_s, port=None):
        """A token bucket: rate in bit/s, a burst of 256 KiB (more than a GSO packet of the
        veth: a smaller bucket stalled every connection), 500 ms of queue. On the whole
        link, or with `port` on that TCP port's packets only (both directions): an HTB
        root (the kernel has no sch_prio) sends them, by a u32 filter, to a class whose
        qdisc is the token bucket; the rest passes unshaped."""
        tbf = ["tbf", "rate", f"{bytes_per_s * 8}bit", "burst", "256kb", "latency", "500ms"]
        if port is None:
            self.qdisc(*tbf)
            return
        for dev, ns, match in ((self.host_if, [], "sport"),
                               (self.ns_if, ["ip", "netns", "exec", self.ns], "dport")):
            sh(*ns, "tc", "qdisc", "replace", "dev", dev, "root", "handle", "1:", "htb",
               "default", "10")
            for cid in ("1:10", "1:20"):
                sh(*ns, "tc", "class", "add", "dev", dev, "parent", "1:", "classid", cid,
                   "htb", "rate", "10gbit")
            sh(*ns, "tc", "qdisc", "add", "dev", dev, "parent", "1:20", "handle", "20:", *tbf)
            sh(*ns, "tc", "filter", "add", "dev", dev, "parent", "1:", "protocol", "ip",
               "u32", "match", "ip", match, str(port), "0xffff", "flowid", "1:20")

    def block(self, port, how):
        """Cut the namespace off the broker's port: `reject` answers every packet with a
        TCP reset (connections break at once, new ones are refused), `drop` loses them
        silently (a partition: nothing tells either side)."""
        target = ["REJECT", "--reject-with", "tcp-reset"] if how == "reject" else ["DROP"]
        ipt = ["ip", "netns", "exec", self.ns, "iptables"]
        sh(*ipt, "-A", "OUTPUT", "-p", "tcp", "-d", self.host_ip, "--dport", str(port),
           "-j", *target)
        sh(*ipt, "-A", "INPUT", "-p", "tcp", "-s", self.host_ip, "--sport", str(port),
           "-j", *target)

    def heal(self):
        sh("ip", "netns", "exec", self.ns, "iptables", "-F")
        sh("ip", "netns", "exec", self.ns, "iptables", "-t", "nat", "-F")
        if self.proxy is not None:
            self.proxy.kill()
            self.proxy.wait()
            self.proxy = None
        for argv in (["tc", "qdisc", "del", "dev", self.host_if, "root"],
                     ["ip", "netns", "exec", self.ns, "tc", "qdisc", "del", "dev", self.ns_if,
                      "root"]):
            sh(*argv, check=False)  # "no qdisc" when none was set
