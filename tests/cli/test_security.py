# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt run against a secured Kafka 4 broker (scripts/kafka.sh start --secure: SCRAM over
TLS, mutual TLS, an authorizer with ACLs), as an operator runs it: the password comes from
the environment, and no password or key ever appears in what the run writes, its
/metrics included. Run by ctest under the `kafka_scram_broker` fixture (KELT_KAFKA_ENV is
that broker's env file)."""
import json
import os
import pathlib
import re
import signal
import time
import urllib.request

import pytest

from conftest import run_kelt, summary_of
from test_cli import assert_exactly_once, free_port, start_run, write_config, write_records


@pytest.fixture(scope="session")
def secure(broker_env):
    assert broker_env.get("KELT_KAFKA_SASL_SSL_BOOTSTRAP"), \
        "KELT_KAFKA_ENV is not the env file of `scripts/kafka.sh start --secure`"
    return broker_env


def secrets(env):
    """Every secret the runs could leak: both passwords and the client key's lines."""
    out = [env["KELT_KAFKA_SCRAM_PASSWORD"], env["KELT_KAFKA_DENIED_PASSWORD"]]
    key = pathlib.Path(env["KELT_KAFKA_CLIENT_KEY_PEM"]).read_text().splitlines()
    out += [line for line in key if len(line) > 20 and "-----" not in line]
    return out


def assert_no_secret(env, *texts):
    for secret in secrets(env):
        for text in texts:
            assert secret not in text, "a secret appears in the run's output"


def sasl_ssl_config(tmp_path, env, topic, user, ca, extra=""):
    return write_config(tmp_path, env["KELT_KAFKA_SASL_SSL_BOOTSTRAP"], topic, f"""\
properties:
  security.protocol: SASL_SSL
  sasl.mechanism: SCRAM-SHA-512
  sasl.username: {user}
  ssl.ca.location: {ca}
{extra}""")


def mtls_config(tmp_path, env, topic, ca):
    return write_config(tmp_path, env["KELT_KAFKA_SSL_BOOTSTRAP"], topic, f"""\
properties:
  security.protocol: SSL
  ssl.ca.location: {ca}
  ssl.certificate.location: {env["KELT_KAFKA_CLIENT_CERT_PEM"]}
  ssl.key.location: {env["KELT_KAFKA_CLIENT_KEY_PEM"]}
""")


def produce(kelt, env, topic, tmp_path, n):
    write_records(tmp_path / "r.ndjson", n)
    run_kelt(kelt, "produce", "--brokers", env["KELT_KAFKA_BOOTSTRAP"], "--topic", topic,
             "--file", str(tmp_path / "r.ndjson"))


def test_run_over_sasl_ssl_lands_everything_and_shows_no_secret(
        kelt, secure, make_topic, tmp_path):
    topic = make_topic(2)
    produce(kelt, secure, topic, tmp_path, 3000)
    cfg = sasl_ssl_config(tmp_path, secure, topic, secure["KELT_KAFKA_SCRAM_USER"],
                          secure["KELT_KAFKA_CA_PEM"])
    port = free_port()
    env = {"KELT_PROPERTY_SASL_PASSWORD": secure["KELT_KAFKA_SCRAM_PASSWORD"]}
    proc = start_run(kelt, ["run", "-c", str(cfg), "--progress", "lines", "--set",
                            "progress_interval_ms=100", "--log-level", "debug",
                            "--metrics-port", str(port)],
                     env={**os.environ, **env})
    lines, metrics = [], ""
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        lines.append(line)
        m = re.match(r"progress records=\d+ bytes=\d+ rows=(\d+)", line)
        if m and int(m.group(1)) >= 3000:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                metrics = r.read().decode()
            break
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    stderr = "".join(lines) + err
    assert proc.returncode == 0, stderr
    assert metrics, "the run never reported every row landed:\n" + stderr
    assert summary_of(out)["rows"] == 3000
    assert_no_secret(secure, out, stderr, metrics, cfg.read_text())
    assert_exactly_once(kelt, secure["KELT_KAFKA_BOOTSTRAP"], topic, tmp_path / "landing",
                        tmp_path / "landing.duckdb")


def test_run_over_mutual_tls_lands_everything(kelt, secure, make_topic, tmp_path):
    topic = make_topic(2)
    produce(kelt, secure, topic, tmp_path, 2000)
    cfg = mtls_config(tmp_path, secure, topic, secure["KELT_KAFKA_CA_PEM"])
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 "--log-level", "debug")
    assert summary_of(p.stdout)["rows"] == 2000
    assert_no_secret(secure, p.stdout, p.stderr)
    assert_exactly_once(kelt, secure["KELT_KAFKA_BOOTSTRAP"], topic, tmp_path / "landing",
                        tmp_path / "landing.duckdb")


REFUSALS = {
    # case: (config maker, password, what the error must name)
    "wrong password": ("sasl", "not-the-password-3e1f", "authentication"),
    "untrusted broker certificate": ("sasl-other-ca", None, "certificate"),
    "broker refuses the client certificate": ("mtls-other-ca", None, "certificate"),
    "principal without ACLs": ("sasl-denied", None, "authorization"),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refused_login_exits_non_zero_at_once_and_lands_nothing(
        kelt, secure, make_topic, tmp_path, case):
    kind, password, cause = REFUSALS[case]
    topic = make_topic(2)
    produce(kelt, secure, topic, tmp_path, 500)
    user = secure["KELT_KAFKA_SCRAM_USER"]
    ca = secure["KELT_KAFKA_CA_PEM"]
    env = {"KELT_PROPERTY_SASL_PASSWORD": password or secure["KELT_KAFKA_SCRAM_PASSWORD"]}
    if kind == "sasl-other-ca":
        ca = secure["KELT_KAFKA_OTHER_CA_PEM"]
    if kind == "sasl-denied":
        user = secure["KELT_KAFKA_DENIED_USER"]
        env["KELT_PROPERTY_SASL_PASSWORD"] = secure["KELT_KAFKA_DENIED_PASSWORD"]
    if kind == "mtls-other-ca":
        # The client trusts the broker, but presents a certificate of another CA: replace
        # the client certificate by the other CA's own (self-signed) one, with its key.
        other = pathlib.Path(secure["KELT_KAFKA_OTHER_CA_PEM"])
        cfg = write_config(tmp_path, secure["KELT_KAFKA_SSL_BOOTSTRAP"], topic, f"""\
properties:
  security.protocol: SSL
  ssl.ca.location: {ca}
  ssl.certificate.location: {other}
  ssl.key.location: {other.with_suffix(".key")}
""")
    else:
        cfg = sasl_ssl_config(tmp_path, secure, topic, user, ca)
    started = time.monotonic()
    p = run_kelt(kelt, "run", "-c", str(cfg), "--until-caught-up", "--progress", "none",
                 "--log-level", "debug", "--set", "assignment_timeout_ms=30000",
                 env=env, check=False, timeout=120)
    took = time.monotonic() - started
    assert p.returncode != 0, p.stdout
    assert took < 20, f"the refusal took {took:.1f} s"
    assert cause in p.stderr.lower(), p.stderr
    assert_no_secret(secure, p.stdout, p.stderr)
    assert "not-the-password-3e1f" not in p.stdout + p.stderr
    landed = [f for f in (tmp_path / "landing").rglob("*.parquet")] \
        if (tmp_path / "landing").exists() else []
    assert landed == []
    # Nothing was committed either: the same group, logged in right, reads every record.
    good = sasl_ssl_config(tmp_path, secure, topic, secure["KELT_KAFKA_SCRAM_USER"],
                           secure["KELT_KAFKA_CA_PEM"])
    ok = run_kelt(kelt, "run", "-c", str(good), "--until-caught-up", "--progress", "none",
                  env={"KELT_PROPERTY_SASL_PASSWORD": secure["KELT_KAFKA_SCRAM_PASSWORD"]})
    assert summary_of(ok.stdout)["records"] == 500
    assert_exactly_once(kelt, secure["KELT_KAFKA_BOOTSTRAP"], topic, tmp_path / "landing",
                        tmp_path / "landing.duckdb")


def test_topics_and_acls_over_the_secure_listeners(kelt, secure, make_topic):
    """`kelt topics` as the SCRAM user over SASL_SSL (password from the environment) and
    over mutual TLS; the user without ACLs is refused; `kelt acls list` shows what
    kafka.sh start --secure granted; no secret in any output."""
    topic = make_topic(2)
    sasl = ["--bootstrap", secure["KELT_KAFKA_SASL_SSL_BOOTSTRAP"],
            "--property", "security.protocol=SASL_SSL",
            "--property", "sasl.mechanism=SCRAM-SHA-512",
            "--property", f"ssl.ca.location={secure['KELT_KAFKA_CA_PEM']}"]
    as_kelt = {"KELT_PROPERTY_SASL_USERNAME": secure["KELT_KAFKA_SCRAM_USER"],
               "KELT_PROPERTY_SASL_PASSWORD": secure["KELT_KAFKA_SCRAM_PASSWORD"]}
    p = run_kelt(kelt, "topics", "describe", topic, "--json", *sasl, env=as_kelt)
    assert [t["partition_count"] for t in json.loads(p.stdout)] == [2]

    mtls = ["--bootstrap", secure["KELT_KAFKA_SSL_BOOTSTRAP"],
            "--property", "security.protocol=SSL",
            "--property", f"ssl.ca.location={secure['KELT_KAFKA_CA_PEM']}",
            "--property", f"ssl.certificate.location={secure['KELT_KAFKA_CLIENT_CERT_PEM']}",
            "--property", f"ssl.key.location={secure['KELT_KAFKA_CLIENT_KEY_PEM']}"]
    p = run_kelt(kelt, "cluster", "describe", "--json", *mtls)
    assert '"authorized_operations":["DESCRIBE","IDEMPOTENT_WRITE"]' in p.stdout

    denied = {"KELT_PROPERTY_SASL_USERNAME": secure["KELT_KAFKA_DENIED_USER"],
              "KELT_PROPERTY_SASL_PASSWORD": secure["KELT_KAFKA_DENIED_PASSWORD"]}
    p = run_kelt(kelt, "topics", "create", topic + "-denied", *sasl, "--timeout", "20",
                 env=denied, check=False)
    assert p.returncode == 1
    assert "TOPIC_AUTHORIZATION_FAILED" in p.stderr
    wrong = {**as_kelt, "KELT_PROPERTY_SASL_PASSWORD": "not-the-password-4711"}
    p2 = run_kelt(kelt, "topics", "list", *sasl, "--timeout", "20", env=wrong, check=False)
    assert p2.returncode == 1
    assert "Authentication failed" in p2.stderr
    assert "not-the-password-4711" not in p2.stdout + p2.stderr

    acls = run_kelt(kelt, "acls", "list", "--bootstrap", secure["KELT_KAFKA_BOOTSTRAP"]).stdout
    for resource in ("topic:*", "group:*", "transactional_id:*"):
        assert f"allow\tUser:kelt\tall\t{resource}\thost *" in acls
    assert "allow\tUser:kelt\tidempotent_write\tcluster:kafka-cluster\thost *" in acls
    assert_no_secret(secure, p.stdout, p.stderr, p2.stdout, p2.stderr, acls)
