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
# Two processes (pytest-xdist), one per core of the 2-core CI machine, each taking whole files (a file's servers and
# corpora are set up once): 29 min instead of 80-90 min in one process. EINVOICE_TEST_PROCESSES=0 runs in one.
exec python3 -m pytest -n "${EINVOICE_TEST_PROCESSES:-2}" --dist loadfile "$@"
