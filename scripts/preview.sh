#!/usr/bin/env bash
# Render a generated ZUGFeRD invoice to PNG pages for a visual check.
#   scripts/preview.sh [REQUEST.json|-] [en|de] [OUT_PREFIX]
# Without a request, the 10-line sample of tests/test_zugferd_samples.py is used. Needs poppler-utils (pdftoppm).
set -euo pipefail
request="${1:-}"
lang="${2:-en}"
out="${3:-}"
# the caller's paths are relative to where it stands, not to the checkout the script moves into
if [ -n "$request" ] && [ "$request" != - ]; then request="$(realpath -- "$request")"; fi
if [ -n "$out" ]; then out="$(realpath -m -- "$out")"; fi
cd "$(dirname "$0")/.."
out="${out:-docs/zugferd-preview-$lang}"
pdf="$(mktemp --suffix=.pdf)"
trap 'rm -f "$pdf"' EXIT
python3 - "$request" "$lang" "$pdf" <<'PY'
import json, sys
from pipeline.flows.generate_zugferd import generate_zugferd
from tests.test_zugferd_samples import invoice_request
path, lang, target = sys.argv[1:4]
body = json.load(sys.stdin if path == "-" else open(path)) if path else invoice_request(10)
body.setdefault("config", {"syntax": "CII"})["metadataLanguage"] = lang
open(target, "wb").write(generate_zugferd(json.dumps(body).encode()))
PY
pdftoppm -r "${PREVIEW_DPI:-80}" -png "$pdf" "$out"
ls "$out"*.png
