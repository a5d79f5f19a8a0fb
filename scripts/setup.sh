#!/usr/bin/env bash
# Install what the service needs on a fresh Debian machine: system libraries (WeasyPrint's Pango,
# fonts, poppler for PNG previews, headless Chromium and its driver for the browser tests, nginx for the production
# front in deploy/ and its test, dovecot's IMAP server and openssl for the e-mail inbox's test) and the Python
# package with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
# Fonts: DejaVu / Liberation for the page, and fallbacks so that any character of an invoice has a glyph (PDF/A
# forbids .notdef): Droid Sans Fallback (CJK), Symbola (emoji, symbols), Unifont (the rest of the BMP and more).
for pkg in libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fontconfig fonts-dejavu-core fonts-liberation2 \
           fonts-droid-fallback fonts-symbola fonts-unifont poppler-utils chromium chromium-driver nginx \
           dovecot-imapd openssl; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # nginx, dovecot: the packages' own system services are not used; deploy/run-local.sh runs nginx from a prefix of
  # its own, tests/dovecot.py starts dovecot with a config of its own on a free port
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

python3 -m pip install -q --disable-pip-version-check -e '.[test]'
