# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Fixtures for the Iceberg end-to-end tests: the CLI tests' own (the kelt binary, the
broker, fresh topics), loaded from tests/cli/conftest.py so there is one definition.

Run by ctest (tests/CMakeLists.txt, `iceberg_tests`) under the `kafka_broker` fixture.
"""
import importlib.util
import os
import pathlib

_spec = importlib.util.spec_from_file_location(
    "kelt_cli_conftest", pathlib.Path(__file__).resolve().parents[1] / "cli/conftest.py")
cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cli)

kelt = cli.kelt
broker_env = cli.broker_env
brokers = cli.brokers
make_topic = cli.make_topic


def service_env(variable, script):
    """The env file of a service the ctest fixture started (KELT_PG_ENV, KELT_S3_ENV)."""
    path = os.environ.get(variable)
    assert path and os.path.exists(path), f"{variable} must name {script}'s env file"
    return cli.read_env(pathlib.Path(path))
