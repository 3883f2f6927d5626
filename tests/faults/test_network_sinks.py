# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Network faults between `kelt run` and its sink's service (issue 17, item 2): PostgreSQL
(a postgres sink) and S3 (moto; a Parquet sink with an s3:// root), each through a
connection cut under a steady producer, latency with jitter and a slow link, and
PostgreSQL through a partition longer than its connection's TCP timeouts.

The network is test_network.py's (tests/faults/netns.py, the session's `net` fixture):
kelt runs in a namespace behind a veth pair, and here PostgreSQL (`postgres.sh start
--host`) and moto (`s3.sh start --host`) listen on the veth's root-side address next to
the broker, so kelt reaches them through the veth only. Each fault touches the service's
port only (iptables on it, the delay proxy in front of it, a token bucket on its packets),
never the broker's. kelt logs in with a password (PostgreSQL role `kelt_password`) and an
S3 secret key; neither may appear in anything kelt prints.

Each test checks what kelt logs, what /metrics and the run's summary show, whether the
run waits or fails and with which exit code, and that the sink holds every offset of the
topic exactly once after recovery. KELT_NET_SINK_RECORDS, KELT_NET_SINK_CUT_S,
KELT_NET_SINK_PARTITION_S (with KELT_NET_SINK_PG_TIMEOUTS= empty: the sink's own
timeouts) and KELT_NET_SINK_RATE make it longer (scripts/network_fault_test.sh).
"""
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

import pytest

from conftest import ROOT, Run, assert_ids_once, assert_same_once, read_env, summary_of, \
    topic_records, write_config
from netns import sh
from test_network import METRICS_PORT, make_topic, metrics, scrape_until_exit, total, \
    wait_metrics

RECORDS = int(os.environ.get("KELT_NET_SINK_RECORDS", "2000"))
CUT_S = float(os.environ.get("KELT_NET_SINK_CUT_S", "6"))
RATE = int(os.environ.get("KELT_NET_SINK_RATE", "400"))  # the steady producer's records/s
PARTITION_S = float(os.environ.get("KELT_NET_SINK_PARTITION_S", "12"))
# libpq settings the partition test adds to the sink's conninfo (empty: pg::Connect's).
PG_TIMEOUTS = os.environ.get(
    "KELT_NET_SINK_PG_TIMEOUTS",
    "keepalives_idle=2&keepalives_interval=1&keepalives_count=2&tcp_user_timeout=4000"
    "&connect_timeout=3")
S3_ACCESS = "netfaultaccess"
S3_SECRET = "s3secret-" + uuid.uuid4().hex  # moto takes any key; kelt must not show it


@pytest.fixture(scope="module")
def services(net, tmp_path_factory):
    """PostgreSQL and moto on the veth's root-side address."""
    # The cluster runs as OS user postgres, who cannot enter pytest's (private) tmp dirs.
    pg_dir = pathlib.Path(tempfile.mkdtemp(prefix="knf-pg-"))
    pg_dir.chmod(0o755)
    s3_dir = tmp_path_factory.mktemp("s3")
    try:
        for script, d in (("postgres.sh", pg_dir), ("s3.sh", s3_dir)):
            p = subprocess.run(["bash", str(ROOT / "scripts" / script), "start", "--host",
                                net.host_ip, "--dir", str(d)], capture_output=True,
                               text=True, timeout=180)
            assert p.returncode == 0, f"{script} start --host {net.host_ip}: {p.stdout}{p.stderr}"
        pg, s3 = read_env(pg_dir / "env"), read_env(s3_dir / "env")
        net.pg = pg
        net.pg_port = int(pg["KELT_PG_PORT"])
        assert pg["KELT_PG_HOST"] == net.host_ip, pg
        # kelt logs in as the password role, from the namespace's address.
        net.pg_password = pg["KELT_PG_PASSWORD"]
        net.pg_conninfo = (f"postgresql://{pg['KELT_PG_PASSWORD_USER']}:{net.pg_password}@"
                           f"{net.host_ip}:{net.pg_port}/{pg['KELT_PG_DB']}")
        net.s3_endpoint = s3["KELT_S3_ENDPOINT"]
        assert net.s3_endpoint.startswith(f"http://{net.host_ip}:"), s3
        net.s3_port = int(net.s3_endpoint.rsplit(":", 1)[1])
        net.s3_bucket = s3["KELT_S3_BUCKET"]
        yield net
    finally:
        for script, d in (("postgres.sh", pg_dir), ("s3.sh", s3_dir)):
            subprocess.run(["bash", str(ROOT / "scripts" / script), "stop", "--dir", str(d)],
                           capture_output=True, timeout=120)
        shutil.rmtree(pg_dir, ignore_errors=True)


@pytest.fixture
def sfault(services):
    services.heal()
    yield services
    services.heal()


# ---- the two sinks ------------------------------------------------------------------------
class PgSink:
    kind = "postgres"

    def __init__(self, net, topic, params=""):
        self.net, self.table = net, "t_" + topic.replace("-", "_")
        self.conninfo = net.pg_conninfo + (f"?{params}" if params else "")
        self.port = net.pg_port
        self.secret = net.pg_password
        # What a failure names: the sink (its address, database and table), and for a
        # connect the address and port as libpq says them.
        self.name_in_error = f"postgresql:{net.host_ip}:{net.pg_port}/kelt#{self.table}"
        self.endpoint_in_error = f'"{net.host_ip}", port {net.pg_port} failed'

    def config(self):
        return f"  - postgres: {{conninfo: '{self.conninfo}', table: {self.table}}}"

    def landing(self):
        import psycopg2
        con = psycopg2.connect(self.net.pg["KELT_PG_CONNINFO"])  # the superuser, root side
        try:
            cur = con.cursor()
            cur.execute(f'SELECT _kafka_partition, _kafka_offset, id FROM "{self.table}"')
            return [tuple(r) for r in cur.fetchall()]
        finally:
            con.close()

    def landed_bytes(self):
        return None


class S3Sink:
    kind = "s3"

    def __init__(self, net, topic, _params=""):
        self.net, self.prefix = net, "land-" + topic
        self.port = net.s3_port
        self.secret = S3_SECRET
        self.name_in_error = f"parquet:s3://{net.s3_bucket}/{self.prefix}"
        self.endpoint_in_error = self.name_in_error

    def config(self):
        n = self.net
        return (f"  - parquet: {{root: 's3://{n.s3_bucket}/{self.prefix}', "
                f"s3_endpoint: '{n.s3_endpoint}', s3_region: us-east-1, "
                f"s3_access_key: {S3_ACCESS}, s3_secret_key: '{S3_SECRET}', "
                "rotate_records: 2000, rotate_age_ms: 2000}")

    def _fs(self):
        import pyarrow.fs
        return pyarrow.fs.S3FileSystem(access_key=S3_ACCESS, secret_key=S3_SECRET,
                                       region="us-east-1", scheme="http",
                                       endpoint_override=self.net.s3_endpoint[7:])

    def objects(self):
        import pyarrow.fs
        fs = self._fs()
        sel = pyarrow.fs.FileSelector(f"{self.net.s3_bucket}/{self.prefix}", recursive=True,
                                      allow_not_found=True)
        return fs, [i for i in fs.get_file_info(sel) if i.type == pyarrow.fs.FileType.File]

    def landing(self):
        import pyarrow.parquet as pq
        fs, objs = self.objects()
        rows, hidden = [], []
        for i in objs:
            if i.base_name.startswith("."):
                hidden.append(i.path)
            elif i.path.endswith(".parquet"):
                t = pq.read_table(i.path, filesystem=fs,
                                  columns=["_kafka_partition", "_kafka_offset", "id"])
                rows += list(zip(*(t.column(k).to_pylist() for k in range(3))))
        assert not hidden, f"hidden objects left: {hidden}"
        return rows

    def landed_bytes(self):
        _, objs = self.objects()
        return sum(i.size for i in objs if i.path.endswith(".parquet"))


SINKS = {"pg": PgSink, "s3": S3Sink}


# ---- producing and running --------------------------------------------------------------------
def pad_of(i, pad):
    import hashlib
    return "".join(hashlib.sha256(f"{i}.{k}".encode()).hexdigest()
                   for k in range(pad // 64 + 1))[:pad]


class Producer:
    """Records {"id": i, "pad": …} with ids from 0 (idempotent producer, root namespace):
    `burst(n)` at once, or `start(rate)` steadily from a thread until `stop()`."""

    def __init__(self, net, topic, pad=100):
        from confluent_kafka import Producer as P
        self.p = P({"bootstrap.servers": net.bootstrap, "enable.idempotence": True,
                    "linger.ms": 20})
        self.topic, self.pad, self.n = topic, pad, 0
        self.errors = []
        self._stop = threading.Event()
        self.thread = None

    def _one(self):
        self.p.produce(self.topic, json.dumps({"id": self.n, "pad": pad_of(self.n, self.pad)}),
                       on_delivery=lambda err, _m: err and self.errors.append(err))
        self.n += 1

    def burst(self, n):
        for _ in range(n):
            self._one()
            self.p.poll(0)
        self.flush()

    def start(self, rate):
        def loop():
            t0, sent = time.time(), 0
            while not self._stop.is_set():
                due = int((time.time() - t0) * rate)
                while sent < due:
                    self._one()
                    sent += 1
                self.p.poll(0.02)
        self.thread = threading.Thread(target=loop, daemon=True)
        self.thread.start()

    def stop(self):
        if self.thread is not None:
            self._stop.set()
            self.thread.join(timeout=30)
            self.thread = None
        self.flush()
        return self.n

    def flush(self):
        assert self.p.flush(60) == 0, "the producer could not deliver everything"
        assert not self.errors, f"delivery errors: {self.errors[:3]}"


def start_run(net, kelt, cfg, *extra):
    return Run("ip", ["netns", "exec", net.ns, kelt, "run", "-c", str(cfg), "--progress",
                      "lines", "--set", "progress_interval_ms=200", "--metrics-port",
                      str(METRICS_PORT), "--metrics-host", net.ns_ip, *extra])


def assert_no_secret(sink, *texts):
    for text in texts:
        assert sink.secret not in text, f"the {sink.kind} secret is in kelt's output"
        assert S3_SECRET not in text and sink.net.pg_password not in text


def check_landing(kelt, net, sink, topic, n):
    truth = topic_records(kelt, net.bootstrap, topic)
    assert_ids_once(truth, n)
    assert_same_once(sink.landing(), truth, sink.kind)


def errors_of(err):
    return [line for line in err.splitlines()
            if re.search(r"level=(warning|error)", line) or line.startswith("kelt: ")]


def run_failure(err):
    """The `kelt: run: …` lines a failed run ends with (Fail() in cli/main.cc)."""
    return "\n".join(line for line in err.splitlines() if line.startswith("kelt: run: "))


def catch_up(net, kelt, cfg, sink):
    """A fresh `kelt run --until-caught-up`: exit 0, nothing about the sink failing."""
    run = start_run(net, kelt, cfg, "--until-caught-up")
    rc, out, err = run.finish()
    assert_no_secret(sink, out, err)
    assert rc == 0, err[-3000:]
    s = summary_of(out)
    assert s["caught_up"] and s["sink_errors"] == 0, s
    return s


def probe_rtt(net, sink):
    """One request from the namespace to the sink's service, answered by it: PostgreSQL's
    SSLRequest (answered 'N' or 'S'), or an HTTP GET for moto. Seconds."""
    req = ("struct.pack('>ii', 8, 80877103)" if sink.kind == "postgres"
           else "b'GET / HTTP/1.0\\r\\n\\r\\n'")
    p = subprocess.run(net.in_ns(
        sys.executable, "-c",
        "import socket,struct,time; "
        f"s=socket.create_connection(('{net.host_ip}', {sink.port}), 5); "
        f"t=time.time(); s.sendall({req}); assert s.recv(1); print(time.time()-t)"),
        capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return float(p.stdout)


def dnat_connections(net):
    """Connections the latency DNAT rule sent to the delay proxy (its packet counter: the
    nat table sees each connection's first packet only)."""
    out = sh(*net.in_ns("iptables", "-t", "nat", "-L", "OUTPUT", "-v", "-n", "-x")).stdout
    return sum(int(line.split()[0]) for line in out.splitlines() if "DNAT" in line)


def shaped_bytes(net):
    """Bytes the token bucket of rate(…, port=…) passed out of the namespace (kelt to the
    service) and into it."""
    def sent(*argv):
        out = sh(*argv).stdout
        m = re.search(r"class htb 1:20 .*?Sent (\d+) bytes", out, re.S)
        return int(m.group(1)) if m else 0
    return (sent(*net.in_ns("tc", "-s", "class", "show", "dev", net.ns_if)),
            sent("tc", "-s", "class", "show", "dev", net.host_if))


# ---- the tests ------------------------------------------------------------------------------
def fault_under_producer(net, kelt, tmp_path, which, how, seconds, must_fail=False,
                         pg_params=""):
    """A steady producer (RATE records/s) and `kelt run` as a service; the sink's port
    blocked (`how`: net.block) for `seconds`, then healed. What kelt did (failed or
    kept running) is checked as the callers' docstrings say; either way no secret in
    anything kelt prints and every produced offset in the sink exactly once."""
    topic = make_topic(net, kelt)
    sink = SINKS[which](net, topic, pg_params)
    cfg = write_config(tmp_path, net.bootstrap, topic, sink.config())
    prod = Producer(net, topic)
    prod.start(RATE)
    run = start_run(net, kelt, cfg)
    restart = None
    try:
        wait_metrics(net, run.proc)
        deadline = time.time() + 60
        while total(metrics(net), "kelt_rows_landed_total") < RATE:
            assert run.proc.poll() is None, "".join(run.err)[-3000:]
            assert time.time() < deadline, "nothing landed before the cut"
            time.sleep(0.2)
        net.block(sink.port, how)
        cut = time.time()
        ended_at, scrapes = None, []
        while time.time() - cut < seconds:
            if ended_at is None and run.proc.poll() is not None:
                ended_at = time.time() - cut
            if ended_at is None:
                try:
                    scrapes.append((time.time() - cut, metrics(net, timeout=2)))
                except OSError:
                    pass
            elif restart is None and seconds - (time.time() - cut) > 4:
                # A restart while the sink is still cut off: its connect gets no answer
                # (DROP; under REJECT the namespace's INPUT rule drops the reset its SYN
                # draws) and fails after the conninfo's connect_timeout: 3 s here,
                # pg::Connect's default 30 s.
                rdir = tmp_path / "restart"
                rdir.mkdir()
                rsink = SINKS[which](net, topic, "connect_timeout=3")
                rcfg = write_config(rdir, net.bootstrap, topic, rsink.config())
                restart = start_run(net, kelt, rcfg, "--until-caught-up")
                t0 = time.time()
                restart = (*restart.finish(timeout=60), time.time() - t0)
            time.sleep(0.3)
        log_during = "".join(run.err)
        net.heal()
        healed = time.time()
        if run.proc.poll() is None:
            assert not must_fail, f"the run did not fail in {seconds:.0f}s of {how}"
            # Kept running: nothing landed from 2 s into the cut (a write already on the
            # wire may finish) to its end.
            settled = [m for t, m in scrapes if t >= 2]
            assert settled, "no /metrics during the cut"
            rows = {total(m, "kelt_rows_landed_total") for m in settled}
            assert len(rows) == 1, f"rows landed during the cut: {sorted(rows)}"
            assert total(settled[-1], "kelt_sink_errors_total") == 0
            n = prod.stop()
            deadline = time.time() + 120
            while total(metrics(net), "kelt_committed_offset") < n:
                assert run.proc.poll() is None, "".join(run.err)[-3000:]
                assert time.time() < deadline, "not caught up 120 s after the heal"
                time.sleep(0.2)
            recovered = time.time() - healed
            run.proc.send_signal(signal.SIGTERM)
            rc, out, err = run.finish()
            assert_no_secret(sink, out, err)
            assert rc == 0, err[-3000:]
            s = summary_of(out)
            assert s["sink_errors"] == 0 and sum(s["offsets"][topic].values()) == n, s
            sink_lines = [line for line in errors_of(log_during) if "sink" in line]
            assert not sink_lines, sink_lines
            print(f"\n{which} {how} {seconds:.0f}s: kept running, nothing landed during the "
                  f"cut ({rows.pop():.0f} rows), nothing logged; caught up {recovered:.1f}s "
                  f"after the heal; {n} records")
        else:
            rc, out, err = run.finish()
            assert_no_secret(sink, out, err)
            assert rc == 1, err[-3000:]
            failure = run_failure(err)
            assert sink.name_in_error in failure, failure
            s = summary_of(out)
            assert s["sink_errors"] == 1 and not s["stopped_by_signal"], s
            if restart is not None:
                rrc, rout, rerr, rsecs = restart
                assert_no_secret(sink, rout, rerr)
                assert rrc == 1, rerr[-3000:]
                assert sink.endpoint_in_error in run_failure(rerr), rerr[-3000:]
            n = prod.stop()
            c = catch_up(net, kelt, cfg, sink)
            tried = (f"exit 1 in {restart[3]:.1f}s: {run_failure(restart[2])[:200]}"
                     if restart else "not tried")
            print(f"\n{which} {how} {seconds:.0f}s: failed {ended_at:.1f}s into it (exit 1): "
                  f"{failure.splitlines()[0][:300]}; restart during the cut: {tried}; "
                  f"catch-up after the heal landed {c['records']} records; {n} in all")
    finally:
        prod.stop()
    check_landing(kelt, net, sink, topic, n)




@pytest.mark.parametrize("which", ["pg", "s3"])
def test_sink_connection_cut(sfault, kelt, tmp_path, which):
    """A steady producer (RATE records/s) and `kelt run` as a service; every packet to and
    from the sink's port answered with a TCP reset (iptables REJECT both ways in kelt's
    namespace) for CUT_S. Two outcomes, both correct, and which one comes depends on where
    the cut finds the sink's connection:

    * the run fails (exit 1) at the sink's next write, naming the sink and its endpoint
      (`kelt: run: sink postgresql:ADDR:PORT/kelt#TABLE: … COPY: server closed the
      connection unexpectedly`), the summary's sink_errors 1; a restart during the cut
      fails after its connect timeout (3 s in its conninfo) naming the endpoint
      (`cannot connect: connection to server at "ADDR", port PORT failed: timeout
      expired`); after the heal a catch-up run lands the rest. Seen for PostgreSQL when
      a COPY or the offsets' update was on the wire.
    * the run keeps running: the sink's write waits (TCP retransmits; the S3 client
      retries) and nothing lands meanwhile (/metrics), and nothing is logged; after the
      heal it goes on by itself and SIGTERM ends it with exit 0. Seen for S3 always
      (cuts of 8 and 30 s), for PostgreSQL when its connection was idle or waiting.

    Either way: no password or secret key in anything kelt prints, and every produced
    offset in the sink exactly once."""
    fault_under_producer(sfault, kelt, tmp_path, which, "reject", CUT_S)


def test_sink_partition_longer_than_timeouts(sfault, kelt, tmp_path):
    """PostgreSQL's port silently dropped (iptables DROP both ways) for PARTITION_S, longer
    than the sink connection's TCP timeouts (pg::Connect: keepalives after 30 s idle and
    tcp_user_timeout 60 s by default; the short variant sets 2 s / 4 s in the conninfo,
    KELT_NET_SINK_PG_TIMEOUTS): the run fails (exit 1) during the partition naming the
    sink, instead of waiting as long as the partition lasts (before pg::Connect: ~15 min
    of retransmissions, or 2 h for a reply lost while kelt only waited); a restart during
    the partition fails after its connect timeout naming the endpoint; after the heal a
    catch-up run lands the rest exactly once."""
    fault_under_producer(sfault, kelt, tmp_path, "pg", "drop", PARTITION_S, must_fail=True,
                         pg_params=PG_TIMEOUTS)


@pytest.mark.parametrize("which", ["pg", "s3"])
def test_sink_latency(sfault, kelt, tmp_path, which):
    """50 ms ± 20 ms each way between kelt and the sink's service (the delay proxy in
    front of its port, through a DNAT rule in kelt's namespace): a request takes ≥ 50 ms,
    the catch-up run goes through the proxy, exits 0 with no error and no sink error, and
    is slower (PostgreSQL: each window's transaction is several round trips); every
    offset once."""
    net = sfault
    n = RECORDS // 2
    topic = make_topic(net, kelt)
    sink = SINKS[which](net, topic)
    cfg = write_config(tmp_path, net.bootstrap, topic, sink.config())
    Producer(net, topic).burst(n)
    net.latency(50, 20, port=sink.port)
    rtt = probe_rtt(net, sink)
    assert rtt >= 0.05, f"the delay is not in the path: a request took {rtt * 1000:.0f} ms"
    s, scrapes, elapsed, err = run_to_end(net, kelt, cfg, sink, "--set",
                                          "window.max_records=100")
    assert s["caught_up"] and s["records"] == n and s["sink_errors"] == 0, s
    assert not [line for line in errors_of(err) if "sink" in line], errors_of(err)
    proxied = dnat_connections(net)
    assert proxied >= 1, "kelt's connections to the sink did not go through the proxy"
    m = scrapes[-1][1]
    assert total(m, "kelt_sink_errors_total") == 0
    print(f"\n{which} latency: a request {rtt * 1000:.0f} ms, run {elapsed:.1f}s, "
          f"{s['windows']} windows, {proxied} connection(s) through the proxy")
    if sink.kind == "postgres":
        # BEGIN, the DDL lock, COPY, the offsets, COMMIT: a round trip each per window.
        assert elapsed >= s["windows"] * 2 * 0.05, f"{elapsed:.1f}s: no latency per window"
    check_landing(kelt, net, sink, topic, n)


def run_to_end(net, kelt, cfg, sink, *args):
    """A `kelt run --until-caught-up` scraped until it exits, which must be 0 with no
    secret of `sink` in its output: its summary, the scrapes, the seconds it took and its
    stderr."""
    t0 = time.time()
    run = start_run(net, kelt, cfg, "--until-caught-up", *args)
    scrapes = scrape_until_exit(net, run.proc)
    rc, out, err = run.finish()
    elapsed = time.time() - t0
    assert_no_secret(sink, out, err)
    assert rc == 0, err[-3000:]
    return summary_of(out), scrapes, elapsed, err


@pytest.mark.parametrize("which", ["pg", "s3"])
def test_sink_slow_link(sfault, kelt, tmp_path, which):
    """The sink's packets through a 1 MB/s token bucket each way (the broker's are not
    shaped): RECORDS records of ~1,000 bytes; the catch-up run exits 0 with no sink error,
    the bucket passed what was landed (PostgreSQL: the rows' text; S3: the Parquet
    objects) and the run took at least that through 1 MB/s; every offset once."""
    net = sfault
    topic = make_topic(net, kelt)
    sink = SINKS[which](net, topic)
    cfg = write_config(tmp_path, net.bootstrap, topic, sink.config())
    Producer(net, topic, pad=1000).burst(RECORDS)
    net.rate(1_000_000, port=sink.port)
    s, scrapes, elapsed, err = run_to_end(net, kelt, cfg, sink)
    assert s["caught_up"] and s["records"] == RECORDS and s["sink_errors"] == 0, s
    assert total(scrapes[-1][1], "kelt_sink_errors_total") == 0
    up, down = shaped_bytes(net)
    landed = sink.landed_bytes() if sink.kind == "s3" else RECORDS * 1000
    print(f"\n{which} slow link: {up / 1e6:.2f} MB to the service and {down / 1e6:.2f} MB "
          f"back through the bucket, {landed / 1e6:.2f} MB landed, run {elapsed:.1f}s "
          f"({s['windows']} windows)")
    assert up >= landed * 0.95, f"only {up} bytes went through the bucket, {landed} landed"
    # No faster than the bucket, give or take its burst of 256 KiB.
    assert elapsed >= (up - 262144) / 1e6, f"{up / 1e6:.1f} MB in {elapsed:.1f}s: not slow"
    check_landing(kelt, net, sink, topic, RECORDS)
