#!/usr/bin/env bash
# Install what the service needs on a fresh Debian machine: system libraries (WeasyPrint's Pango,
# fonts, poppler for PNG previews) and the Python package with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for pkg in libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core fonts-liberation2 poppler-utils; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'
