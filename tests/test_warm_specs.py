"""EINVOICE_WARM_SPECS: the rule packs a worker compiles when it starts (default every installed one). Fewer warm
packs make a smaller Saxon heap, whose full collections pause a worker in proportion (bench/gc_pauses.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from test_platform_helpers import REPO

# In a fresh process (the compiled-stylesheet cache is per process): warm as a worker does, then list the
# rule-pack stylesheets compiled and the specs they belong to.
_PROBE = """
import json, sys
from pathlib import Path
from pipeline import saxon
from pipeline.check import packs
from pipeline.cli.serve import _warm_rule_packs
_warm_rule_packs()
compiled = {Path(key[1]).resolve() for key in saxon._get()["generated"] if key[0] == "rules"}
specs = {pack.spec for pack in packs.list_installed()
         if any(Path(pack.runnable(s)).resolve() in compiled for s in pack.stylesheets())}
print(json.dumps(sorted(specs)))
"""


def _warmed(value: str | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "EINVOICE_WARM_SPECS"}
    if value is not None:
        env["EINVOICE_WARM_SPECS"] = value
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_a_worker_warms_every_installed_pack_by_default_and_only_the_chosen_ones_when_set():
    assert _warmed(None) == ["en16931", "fr-cdar", "fr-ctc", "peppol", "xrechnung"]
    assert _warmed(" xrechnung, peppol ,") == ["peppol", "xrechnung"]


def test_an_unknown_spec_stops_the_start_with_the_known_ones_named():
    env = {**os.environ, "EINVOICE_WARM_SPECS": "xrechnung,zugferd"}
    out = subprocess.run([sys.executable, "-m", "pipeline", "serve", "--port", "1"], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "EINVOICE_WARM_SPECS: unknown spec(s) zugferd; known: xrechnung, en16931, fr-ctc, peppol, fr-cdar" in out.stderr
