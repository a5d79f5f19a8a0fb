#!/usr/bin/env bash
# Install everything, make sure PostgreSQL and Redis are up (for the multi-node suites),
# install the rule packs, and run the whole test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

if command -v pg_ctlcluster >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if command -v redis-server >/dev/null && ! (redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG); then
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
fi

pipeline rules install --from "${EINVOICE_RULES_SOURCE:-../shared/rules}"
exec python3 -m pytest "$@"
