"""Helpers shared by the fault suites (tests/test_faults_*.py): real `pipeline serve` processes on PostgreSQL
behind a FaultProxy, access-log and ledger readers, and a generation request that takes a while."""
from __future__ import annotations

import copy
import json
import time
import uuid

from fault_proxy import FaultProxy
from test_platform_helpers import PG_BASE, REPO, Server, cli, pg_url

from pipeline.storage.postgres import PostgresStore

FIXTURE = REPO / "fixtures" / "xrechnung-spec-id.json"


def slow_generation_body(lines: int = 1500) -> bytes:
    """A valid XRechnung request with `lines` lines (about 0.7 ms per line to generate and validate)."""
    request = json.loads(FIXTURE.read_text())
    line = request["invoice"]["invoiceLines"][0]
    request["invoice"]["invoiceLines"] = [dict(copy.deepcopy(line), lineIdentifier=str(i + 1)) for i in range(lines)]
    request["invoice"]["vatBreakdowns"] = []
    return json.dumps(request).encode()


def access_lines(log_path) -> list[dict]:
    return [json.loads(x) for x in log_path.read_text().splitlines() if x.startswith('{"event"')]


def wait_for(predicate, seconds: float, step: float = 0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


class PgNode:
    """One `pipeline serve` on a fresh PostgreSQL schema reached through a FaultProxy (and Redis if given)."""

    def __init__(self, tmp_path, workers: int = 2, redis_url: str | None = None, warm: bool = True,
                 extra_env: dict | None = None, schema: str | None = None):
        """`schema`: join another node's database (that node drops it)."""
        tmp_path.mkdir(parents=True, exist_ok=True)
        self.owns_schema = schema is None
        self.schema = schema or "faults_" + uuid.uuid4().hex[:10]
        self.proxy = FaultProxy(int(PG_BASE.rsplit(":", 1)[1].split("/")[0]))
        self.direct = PostgresStore(pg_url(self.schema))  # the test's own view, not through the proxy
        self.env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": self.proxy.url(schema=self.schema),
                    "EINVOICE_REDIS_URL": redis_url or "", "EINVOICE_RATE_LIMIT": "100000/min", **(extra_env or {})}
        self.log_path = tmp_path / f"serve-{self.schema}.log"
        self.server = Server(self.env, workers=workers, warm=warm, log_path=self.log_path)

    def key(self, credits: int, rate_limit: str | None = None) -> tuple[str, str]:
        args = ["keys", "create", "--name", "fault", "--env", "test", "--credits", str(credits)]
        if rate_limit:
            args += ["--rate-limit", rate_limit]
        out = cli({**self.env, "EINVOICE_DATABASE_URL": pg_url(self.schema)}, *args)
        assert out.returncode == 0, out.stderr
        token = out.stdout.strip()
        return token.split("_")[2].split(".")[0], token

    def charges(self, key_id: str) -> dict[str, int]:
        """request id -> amount, for every ledger charge of the key."""
        return {u.request_id: u.amount for u in self.direct.usage(key_id) if u.kind == "charge"}

    def stop(self) -> None:
        self.server.stop()
        self.proxy.stop()
        if self.owns_schema:
            self.direct.drop_schema()
        self.direct.close()
