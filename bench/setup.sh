#!/usr/bin/env bash
# Creates the benchmark's virtual environments under $VENV_DIR (default .bench-venvs):
#   peers/     the servers compared against: the official SDK (mcp), fastmcp, and what the
#              framework-free ceilings import (trio, hypercorn, orjson); installed from PyPI
#   driver/    the load driver's own few packages, kept apart so that nothing it installs
#              (uvloop) changes what the peers run on
#   mcpactor/  this checkout, editable, with the extras the targets serve with (HTTP, auth,
#              admin, and the Redis client of the store targets, whose redis-server is the
#              one on PATH: bench/with_redis.py)
# Each is created only when missing; remove a folder to rebuild it. mcpactor/ also follows
# this checkout's dependencies: it is reinstalled when pyproject.toml or the extras change.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
venvs=${VENV_DIR:-$here/.bench-venvs}
py=${PYTHON:-python3}
mkdir -p "$venvs"

make_venv() {  # NAME PACKAGE...
  local dir="$venvs/$1"
  shift
  [ -x "$dir/bin/python" ] && return
  "$py" -m venv "$dir.tmp"
  "$dir.tmp/bin/pip" install -q --disable-pip-version-check "$@"
  mv "$dir.tmp" "$dir"  # only a complete venv gets the name run.sh checks for
}

rm -rf "$venvs"/*.tmp
make_venv peers mcp==2.3.0 fastmcp==4.1.6 trio hypercorn orjson
make_venv driver orjson uvloop
extras="http,auth,admin,redis"
make_venv mcpactor -e "$here[$extras]"
# (pip through python: the venvs are moved into place, so their scripts name the old path)
stamp="$venvs/mcpactor/.pyproject.sha256"
want=$( (cat "$here/pyproject.toml"; echo "$extras") | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  "$venvs/mcpactor/bin/python" -m pip install -q --disable-pip-version-check -e "$here[$extras]"
  echo "$want" >"$stamp"
fi
