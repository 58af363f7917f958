"""mcpactor targets of this checkout beside the same targets at an earlier commit, in one run.

    python bench/before_after.py REV --only mcpactor-http-json,mcpactor-http-json-auth \
        [harness options...]                    e.g. --tests http_c16_s1,http_c64_s1 --rounds 9

REV's tree is exported (``git archive``) into a folder of its own under the bench venvs'
folder, and each named target of ``bench/targets.toml`` runs twice per round: as it is, and
as ``NAME@REV`` with REV's package first on the server's ``PYTHONPATH`` (the server script
and every dependency are this checkout's, so only mcpactor's own code differs). The copies'
peer is the original's with ``@REV`` added, so the harness prints a ratio of every row,
paired round by round: the "PEER / PEER@REV" column is new over old.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def export(rev: str, venvs: Path) -> tuple[str, Path]:
    """The short name of rev and a folder holding its tree (exported once per commit)."""
    full = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    short = full[:9]
    folder = venvs / f"tree-{short}"
    if not (folder / "mcpactor" / "__init__.py").exists():
        folder.mkdir(parents=True, exist_ok=True)
        with subprocess.Popen(
            ["git", "-C", str(ROOT), "archive", full, "mcpactor"], stdout=subprocess.PIPE
        ) as archive:
            subprocess.run(["tar", "-x", "-C", str(folder)], stdin=archive.stdout, check=True)
        if archive.returncode:
            raise SystemExit(f"git archive {rev} failed")
    return short, folder


def toml_value(value: object) -> str:
    """A TOML literal of a str, bool or list of str (all the targets file holds)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def paired_targets(names: list[str], short: str) -> str:
    """A targets file of the named targets and their copies at the earlier commit."""
    tables = tomllib.loads((HERE / "targets.toml").read_text())["target"]
    by_name = {t["name"]: t for t in tables}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"not in bench/targets.toml: {', '.join(unknown)}")
    out = []
    for name in names:
        table = by_name[name]
        before = dict(table, name=f"{name}@{short}", peer=f"{table['peer']}@{short}")
        key = "stdio" if "stdio" in table else "cmd"
        before[key] = "env PYTHONPATH={before_tree} " + table[key]
        for one in (table, before):
            out.append("[[target]]")
            out += [f"{k} = {toml_value(v)}" for k, v in one.items()]
            out.append("")
    return "\n".join(out)


def main() -> int:
    """Export the earlier tree, write the paired targets, and run bench/run.sh on them."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the earlier commit")
    ap.add_argument("--only", required=True, help="comma list of targets of bench/targets.toml")
    args, harness = ap.parse_known_args()
    venvs = Path(os.environ.get("VENV_DIR", ROOT / ".bench-venvs"))
    short, tree = export(args.rev, venvs)
    names = [n for n in args.only.split(",") if n]
    targets = venvs / f"targets-{short}.toml"
    targets.write_text(paired_targets(names, short))
    only = ",".join(n for name in names for n in (name, f"{name}@{short}"))
    peers = ",".join(
        dict.fromkeys(
            p
            for t in tomllib.loads(targets.read_text())["target"]
            for p in [t["peer"]]
            if not p.endswith(f"@{short}")
        )
    )
    order = ",".join(p for peer in peers.split(",") for p in (f"{peer}@{short}", peer))
    cmd = [
        "bash",
        str(HERE / "run.sh"),
        "--targets",
        str(targets),
        "--set",
        f"before_tree={tree}",
        "--only",
        only,
        "--peer-order",
        order,
        *harness,
    ]
    return subprocess.call(cmd)


if __name__ == "__main__":
    sys.exit(main())
