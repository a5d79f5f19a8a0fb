"""The README's first steps, as a newcomer types them: the shell lines of its "First steps" block run one after the
other in bash (`pipeline` is this checkout's command) against a started `pipeline serve` on a free port with a
fresh SQLite store: a key is created, the first invoice generated with curl, and the generated file validated.
The answers are judged by the service's own validation of the generated document."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from test_platform_helpers import REPO, Server


def first_steps() -> list[str]:
    """The commands of the README's first ```sh block under "## First steps" (continuation lines joined)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## First steps", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_first_steps_work_against_a_started_server(tmp_path):
    if shutil.which("curl") is None:
        pytest.fail("curl is needed: the README's first steps use it")
    data = tmp_path / "data"
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "1000/min"}
    server = Server(env, workers=1)
    try:
        commands = first_steps()
        assert [c.split()[0] for c in commands] == ["KEY=$(pipeline", "curl", "curl"], commands
        script = "\n".join(["set -euo pipefail", f'pipeline() {{ "{sys.executable}" -m pipeline "$@"; }}'] + [
            c.replace("http://localhost:8000", server.url).replace("@fixtures/", f"@{REPO}/fixtures/")
            for c in commands] + ['echo "KEY=$KEY" >&2'])
        done = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              env={**os.environ, **env, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        key = re.search(r"KEY=(einv_test_\S+)", done.stderr).group(1)
        generated = (tmp_path / "invoice.xml").read_bytes()
        assert b"CrossIndustryInvoice" in generated  # the fixture asks for CII
        report = json.loads(done.stdout)  # the last line's answer: the validation report of the generated file
        assert report["valid"] is True and report["syntax"] == "CII"
        assert not [i for i in report["issues"] if i["code"].startswith("CHECK-")]  # our showcase is clean
        from pipeline.flows.validate_xml import validate_xml
        assert report["summary"] == validate_xml(generated, "xrechnung", content_checks=True).to_dict()["summary"]
        # the generation cost 1 of the 100 credits the key was created with
        usage = subprocess.run([sys.executable, "-m", "pipeline", "keys", "list", "--json"], cwd=REPO,
                               capture_output=True, text=True, env={**os.environ, **env}, timeout=60)
        keys = json.loads(usage.stdout)
        assert [k["balance"] for k in keys if key.startswith(f"einv_test_{k['keyId']}")] == [99], keys
    finally:
        server.stop()
