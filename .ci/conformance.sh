#!/usr/bin/env bash
# Run the official MCP conformance suite against the conformance plugin over
# Streamable HTTP, at the pinned suite versions:
#
#   1. 0.1.16 (npm latest), its default ("active") scenarios;
#   2. 0.2.0-alpha.12 (what the official SDKs gate on) with --requirements 2025-11-25.
#
# The server (`mcpactor serve mcpactor_conformance:server --http 127.0.0.1:PORT`) is
# started once on a free loopback port and always stopped at the end. Each run prints
# a table with one row per scenario (see ../shared/tools/conformance.sh).
#
# Needs: the plugin installed (pip install -e plugins/mcpactor-conformance) and npm;
# Node 22 and the suite are installed from the npm registry on first use.
#
# Environment:
#   PYTHON                  the interpreter with mcpactor installed (default: python)
#   CONFORMANCE_RUNNER      the suite runner (default: ../shared/tools/conformance.sh)
#   CONFORMANCE_DIR_STABLE  where suite 0.1.16 lives (default: ~/.cache/mcp-conformance)
#   CONFORMANCE_DIR_ALPHA   where suite 0.2.0-alpha.12 lives
#                           (default: ~/.cache/mcp-conformance-0.2.0-alpha.12)
#   CONFORMANCE_OUT         keep the raw checks.json files under this folder
#
# Exit status: 0 if every scored scenario passed in both runs, 1 if one failed,
# 2 if the server or the harness could not run.
set -uo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python}"
RUNNER="${CONFORMANCE_RUNNER:-../shared/tools/conformance.sh}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}"
DIR_STABLE="${CONFORMANCE_DIR_STABLE:-$CACHE/mcp-conformance}"
DIR_ALPHA="${CONFORMANCE_DIR_ALPHA:-$CACHE/mcp-conformance-0.2.0-alpha.12}"
READY_SECONDS=30

log() { echo "[.ci/conformance.sh] $*" >&2; }

# Run with bash, so that a copy of the runner without its executable bit works too.
[ -f "$RUNNER" ] || { log "the suite runner $RUNNER is missing"; exit 2; }

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

run_suite() {  # label, suite dir, suite version, extra runner arguments...
  local label="$1" dir="$2" version="$3"
  shift 3
  local out=()
  [ -n "${CONFORMANCE_OUT:-}" ] && out=(--out "$CONFORMANCE_OUT/$label")
  echo
  echo "=== suite $label"
  CONFORMANCE_DIR="$dir" CONFORMANCE_VERSION="$version" \
    bash "$RUNNER" --url "$URL" "${out[@]}" "$@"
}

run_suite "0.1.16" "$DIR_STABLE" "0.1.16"
stable=$?
run_suite "0.2.0-alpha.12-2025-11-25" "$DIR_ALPHA" "0.2.0-alpha.12" --requirements 2025-11-25
alpha=$?

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
  log "the server exited during the runs:"
  tail -n 40 "$SERVER_LOG" >&2
  exit 2
fi

echo
echo "suite 0.1.16: exit $stable; suite 0.2.0-alpha.12 (2025-11-25): exit $alpha"
if [ "$stable" -eq 2 ] || [ "$alpha" -eq 2 ]; then exit 2; fi
if [ "$stable" -ne 0 ] || [ "$alpha" -ne 0 ]; then exit 1; fi
exit 0
