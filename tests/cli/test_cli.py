# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The kelt command, driven as a user would: the real binary against a real broker."""
import json
import os
import pathlib
import pty
import re
import select
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run_kelt, summary_of, topic_contents

UBER_CSV = ROOT / "tests/fixtures/uber/uber_apr14_sample.csv"
EXAMPLE_CONFIG = ROOT / "examples/config/uber.yaml"
SCHEMA = {"fields": [{"name": "id", "data_type": "Int64"},
                     {"name": "name", "data_type": "Utf8"},
                     {"name": "v", "data_type": "Float64"}]}


def write_records(path, n, start=0):
    with open(path, "w") as f:
        for i in range(start, start + n):
            f.write(json.dumps({"id": i, "name": f"n{i}", "v": i * 0.5}) + "\n")


def write_config(tmp_path, brokers, topic, extra=""):
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    cfg = tmp_path / "kelt.yaml"
    cfg.write_text(f"""brokers: {brokers}
group: g-{topic}
topics: [{topic}]
schema: schema.json
window: {{max_records: 200, max_wait_ms: 500}}
sinks:
  - parquet: {{root: landing, rotate_records: 2000}}
  - duckdb: {{path: landing.duckdb, table: t}}
{extra}""")
    return cfg


def parquet_rows(root, topic):
    """(partition, offset) of every landed row in published Parquet files."""
    files = sorted(p for p in (pathlib.Path(root) / topic).rglob("*.parquet")
                   if not p.name.startswith("."))
    keys = []
    for f in files:
        t = pq.read_table(f, columns=["_kafka_partition", "_kafka_offset"])
        keys += list(zip(t.column(0).to_pylist(), t.column(1).to_pylist()))
    return keys


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def assert_exactly_once(kelt, brokers, topic, landing, duckdb_path, table="t"):
    """Every record of the topic is landed once in Parquet and DuckDB, nothing else."""
    truth = topic_contents(kelt, brokers, topic)
    expected = sorted((p, o) for p, offs in truth.items() for o in offs)
    got = sorted(parquet_rows(landing, topic))
    assert len(got) == len(set(got)), "a record landed twice in Parquet"
    assert got == expected
    p = run_kelt(kelt, "sql", "--duckdb", str(duckdb_path), "--duckdb-table", table,
                 "SELECT count(*) AS n, count(DISTINCT (_kafka_partition, _kafka_offset)) "
                 "AS distinct_n FROM landing")
    row = [c.strip() for c in p.stdout.splitlines()[3].strip("|").split("|")]
    assert row == [str(len(expected)), str(len(expected))], p.stdout
    return truth


# --- validate ---------------------------------------------------------------------------

def test_validate_accepts_the_shipped_example(kelt, brokers):
    p = run_kelt(kelt, "validate", "--config", str(EXAMPLE_CONFIG), "--brokers", brokers)
    assert p.stdout.startswith("config OK")
    assert "sinks[0] parquet" in p.stdout and "sinks[1] duckdb" in p.stdout
    assert "pickup_at:Utf8" in p.stdout


BROKEN = [
    # (config text, the message each error must contain)
    ("brokers: b\ngroup: g\ntopics: [t]\nschema: s.json\nsinks:\n"
     "  - parquet: {root: x}\n  - parquet:\n      root: y\n      rotate_records: abc\n",
     ['sinks[1].parquet.rotate_records: expected an integer, got "abc" (line 9)']),
    ("brokers: b\ngrop: g\ntopics: [t]\nschema: s.json\nsinks: [{duckdb: {path: d}}]\n",
     ["grop: unknown key (did you mean 'group'?) (line 2)", "group: required"]),
    ("brokers: b\ngroup: g\ntopics: [t]\nschema: missing.json\nsinks: [{duckdb: {path: d}}]\n",
     ["schema: cannot read schema file", "missing.json' (line 4)"]),
    ("brokers: b\ngroup: g\ntopics: [t]\nschema: {fields: [{name: x, data_type: Int65}]}\n"
     "sinks: [{duckdb: {path: d}}]\n",
     ["schema: ", "Int65"]),
    ("brokers: b\ngroup: g\ntopics: [t]\nschema: s.json\nwindow: {max_records: 0}\n"
     "on_bad_record: drop\nsinks: [{parquett: {root: x}}]\n",
     ["window.max_records: expected an integer from 1 up, got \"0\" (line 5)",
      "on_bad_record: expected one of fail, skip, dead_letter, got \"drop\" (line 6)",
      "sinks[0].parquett: unknown sink kind (did you mean 'parquet'?)"]),
    ("brokers: b\ngroup: g\ntopics: [t]\nschema: s.json\nsinks:\n"
     "  - postgres: {conninfo: [postgresql://u:TopSecret1@h/db]}\n",
     ["sinks[0].postgres.conninfo: expected a string (value not shown: it is a secret) "
      "(line 6)"]),
    ("brokers: b\ngroup: g\ntopics: [t]\nschema: s.json\nmetrics: {port: 70000}\n"
     "sinks: [{duckdb: {path: d}}]\n",
     ['metrics.port: expected an integer from 0 to 65535, got "70000" (line 5)']),
    ("brokers: [a, b\n", ["not a valid YAML document", "(line "]),
]


@pytest.mark.parametrize("text,messages", BROKEN)
def test_validate_names_the_bad_key(kelt, tmp_path, text, messages):
    (tmp_path / "s.json").write_text(json.dumps(SCHEMA))
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(text)
    p = run_kelt(kelt, "validate", "--config", str(cfg), check=False)
    assert p.returncode == 1, p.stdout
    for m in messages:
        assert m in p.stderr, f"{m!r} not in:\n{p.stderr}"
    assert "TopSecret1" not in p.stderr
    # Every line names the file.
    for line in p.stderr.splitlines():
        assert line.startswith(f"kelt: validate: {cfg}: "), line


def test_validate_flag_and_env_precedence(kelt, tmp_path):
    cfg = write_config(tmp_path, "file:1", "t")
    env = {"KELT_GROUP": "from-env", "KELT_WINDOW_MAX_RECORDS": "77", "KELT_BROKERS": "env:1"}
    p = run_kelt(kelt, "validate", "-c", str(cfg), "--brokers", "flag:1", env=env)
    assert "brokers flag:1, group from-env" in p.stdout  # flag > env > file
    assert "window: 77 records" in p.stdout
    bad = run_kelt(kelt, "validate", "-c", str(cfg), "--window-records", "x", check=False)
    assert bad.returncode == 1
    assert 'window.max_records: expected an integer, got "x" (--window-records)' in bad.stderr


# --- produce / tail / sql --------------------------------------------------------------------

def test_produce_csv_as_typed_json_then_tail(kelt, brokers, make_topic, tmp_path):
    topic = make_topic(1)
    csv = tmp_path / "x.csv"
    csv.write_text('"id","name","score","code","note"\n'
                   '1,"a, b",2.5,007,\n'
                   '2,"say ""hi""",-1e3,B02512,x\n')
    p = run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic, "--file", str(csv),
                 "--key-field", "code")
    assert "produced 2 messages" in p.stdout
    p = run_kelt(kelt, "tail", "--brokers", brokers, "--topic", topic, "--from", "beginning",
                 "--count", "2", "--format", "json")
    recs = [json.loads(line) for line in p.stdout.splitlines()]
    assert [r["offset"] for r in recs] == [0, 1]
    assert [r["key"] for r in recs] == ["007", "B02512"]
    assert json.loads(recs[0]["value"]) == {"id": 1, "name": "a, b", "score": 2.5,
                                            "code": "007", "note": None}
    assert json.loads(recs[1]["value"]) == {"id": 2, "name": 'say "hi"', "score": -1e3,
                                            "code": "B02512", "note": "x"}
    # From an offset, formatted.
    p = run_kelt(kelt, "tail", "--brokers", brokers, "--topic", topic, "--from", "1",
                 "--count", "1")
    assert re.match(rf"{topic}\[0\]@1 \S+Z key=B02512  \{{", p.stdout), p.stdout


def test_run_until_caught_up_summary_matches_topic(kelt, brokers, make_topic, tmp_path):
    """The shipped example config, flags overriding it; the summary against the topic."""
    topic = make_topic(3)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic, "--file", str(UBER_CSV))
    landing = tmp_path / "parquet"
    db = tmp_path / "rides.duckdb"
    p = run_kelt(kelt, "run", "--config", str(EXAMPLE_CONFIG), "--brokers", brokers,
                 "--topic", topic, "--group", "g-" + topic, "--set", f"parquet.root={landing}",
                 "--set", f"duckdb.path={db}", "--until-caught-up", "--progress", "lines")
    s = summary_of(p.stdout)
    truth = assert_exactly_once(kelt, brokers, topic, landing, db, table="rides")
    n = sum(len(v) for v in truth.values())
    assert n == 3000
    assert s["records"] == s["rows"] == n and s["bad_records"] == 0 and s["caught_up"]
    assert s["offsets"] == {topic: {str(p): max(o) + 1 for p, o in truth.items()}}
    assert {x["kind"] for x in s["sinks"]} == {"parquet", "duckdb"}
    for sink in s["sinks"]:
        assert sink["rows"] == n and sink["durable"] == s["offsets"]
    # Plain progress lines on a non-terminal.
    assert re.search(r"^progress records=\d+ bytes=\d+ .* lag=", p.stderr, re.M), p.stderr
    # kelt sql prints a table over the landing.
    q = run_kelt(kelt, "sql", "--parquet", str(landing), "--topic", topic,
                 "SELECT base, count(*) AS pickups FROM landing GROUP BY base ORDER BY 2 DESC")
    lines = q.stdout.splitlines()
    assert lines[1].split() == ["|", "base", "|", "pickups", "|"]
    assert lines[-1] == "5 rows"
    assert sum(int(l.split("|")[2]) for l in lines[3:-2]) == 3000


# --- signals -----------------------------------------------------------------------------

def start_run(kelt, args, **kw):
    return subprocess.Popen([kelt, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def wait_for_records(stderr_lines, proc, at_least, timeout=60):
    """Read progress lines until one reports >= at_least records."""
    deadline = time.time() + timeout
    seen = []
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        m = re.match(r"progress records=(\d+)", line)
        if m and int(m.group(1)) >= at_least:
            return int(m.group(1))
    raise AssertionError("no progress:\n" + "".join(seen))


def test_sigterm_mid_run_then_restart_no_loss_no_duplicate(kelt, brokers, make_topic, tmp_path):
    topic = make_topic(3)
    n = 30000
    write_records(tmp_path / "r.ndjson", n)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    cfg = write_config(tmp_path, brokers, topic)
    proc = start_run(kelt, ["run", "-c", str(cfg), "--progress", "lines",
                            "--set", "progress_interval_ms=50", "--log-level", "warning"])
    wait_for_records(None, proc, 2000)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    s = summary_of(out)
    assert s["stopped_by_signal"] and not s["caught_up"]
    assert 0 < s["records"] < n, "the signal did not arrive mid-run"
    assert sum(s["offsets"][topic].values()) == s["rows"]  # committed == landed
    assert "received SIGTERM: finishing the current window" in err
    # Restart: catch up from the durable point.
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 "--log-level", "info")
    s2 = summary_of(p.stdout)
    assert s2["caught_up"], p.stderr
    truth = assert_exactly_once(kelt, brokers, topic, tmp_path / "landing",
                                tmp_path / "landing.duckdb")
    assert sum(len(v) for v in truth.values()) == n
    assert s2["offsets"][topic] == {str(q): max(o) + 1 for q, o in truth.items()}, (
        s, s2, err, p.stderr)
    assert s["records"] + s2["records"] == n  # nothing read twice after a clean stop


def test_second_signal_exits_at_once_then_restart_no_loss_no_duplicate(
        kelt, brokers, make_topic, tmp_path):
    topic = make_topic(3)
    n = 20000
    write_records(tmp_path / "r.ndjson", n)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    cfg = write_config(tmp_path, brokers, topic)
    # Some windows land durably first.
    first = summary_of(run_kelt(kelt, "run", "-c", str(cfg), "--max-windows", "5",
                                "--progress", "none").stdout)
    assert first["rows"] == 1000
    # Then one long window (10 s, no end-of-partition stop) is in flight when the signals
    # come: the first asks to finish it, the second exits without waiting.
    # (A short session: the killed member's partitions are reassigned sooner.)
    proc = start_run(kelt, ["run", "-c", str(cfg), "--progress", "none",
                            "--set", "session_timeout_ms=6000",
                            "--set", "window.max_records=1000000",
                            "--set", "window.max_wait_ms=10000",
                            "--set", "window.stop_at_end=false"])
    seen = []
    while True:
        line = proc.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
        if "assigned 3 partition(s)" in line:
            break
    time.sleep(1.0)  # records are being fetched into the window
    proc.send_signal(signal.SIGTERM)
    while True:
        line = proc.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
        if "received SIGTERM" in line:
            break
    t0 = time.time()
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, (out, "".join(seen) + err)
    assert time.time() - t0 < 3, "the second signal did not exit at once"
    assert "second SIGTERM: exiting now" in err
    assert out == ""  # no summary: nothing of the window was written or committed
    # Restart: everything after the durable point, once.
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none")
    s = summary_of(p.stdout)
    assert s["caught_up"] and s["rows"] == n - 1000
    truth = assert_exactly_once(kelt, brokers, topic, tmp_path / "landing",
                                tmp_path / "landing.duckdb")
    assert sum(len(v) for v in truth.values()) == n


# --- metrics ----------------------------------------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$')


def parse_exposition(text):
    """Prometheus text format 0.0.4 → ({(name, labels): value}, {family: type})."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
            continue
        if line.startswith("#") or not line:
            continue
        m = SAMPLE.match(line)
        assert m, f"not an exposition line: {line!r}"
        labels = tuple(sorted(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or "")))
        samples[(m.group(1), labels)] = float(m.group(4))
        family = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
        assert m.group(1) in types or family in types, f"no TYPE for {m.group(1)}"
    return samples, types


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def test_metrics_scraped_during_a_run(kelt, brokers, make_topic, tmp_path):
    topic = make_topic(3)
    n = 5000
    write_records(tmp_path / "r.ndjson", n)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    cfg = write_config(tmp_path, brokers, topic)
    port = free_port()
    proc = start_run(kelt, ["run", "-c", str(cfg), "--metrics-port", str(port),
                            "--progress", "none"])
    try:
        samples = {}
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                samples, types = parse_exposition(scrape(port))
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
                continue
            # Rows land one step after they are extracted (the write is pipelined).
            if samples.get(("kelt_records_total", ())) == n and samples.get(
                    ("kelt_rows_landed_total", ())) == n and len(
                    [k for k in samples if k[0] == "kelt_partition_lag"]) == 3:
                break
            time.sleep(0.2)
        assert samples.get(("kelt_records_total", ())) == n, samples
        assert types["kelt_records_total"] == "counter"
        assert types["kelt_window_duration_seconds"] == "histogram"
        assert types["kelt_partition_lag"] == "gauge"
        assert samples[("kelt_rows_landed_total", ())] == n
        assert samples[("kelt_bad_records_total", ())] == 0
        assert samples[("kelt_sink_errors_total", ())] == 0
        assert samples[("kelt_bytes_total", ())] > 0
        windows = samples[("kelt_windows_total", ())]
        assert windows >= n / 200
        buckets = sorted((float(dict(k[1])["le"]), v) for k, v in samples.items()
                         if k[0] == "kelt_window_duration_seconds_bucket")
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), "histogram buckets must be cumulative"
        assert buckets[-1] == (float("inf"), windows)
        assert samples[("kelt_window_duration_seconds_count", ())] == windows
        assert samples[("kelt_window_duration_seconds_sum", ())] > 0
        lags = {dict(k[1])["partition"]: v for k, v in samples.items()
                if k[0] == "kelt_partition_lag"}
        assert set(lags) == {"0", "1", "2"}
        committed = sum(v for k, v in samples.items() if k[0] == "kelt_committed_offset")
        assert committed <= n
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=5)
        assert e.value.code == 404
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert summary_of(out)["rows"] == n


# --- logs --------------------------------------------------------------------------------------

def test_json_logs_and_redaction(kelt, brokers, make_topic, tmp_path):
    topic = make_topic(1)
    write_records(tmp_path / "r.ndjson", 10)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    cfg = write_config(tmp_path, brokers, topic)
    secret = "Sup3rSecretPassw0rd"
    # A librdkafka property holding a secret that appears in an error message.
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 "--log-format", "json", "--log-level", "debug",
                 "--property", f"ssl.key.password={secret}", check=False)
    assert secret not in p.stdout + p.stderr
    lines = [l for l in p.stderr.splitlines() if l.startswith("{")]
    assert lines, p.stderr
    for line in lines:
        rec = json.loads(line)
        assert set(rec) == {"ts", "level", "component", "msg"}
        assert rec["level"] in ("debug", "info", "warning", "error")
    assert any(json.loads(l)["component"] == "cli" for l in lines)


# --- progress under a pseudo-terminal ------------------------------------------------------------

def test_progress_bar_on_a_terminal(kelt, brokers, make_topic, tmp_path):
    topic = make_topic(3)
    n = 40000
    write_records(tmp_path / "r.ndjson", n)
    run_kelt(kelt, "produce", "--brokers", brokers, "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))
    cfg = write_config(tmp_path, brokers, topic)
    master, slave = pty.openpty()
    proc = subprocess.Popen([kelt, "run", "-c", str(cfg), "--until-caught-up",
                             "--log-level", "warning"],
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.time() + 120
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 1.0)
        if r:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    proc.wait(timeout=30)
    os.close(master)
    text = out.decode()
    assert proc.returncode == 0, text
    # Redraws: carriage return + clear line, then the bar.
    frames = [f for f in text.split("\r\x1b[2K") if "rec/s" in f]
    records = [float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]
               for f in frames
               for m in [re.search(r"(\d+(?:\.\d+)?)([kM]?) rec ", f)] if m]
    assert len(set(records)) >= 3, f"the bar did not update while running:\n{text!r}"
    assert records == sorted(records)
    assert re.search(r"\[#+\.*\] +\d+% ", text), "no bar with a percentage"
    assert "ETA" in text and "lag" in text
    assert "[########################] 100%" in frames[-1]
    summary = summary_of(text.replace("\r", "\n"))
    assert summary["rows"] == n and summary["caught_up"]
    # The summary comes after the last frame.
    assert text.rindex('{"windows"') > text.rindex("rec/s")


# --- demo ------------------------------------------------------------------------------------------

def test_demo_command(kelt, brokers, tmp_path):
    topic = "demo-" + os.urandom(4).hex()
    p = run_kelt(kelt, "demo", "--brokers", brokers, "--topic", topic, "--csv", str(UBER_CSV),
                 "--rows", "600", "--dir", str(tmp_path / "demo"), "--progress", "none")
    assert f"600 rows of {UBER_CSV} → topic {topic}" in p.stdout
    s = summary_of(p.stdout)
    assert s["rows"] == 600 and s["caught_up"]
    assert "| base " in p.stdout and "first_pickup" in p.stdout
    assert re.search(r"^5 rows$", p.stdout, re.M)
    assert (tmp_path / "demo/kelt.yaml").exists()
    files = [l for l in p.stdout.splitlines() if l.endswith(".parquet")]
    assert files and all((tmp_path / "demo" / f).exists() for f in files)
    # The written config is valid and reruns (nothing new to land).
    again = run_kelt(kelt, "run", "-c", str(tmp_path / "demo/kelt.yaml"), "--progress", "none")
    assert summary_of(again.stdout)["rows"] == 0


def test_user_guide_lists_every_config_key(kelt):
    """docs/USER_GUIDE.md's key table is exactly what `validate --list-keys` prints."""
    table = run_kelt(kelt, "validate", "--list-keys").stdout
    assert table.count("\n") > 40
    guide = (ROOT / "docs/USER_GUIDE.md").read_text().splitlines(keepends=True)
    start = guide.index(table.splitlines(keepends=True)[0])
    end = next((i for i in range(start, len(guide)) if not guide[i].startswith("|")),
               len(guide))
    # The whole table section, row for row: regenerate it with `kelt validate --list-keys`.
    assert "".join(guide[start:end]) == table
