# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""Entry point: python -m kelt_services SERVICE ARGS..."""
import importlib
import sys

from kelt_services.common import run_main

SERVICES = ("kafka", "postgres", "s3", "registry")


def main(argv):
    if not argv or argv[0] not in SERVICES:
        print("usage: python -m kelt_services {kafka|postgres|s3|registry} COMMAND [OPTIONS] "
              "(see COMMAND --help)", file=sys.stderr)
        return 2
    service = importlib.import_module(f"kelt_services.{argv[0]}")
    return run_main(service.console, lambda: service.main(argv[1:]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
