"""The Node packages of the Apps tests: installed from their lock files, then built.

``built(folder)`` runs ``npm ci`` in ``folder`` when its ``node_modules`` was not
installed from the lock file there now (a hash of it is kept beside), then ``npm run
build``; two test runs in one checkout wait for each other instead of installing over
each other.
"""

from __future__ import annotations

import fcntl
import hashlib
import subprocess
from pathlib import Path

__all__ = ["built"]

#: seconds npm ci may take on a fresh machine
INSTALL_TIMEOUT = 300.0
#: seconds a build may take (esbuild takes well under one)
BUILD_TIMEOUT = 120.0
_STAMP = "node_modules/.mcpactor-lock-sha256"


def built(folder: Path, npm: str) -> None:
    """Install ``folder``'s locked packages if they are not, and run its build."""
    lock = hashlib.sha256((folder / "package-lock.json").read_bytes()).hexdigest()
    stamp = folder / _STAMP
    with (folder / ".npm-ci.lock").open("w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text() != lock:
            _run(
                [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], folder, INSTALL_TIMEOUT
            )
            stamp.write_text(lock)
        _run([npm, "run", "--silent", "build"], folder, BUILD_TIMEOUT)


def _run(command: list[str], folder: Path, timeout: float) -> None:
    done = subprocess.run(
        command, cwd=folder, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        failure = (done.stderr or done.stdout)[-2000:]
        raise RuntimeError(
            f"{' '.join(command[1:])} in {folder} failed ({done.returncode}):\n{failure}"
        )
