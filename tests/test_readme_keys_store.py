"""The README's nginx block has the operator point `pipeline keys` at a PostgreSQL database and create it once; an
operator who skips that (or mistypes the URL) must read why the key store is unavailable, as PostgreSQL says it,
not only the driver's exception class. Run against this machine's PostgreSQL with a database that does not exist,
and against a port nothing listens on."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

from test_platform_helpers import REPO, free_port


def keys_list(database_url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "EINVOICE_DATABASE_URL": database_url, "EINVOICE_REDIS_URL": "", "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "pipeline", "keys", "list"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_missing_database_is_named_with_postgresql_s_reason():
    name = f"einvoice_absent_{uuid.uuid4().hex[:12]}"
    done = keys_list(f"postgresql://127.0.0.1:5432/{name}")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: key store unavailable: PostgreSQL: OperationalError (")
    assert f'database "{name}" does not exist' in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr  # one line, as every CLI error


def test_a_refused_connection_says_so():
    done = keys_list(f"postgresql://127.0.0.1:{free_port()}/einvoice")
    assert done.returncode == 2, done.stderr
    assert "Connection refused" in done.stderr and "port" in done.stderr, done.stderr
