# Copyright kelt authors. SPDX-License-Identifier: Apache-2.0
"""The kelt binary, for the admin requests the services make (`kelt topics`, `kelt acls`,
`kelt cluster`): $KELT_CLI, else build/dev/cli/kelt, else build/release/cli/kelt, else
`kelt` on PATH."""
from __future__ import annotations

import os
import shutil
import subprocess

from .common import ROOT, Fatal


def find() -> str:
    explicit = os.environ.get("KELT_CLI")
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise Fatal(f"KELT_CLI={explicit} is not an executable kelt binary")
        return explicit
    for candidate in (ROOT / "build/dev/cli/kelt", ROOT / "build/release/cli/kelt"):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    on_path = shutil.which("kelt")
    if on_path:
        return on_path
    raise Fatal("no kelt binary: build it (cmake --preset dev && cmake --build --preset dev "
                "--target kelt_cli), or name one with KELT_CLI=/path/to/kelt")


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for kelt: none of the caller's kelt connection settings
    (KELT_BROKERS, KELT_CONFIG, KELT_PROPERTY_*), plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KELT_BROKERS", "KELT_CONFIG") and not k.startswith("KELT_PROPERTY_")}
    env.update(extra or {})
    return env


def run(kelt: str, args: list[str], timeout: float, env_extra: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess:
    """Runs `kelt ARGS` (bounded a little beyond its own --timeout); text output captured."""
    try:
        return subprocess.run([kelt, *args], capture_output=True, text=True,
                              timeout=timeout + 15, env=clean_env(env_extra),
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess([kelt, *args], 124, "", f"kelt {args[0]} "
                                           f"{args[1]} did not end within {timeout + 15:.0f}s")
