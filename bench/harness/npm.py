"""npm packages a target needs: ``npm ci`` in its folder unless the locked versions are there.

A folder holds package.json and package-lock.json in git; node_modules/ is made here, once,
under a lock, so that two harness runs or parallel test workers do not install over each
other.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path

#: seconds npm ci may take on a fresh machine
INSTALL_TIMEOUT = 600.0


def missing(folder: Path) -> list[str]:
    """The locked direct dependencies of folder not installed at their locked version."""
    lock = json.loads((folder / "package-lock.json").read_text())
    packages = lock.get("packages", {})
    out = []
    for name in packages.get("", {}).get("dependencies", {}):
        want = packages.get(f"node_modules/{name}", {}).get("version")
        try:
            have = json.loads((folder / "node_modules" / name / "package.json").read_text())
        except (OSError, ValueError):
            out.append(name)
            continue
        if have.get("version") != want:
            out.append(name)
    return out


def ensure_installed(folder: Path, npm: str | None = None) -> None:
    """Run ``npm ci`` in folder unless its locked dependencies are installed.

    Raises RuntimeError when npm is not on PATH or ``npm ci`` fails (with its output's tail).
    """
    if not missing(folder):
        return
    npm = npm or shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is not on PATH: {folder} needs Node.js and npm")
    with (folder / ".npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not missing(folder):  # another process installed them meanwhile
            return
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            tail = done.stderr[-2000:]
            raise RuntimeError(f"npm ci in {folder} failed ({done.returncode}): {tail}")
