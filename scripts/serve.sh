#!/usr/bin/env bash
# Install, install the official rule packs, and run the service on its embedded defaults
# (SQLite under the data directory, in-process rate limits). Extra arguments go to `pipeline serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
pipeline rules install --from "${EINVOICE_RULES_SOURCE:-../shared/rules}"
exec pipeline serve "$@"
