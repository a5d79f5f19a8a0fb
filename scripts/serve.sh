#!/usr/bin/env bash
# Install, install the official rule packs, and run the service on its embedded defaults
# (SQLite under the data directory, the rate limits' windows too). Extra arguments go to `pipeline serve`
# (e.g. --port 9000; or set EINVOICE_PORT).
# The installation runs on the first start and again only when what it installs from changed (pyproject.toml,
# scripts/setup.sh, registry/packs.json, the rule packs' SHA256SUMS, this checkout's place) or the package is not
# importable from here: a stamp under ~/.cache/einvoice-pipeline records the last one. EINVOICE_SETUP=always forces it.
set -euo pipefail
cd "$(dirname "$0")/.."
rules="${EINVOICE_RULES_SOURCE:-../shared/rules}"
stamp="${XDG_CACHE_HOME:-$HOME/.cache}/einvoice-pipeline/setup.stamp"
want="$(pwd) $(cat pyproject.toml scripts/setup.sh registry/packs.json "$rules/SHA256SUMS" 2>/dev/null | sha256sum | cut -c1-64)"
here="$(python3 -c 'import pathlib, pipeline; print(pathlib.Path(pipeline.__file__).resolve().parent.parent)' \
        2>/dev/null || true)"
if [ "${EINVOICE_SETUP:-}" = always ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$want" ] \
   || [ "$here" != "$(pwd -P)" ] || ! command -v pipeline >/dev/null; then
  bash scripts/setup.sh
  pipeline rules install --from "$rules"
  mkdir -p "$(dirname "$stamp")"
  echo "$want" > "$stamp"
fi
exec pipeline serve "$@"
