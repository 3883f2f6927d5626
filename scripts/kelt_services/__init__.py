# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""kelt's local test services: one tool, one supervisor.

    .venv/bin/python -m kelt_services kafka|postgres|s3|registry COMMAND [OPTIONS]
    (PYTHONPATH=scripts)

scripts/kafka.sh, scripts/postgres.sh, scripts/s3.sh and scripts/registry.sh are thin
wrappers around it. Each service module's docstring is its --help. Only the standard
library is used.
"""
