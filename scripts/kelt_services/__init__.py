# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt's local test services: one tool, one supervisor.

    .venv/bin/python -m kelt_services kafka|postgres|s3 COMMAND [OPTIONS]   (PYTHONPATH=scripts)

scripts/kafka.sh, scripts/postgres.sh and scripts/s3.sh are thin wrappers around it, with
the same command lines, outputs, files and exit codes as before. Each service module's
docstring is its --help. Only the standard library is used.
"""
