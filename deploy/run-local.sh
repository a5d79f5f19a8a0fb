#!/usr/bin/env bash
# Several `pipeline serve` nodes behind nginx on one machine (README: "Running several nodes behind nginx").
#
#   deploy/run-local.sh [--nodes 2] [--workers 1] [--port 8080] [--node-port 8001] [--dir DIR]
#       N nodes on 127.0.0.1:node-port.., nginx on 127.0.0.1:port in front; Ctrl-C stops all of them.
#   deploy/run-local.sh --nginx-only --node HOST:PORT [--node HOST:PORT ...] [--port 8080] [--listen ADDR] [--dir DIR]
#       nginx alone, in the foreground, in front of nodes already running (as the tests use it).
#
# The nodes share EINVOICE_DATABASE_URL (PostgreSQL: keys, credits, ledger) and EINVOICE_REDIS_URL (rate limits;
# without it the windows live in PostgreSQL, exact as well). nginx runs from its own prefix DIR (default: a new
# temporary folder): deploy/nginx.conf copied there, nodes.conf and listen.conf written beside it, logs in
# DIR/logs, temporary files in DIR/tmp, nothing of the system's nginx configuration read, no port below 1024.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

nodes=2 workers=1 port=8080 node_port=8001 dir="" listen_addr=127.0.0.1 nginx_only=0 upstreams=()
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --workers) workers="$2"; shift 2 ;;
    --port) port="$2"; shift 2 ;;
    --node-port) node_port="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --listen) listen_addr="$2"; shift 2 ;;
    --node) upstreams+=("$2"); shift 2 ;;
    --nginx-only) nginx_only=1; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
done
command -v nginx >/dev/null || { echo "nginx is not installed (apt-get install nginx; scripts/setup.sh)" >&2; exit 2; }
dir="${dir:-$(mktemp -d -t einvoice-front.XXXXXX)}"
mkdir -p "$dir/logs" "$dir/tmp"

pids=()
stop() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}

if [ "$nginx_only" = 0 ]; then
  case "${EINVOICE_DATABASE_URL:-}" in
    postgresql://*|postgres://*) ;;
    *) echo "set EINVOICE_DATABASE_URL=postgresql://...: the nodes must share one database" >&2; exit 2 ;;
  esac
  [ -n "${EINVOICE_REDIS_URL:-}" ] || echo "note: no EINVOICE_REDIS_URL; rate limits are counted in PostgreSQL" >&2
  trap stop EXIT INT TERM
  for i in $(seq 0 $((nodes - 1))); do
    p=$((node_port + i))
    mkdir -p "$dir/node-$p"   # each node's own data dir: its journal of owed charges
    (cd "$repo" && EINVOICE_DATA_DIR="$dir/node-$p" exec "${PYTHON:-python3}" -m pipeline serve \
        --host 127.0.0.1 --port "$p" --workers "$workers" >"$dir/logs/node-$p.log" 2>&1) &
    pids+=($!)
    upstreams+=("127.0.0.1:$p")
  done
  for u in "${upstreams[@]}"; do
    for _ in $(seq 1 600); do
      curl -fsS -o /dev/null "http://$u/healthz" 2>/dev/null && break
      sleep 0.2
    done
    curl -fsS -o /dev/null "http://$u/healthz" || { echo "node $u did not come up (see $dir/logs)" >&2; exit 1; }
    echo "node $u up (log: $dir/logs/node-${u##*:}.log)" >&2
  done
fi
[ ${#upstreams[@]} -gt 0 ] || { echo "no nodes: give --node HOST:PORT" >&2; exit 2; }

cp "$repo/deploy/nginx.conf" "$dir/nginx.conf"
: >"$dir/nodes.conf"
for u in "${upstreams[@]}"; do
  # A node that refused a connection or timed out is left out for 5 s, then tried again.
  echo "server $u max_fails=1 fail_timeout=5s;" >>"$dir/nodes.conf"
done
echo "listen $listen_addr:$port;" >"$dir/listen.conf"

# Started as root, nginx would run its workers as nobody, who cannot enter a private prefix: run them as the
# user who started this (a local run; a system service names its own user).
globals="daemon off;"
[ "$(id -u)" != 0 ] || globals="$globals user $(id -un);"
nginx -q -t -p "$dir/" -c "$dir/nginx.conf" -g "$globals"
echo "nginx on http://$listen_addr:$port (prefix $dir, logs in $dir/logs)" >&2
if [ "$nginx_only" = 1 ]; then
  exec nginx -p "$dir/" -c "$dir/nginx.conf" -g "$globals"
fi
nginx -p "$dir/" -c "$dir/nginx.conf" -g "$globals" &
pids=("$!" "${pids[@]}")
wait "${pids[0]}"
