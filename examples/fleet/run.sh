#!/usr/bin/env bash
# A fleet on one machine: a private redis-server, two fleet-server instances on one Redis, and
# a client that alternates between them (curl). Stops everything it started on exit.
#
#   examples/fleet/run.sh            # the demo, then exits
#   KEEP=1 examples/fleet/run.sh     # keeps the fleet up until Ctrl-C
set -euo pipefail
cd "$(dirname "$0")/../.."

command -v redis-server >/dev/null || { echo "needs redis-server (apt-get install redis-server)"; exit 1; }
cargo build -q -p mcpl-examples --bin fleet-server
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
bin="$target_dir/debug/fleet-server"

redis_port="${REDIS_PORT:-6390}"
port_a="${PORT_A:-3101}"
port_b="${PORT_B:-3102}"
dir="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT

redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --dir "$dir" >"$dir/redis.log" &
pids+=($!)
for _ in $(seq 50); do redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break; sleep 0.1; done

for spec in "A:$port_a" "B:$port_b"; do
  INSTANCE="${spec%%:*}" PORT="${spec##*:}" REDIS_URL="redis://127.0.0.1:$redis_port/" "$bin" >/dev/null &
  pids+=($!)
done
for port in "$port_a" "$port_b"; do
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break; sleep 0.1; done
done

a="http://127.0.0.1:$port_a/mcp"
b="http://127.0.0.1:$port_b/mcp"
headers=(-H 'content-type: application/json' -H 'accept: application/json, text/event-stream')

echo "== initialize at A"
session="$(curl -s -D - -o /dev/null "${headers[@]}" "$a" -d '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')"
echo "session $session"
in_session=(-H "mcp-session-id: $session" -H 'mcp-protocol-version: 2025-11-25')
curl -s "${headers[@]}" "${in_session[@]}" "$b" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'

for at in "$b" "$a" "$b"; do
  echo "== whoami at $at"
    curl -s "${headers[@]}" "${in_session[@]}" "$at" \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}' | grep '^data: {' || true
done

echo "== a task started at A, polled at B (2026 era)"
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}'
task="$(curl -s "${headers[@]}" -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tools/call' -H 'mcp-name: job' "$a" \
  -d "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"job\",\"arguments\":{\"ms\":300},$meta}}" \
  | python3 -c 'import json,sys; print(json.load(sys.stdin)["result"]["taskId"])')"
sleep 0.5
curl -s "${headers[@]}" -H 'mcp-protocol-version: 2026-07-28' -H 'mcp-method: tasks/get' -H "mcp-name: $task" "$b" \
  -d "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tasks/get\",\"params\":{\"taskId\":\"$task\",$meta}}"
echo

echo "== DELETE at B, then A answers 404"
curl -s -o /dev/null -w '%{http_code}\n' -X DELETE "${in_session[@]}" "$b"
curl -s -o /dev/null -w '%{http_code}\n' "${headers[@]}" "${in_session[@]}" "$a" \
  -d '{"jsonrpc":"2.0","id":4,"method":"ping"}'

if [ -n "${KEEP:-}" ]; then
  echo "fleet up: A at $a, B at $b, Redis at 127.0.0.1:$redis_port (Ctrl-C to stop)"
  wait
fi
