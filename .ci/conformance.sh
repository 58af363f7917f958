#!/usr/bin/env bash
# Run the official MCP conformance suite against the conformance plugin over
# Streamable HTTP, at the pinned suite versions:
#
#   1. 0.1.16 (npm latest), its default ("active") scenarios: all 30;
#   2. 0.2.0-alpha.12 (what the official SDKs gate on) with --requirements 2025-11-25: 30;
#   3. the same with --requirements 2026-07-28, the stateless revision: all 37;
#   4. the same with --suite all: all 65 scenarios, the tasks extension's included, and
#      each must prove something (--real-checks): a scenario whose only success is the
#      schema check every scenario gets fails, unless it is excused below with a reason.
#
# The server (`mcpactor serve
# mcpactor_conformance:server --http 127.0.0.1:PORT`) is started once on a free loopback
# port and always stopped at the end. The suite runner, .ci/conformance_suite.py,
# installs Node 22 and the suite from the npm registry on first use and prints a table
# with one row per scenario.
#
# Needs: the plugin installed (pip install -e plugins/mcpactor-conformance) and npm.
#
# Environment:
#   PYTHON              the interpreter with mcpactor installed (default: python)
#   CONFORMANCE_CACHE   where Node 22 and the suites are installed
#                       (default: ~/.cache/mcpactor-conformance)
#   CONFORMANCE_OUT     keep the raw checks.json files under this folder
#
# Exit status: 0 if every scored scenario passed in every run, 1 if one failed,
# 2 if the server or the harness could not run.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python}"
READY_SECONDS=30

log() { echo "[.ci/conformance.sh] $*" >&2; }

PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" \
  || { log "$PYTHON cannot run"; exit 2; }
URL="http://127.0.0.1:$PORT/mcp"
SERVER_LOG="$(mktemp "${TMPDIR:-/tmp}/mcpactor-conformance-server.XXXXXX")"

SERVER_PID=""
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    # SIGTERM first: mcpactor shuts down gracefully; then make sure.
    kill -TERM -- "-$SERVER_PID" 2>/dev/null || kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 40); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.25; done
    kill -KILL -- "-$SERVER_PID" 2>/dev/null || kill -KILL "$SERVER_PID" 2>/dev/null
  fi
  wait "$SERVER_PID" 2>/dev/null
  SERVER_PID=""
}
cleanup() {
  stop_server
  rm -f "$SERVER_LOG"
}
trap cleanup EXIT
trap 'exit 2' INT TERM

log "starting the conformance server on $URL"
# Its own process group, so that stopping it stops everything it started.
set -m
"$PYTHON" -m mcpactor serve mcpactor_conformance:server --http "127.0.0.1:$PORT" \
  > "$SERVER_LOG" 2>&1 &
SERVER_PID=$!
set +m

ready=""
for _ in $(seq 1 $((READY_SECONDS * 4))); do
  kill -0 "$SERVER_PID" 2>/dev/null || break
  if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then ready=1; break; fi
  sleep 0.25
done
if [ -z "$ready" ]; then
  log "the server did not accept connections on 127.0.0.1:$PORT within ${READY_SECONDS}s:"
  tail -n 40 "$SERVER_LOG" >&2
  exit 2
fi

run_suite() {  # label, suite version, expected scenarios, extra runner arguments...
  local label="$1" version="$2" expect="$3"
  shift 3
  local out=()
  [ -n "${CONFORMANCE_OUT:-}" ] && out=(--out "$CONFORMANCE_OUT/$label")
  echo
  echo "=== suite $label"
  "$PYTHON" .ci/conformance_suite.py --url "$URL" --version "$version" --expect "$expect" \
    "${out[@]}" "$@"
}

# Scenarios of --suite all that cannot prove anything against this server, and why.
EXCUSES=(
  --excuse "tasks-status-notifications=the suite's scenario is a stub whose one check is SKIPPED"
  --excuse "sep-2640-skills-directory=mcpactor does not offer the skills extension (every check SKIPPED)"
  --excuse "sep-2640-skills-enumeration=mcpactor does not offer the skills extension (every check SKIPPED)"
  --excuse "sep-2640-skills-manifest=mcpactor does not offer the skills extension (every check SKIPPED)"
)

run_suite "0.1.16" "0.1.16" 30
stable=$?
run_suite "0.2.0-alpha.12-2025-11-25" "0.2.0-alpha.12" 30 --requirements 2025-11-25
alpha=$?
run_suite "0.2.0-alpha.12-2026-07-28" "0.2.0-alpha.12" 37 --requirements 2026-07-28
stateless=$?
run_suite "0.2.0-alpha.12-all" "0.2.0-alpha.12" 65 --real-checks "${EXCUSES[@]}" -- --suite all
every=$?

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  log "the server exited during the runs:"
  tail -n 40 "$SERVER_LOG" >&2
  exit 2
fi

echo
echo "suite 0.1.16: exit $stable; 0.2.0-alpha.12 2025-11-25: exit $alpha," \
  "2026-07-28: exit $stateless, --suite all: exit $every"
status=0
for code in "$stable" "$alpha" "$stateless" "$every"; do
  if [ "$code" -eq 2 ]; then exit 2; fi
  if [ "$code" -ne 0 ]; then status=1; fi
done
exit "$status"
