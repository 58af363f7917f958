#!/usr/bin/env bash
# Runs mcpactor beside the official SDK, fastmcp and the framework-free ceilings, in one
# run, and prints the harness's markdown tables with ratios.
#
#   bash bench/run.sh [mcpbench options...]      e.g. --tests stdio_lat1,stdio_pipe64
#
# Creates the peers' venvs (.bench-venvs/) with the shared setup script on first use and
# a venv for mcpactor (.bench-venvs/mcpactor) from this checkout.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
bench=${MCPBENCH_DIR:-$here/../shared/tools/bench}
venvs=${VENV_DIR:-$here/.bench-venvs}
cd "$here"
[ -x "$venvs/driver/bin/python" ] || VENV_DIR="$venvs" bash "$bench/setup.sh"
if [ ! -x "$venvs/mcpactor/bin/python" ]; then
  python3 -m venv "$venvs/mcpactor"
  "$venvs/mcpactor/bin/pip" install -q -e "$here[http]"
fi
# pip byte-compiles what it installs, so the peers' servers (and mcpactor installed from
# a wheel) start from cached byte code. This checkout is installed editable and has none
# until Python writes it, which PYTHONDONTWRITEBYTECODE (set in many containers) prevents:
# cold_start would then time compiling mcpactor's source on every spawn. Compile it as
# pip would.
"$venvs/mcpactor/bin/python" -m compileall -q "$here/mcpactor" >/dev/null
exec "$venvs/driver/bin/python" "$bench/mcpbench.py" \
  --targets "$here/bench/targets.toml" \
  --python "$venvs/peers/bin/python" \
  --set python_mcpactor="$venvs/mcpactor/bin/python" \
  --set project="$here" \
  "$@"
