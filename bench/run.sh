#!/usr/bin/env bash
# Runs mcpactor beside the official SDKs (Python, and TypeScript on Node), fastmcp and the
# framework-free ceilings (bare trio), in one run, and prints the harness's markdown tables
# with ratios, a summary of mcpactor beside bare trio and the TypeScript SDK first.
#
#   bash bench/run.sh [harness options...]      e.g. --tests stdio_lat1,stdio_pipe64
#   bash bench/run.sh --suite round3 --out bench/results/NAME.json    every row of issue 45
#
# The TypeScript SDK's targets need node and npm on PATH; the harness runs npm ci in
# bench/peers/ts/ (from its package-lock.json) when the locked SDK is not installed there.
# The harness is bench/mcpbench.py (bench/harness/), its servers bench/peers/ and
# bench/mcpactor_server.py, its targets bench/targets.toml. bench/setup.sh creates the
# venvs it runs in (.bench-venvs/, or $VENV_DIR) on first use, from PyPI and this checkout.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venvs=${VENV_DIR:-$here/.bench-venvs}
cd "$here"
VENV_DIR="$venvs" bash "$here/bench/setup.sh"
# pip byte-compiles what it installs, so the peers' servers (and mcpactor installed from
# a wheel) start from cached byte code. This checkout is installed editable and has none
# until Python writes it, which PYTHONDONTWRITEBYTECODE (set in many containers) prevents:
# cold_start would then time compiling mcpactor's source on every spawn. Compile it as
# pip would.
"$venvs/mcpactor/bin/python" -m compileall -q "$here/mcpactor" >/dev/null
exec "$venvs/driver/bin/python" "$here/bench/mcpbench.py" \
  --targets "$here/bench/targets.toml" \
  --python "$venvs/peers/bin/python" \
  --set python_mcpactor="$venvs/mcpactor/bin/python" \
  "$@"
