"""The README's "Configuration (environment)" table and its "Knobs" line under "Under faults", read as a user reads
them: every default they state is the default the code takes when the variable is not set. No server: the settings,
the platform configuration, the job engine's constants and `pipeline serve`'s own options, with every EINVOICE_*
variable removed from the environment."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_platform_helpers import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
# A number as the README writes it (`200,000`, `2`), with an optional unit; MB and GB are units too, so that a limit
# stated in decimal megabytes is read as such and compared with the bytes the code takes.
UNITS = {None: 1, "s": 1, "MiB": 1 << 20, "GiB": 1 << 30, "MB": 10 ** 6, "GB": 10 ** 9}
NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s*(MiB|GiB|MB|GB|s)?(?![\w.])")


def _numbers(text: str) -> list[float]:
    """The numbers of a README cell in order, in bytes or seconds where it gives a unit."""
    values = [(float(n.replace(",", "")), unit) for n, unit in NUMBER.findall(text)]
    # `2, 15, 30 s` and `2 / 3 / 1 s`: a unit written once stands for the numbers before it
    return [v * UNITS[unit or next((u for _, u in values[i:] if u), None)] for i, (v, unit) in enumerate(values)]


def _table() -> dict[str, str]:
    """The default cell of each row of the Configuration table, by the row's variable names (`A`, `B` -> both)."""
    section = README.split("## Configuration (environment)", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if line.startswith("| `EINVOICE_"):
            names, default = line.split(" | ")[:2]
            rows[", ".join(re.findall(r"`(EINVOICE_[A-Z_*]+)`", names))] = default
    return rows


def _knobs() -> dict[str, str]:
    """`EINVOICE_X` (value) pairs of the "Knobs:" line under "Under faults"."""
    line = README.split("\nKnobs: ", 1)[1].split("\n\n", 1)[0]
    return dict(re.findall(r"`(EINVOICE_[A-Z_]+)` \(([^)]*)\)", line))


@pytest.fixture
def bare(monkeypatch):
    """The environment without any EINVOICE_* or XDG_* variable; the settings read afresh."""
    for name in list(os.environ):
        if name.startswith(("EINVOICE_", "XDG_")):
            monkeypatch.delenv(name)
    from pipeline import settings

    settings.get_settings.cache_clear()
    yield settings.get_settings()
    settings.get_settings.cache_clear()


def _job_constants() -> list[float]:
    """The job engine's heartbeat, stall and lease times and the record interval: module constants read from the
    environment at import, so read in a fresh interpreter without EINVOICE_* variables."""
    code = ("import importlib; m = lambda n: importlib.import_module('pipeline.jobs.' + n); "
            "print(m('engine').HEARTBEAT, m('engine').STALLED, m('local').LEASE, m('chunks').RECORD_EVERY)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("EINVOICE_")}
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [float(v) for v in out.stdout.split()]


def _defaults(settings) -> dict[str, list[float]]:
    """What the code takes for each row's variables, in the row's order."""
    from pipeline.service.platform import PlatformConfig

    platform = PlatformConfig.from_env({})
    s, jobs = settings, _job_constants()
    return {
        "EINVOICE_MAX_UPLOAD_BYTES": [s.max_upload_bytes],
        "EINVOICE_MAX_PDF_LINES": [s.max_pdf_lines],
        "EINVOICE_MAX_BATCH_FILES": [s.max_batch_files],
        "EINVOICE_MAX_JOB_BYTES, EINVOICE_MAX_JOB_FILES": [s.max_job_bytes, s.max_job_files],
        "EINVOICE_MAX_JOB_EXPANSION": [s.max_job_expansion],
        "EINVOICE_JOB_DISK_QUOTA": [s.job_disk_quota],
        "EINVOICE_JOB_CHUNK": [s.job_chunk],
        "EINVOICE_JOB_RETENTION_DAYS": [s.job_retention_days],
        "EINVOICE_JOB_HEARTBEAT, EINVOICE_JOB_STALLED, EINVOICE_JOB_LEASE": jobs[:3],
        "EINVOICE_JOB_RECORD_EVERY": jobs[3:],
        "EINVOICE_CLIENT_TIMEOUT, EINVOICE_DB_*_TIMEOUT": [s.client_timeout, s.db_connect_timeout,
                                                            s.db_statement_timeout, s.db_lock_timeout],
        "EINVOICE_REQUEST_DEADLINE": [s.request_deadline],
        "EINVOICE_JOB_UPLOAD_MIN_RATE, EINVOICE_JOB_UPLOAD_DEADLINE": [s.job_upload_min_rate, s.job_upload_deadline],
        "EINVOICE_MAX_CLIENT_CONNECTIONS": [s.max_client_connections],
        "EINVOICE_MAX_WORKER_CONNECTIONS": [s.max_worker_connections],
        "EINVOICE_BODY_MEMORY": [s.body_memory],
        "EINVOICE_BODY_SPOOL": [s.body_spool],
        "EINVOICE_KEEPALIVE_REQUESTS": [s.keepalive_requests],
        "EINVOICE_REQUEST_BUDGET": [s.request_budget],
        "EINVOICE_RESERVATION_TTL": [platform.reservation_ttl],
        "EINVOICE_KEY_CACHE_SECONDS": [platform.key_cache_seconds],
    }


def test_every_numeric_default_of_the_configuration_table_is_the_code_s(bare):
    table, defaults = _table(), _defaults(bare)
    assert set(defaults) <= set(table), set(defaults) - set(table)  # a renamed row is looked at here
    for row, values in defaults.items():
        assert _numbers(table[row]) == values, (row, table[row], values)


def test_the_knobs_line_states_the_same_defaults(bare):
    defaults = {name: value for row, values in _defaults(bare).items() for name, value in
                zip(row.replace("EINVOICE_DB_*_TIMEOUT", "EINVOICE_DB_CONNECT_TIMEOUT, EINVOICE_DB_STATEMENT_TIMEOUT, "
                                "EINVOICE_DB_LOCK_TIMEOUT").split(", "), values)}
    defaults["EINVOICE_READY_TIMEOUT"] = bare.ready_timeout
    knobs = _knobs()
    assert len(knobs) >= 14, knobs  # the line names 14 today
    for name, stated in knobs.items():
        assert _numbers(stated)[:1] == [defaults[name]], (name, stated, defaults[name])


def test_the_non_numeric_defaults(bare):
    from pipeline.cli import serve
    from pipeline.service.platform import PlatformConfig

    table = _table()
    assert table["EINVOICE_RATE_LIMIT"] == "`120/min`"
    platform = PlatformConfig.from_env({})
    assert (platform.rate_limit, platform.rate_window) == (120, 60)
    assert table["EINVOICE_CREDIT_COSTS"] == "generation 1, validation 0"
    assert platform.cost("POST", "/v1/invoice/xrechnung") == 1
    assert platform.cost("POST", "/v1/invoice/xrechnung/validate") == 0
    assert table["EINVOICE_RULES_HOME"] == "`~/.cache/einvoice-pipeline/rules`"
    assert bare.rules_home == Path.home() / ".cache/einvoice-pipeline/rules"
    assert table["EINVOICE_DATA_DIR"] == "`~/.local/share/einvoice-pipeline`"
    assert bare.data_dir == Path.home() / ".local/share/einvoice-pipeline"
    assert table["EINVOICE_JOBS_DIR"] == "`<data dir>/jobs`" and bare.jobs_dir == bare.data_dir / "jobs"
    assert bare.database_url is None and bare.redis_url is None and bare.warm_specs is None
    assert table["EINVOICE_HOST, EINVOICE_PORT"] == "127.0.0.1, 8000"
    parser = argparse.ArgumentParser()
    serve.register(parser.add_subparsers())
    args = parser.parse_args(["serve"])
    assert (args.host, args.port) == ("127.0.0.1", 8000)
