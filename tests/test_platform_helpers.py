"""Shared fixtures and helpers for the platform suites (auth, credits, rate limits, serving).

Backends: SQLite in a temporary directory, real PostgreSQL (127.0.0.1:5432, db `test`, a fresh schema per
test) and real Redis (127.0.0.1:6379, a fresh key prefix per test). A tiny "work" resource stands in for a
stage so that tests can see whether any work was done.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

import falcon
import falcon.testing
import pytest

from pipeline.service import apikeys
from pipeline.service.app import create_app
from pipeline.service.platform import Backends, PlatformConfig
from pipeline.settings import get_settings
from pipeline.storage.postgres import PostgresStore
from pipeline.storage.ratelimit import MemoryLimiter, RedisLimiter, SqliteLimiter
from pipeline.storage.sqlite import SqliteStore

REPO = Path(__file__).resolve().parent.parent
PG_BASE = os.environ.get("EINVOICE_TEST_POSTGRES", "postgresql://127.0.0.1:5432/test")
REDIS_URL = os.environ.get("EINVOICE_TEST_REDIS", "redis://127.0.0.1:6379/0")
GEN = "/v1/invoice/h4work"            # costs 1 by the default rule (a POST to /v1/invoice/<name>)
VAL = "/v1/invoice/h4work/validate"   # costs 0 by the default rule


def pg_url(schema: str) -> str:
    return f"{PG_BASE}?options=-csearch_path%3D{schema}"


class Work:
    """Counts the calls that reach it; `?outcome=` picks 200, 400, 422, 500 (an ApiError) or raise."""

    def __init__(self):
        self.calls = 0

    def _do(self, req, resp):
        self.calls += 1
        outcome = req.get_param("outcome") or "200"
        delay = float(req.get_param("sleep") or 0)
        if delay:
            time.sleep(delay)
        if outcome == "raise":
            raise RuntimeError("/secret/internal/path boom")
        if outcome != "200":
            from pipeline.errors import ApiError

            raise ApiError(int(outcome), "TEST_FAILURE", "requested failure")
        resp.media = {"done": True}

    on_post = _do
    on_get = _do


def make_store(kind: str, tmp_path: Path):
    if kind == "sqlite":
        return SqliteStore(tmp_path / "platform.sqlite3")
    return PostgresStore(pg_url("h4_" + uuid.uuid4().hex[:12]))


def make_limiter(kind: str, store):
    if kind == "memory":
        return MemoryLimiter()
    if kind == "sqlite":
        return SqliteLimiter(store)
    return RedisLimiter(REDIS_URL, prefix=f"h4test:{uuid.uuid4().hex[:8]}:")


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    s = make_store(request.param, tmp_path)
    yield s
    if isinstance(s, PostgresStore):
        s.drop_schema()
    s.close()


@contextmanager
def sqlite_platform(tmp_path, monkeypatch):
    """A Platform on a SQLite store under `tmp_path`, the settings reading their data folder (the jobs' files) there
    too while it is used."""
    monkeypatch.setenv("EINVOICE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        yield Platform(SqliteStore(tmp_path / "s.sqlite3"))
    finally:
        get_settings.cache_clear()


class Platform:
    """An app with the platform layer over a given store/limiter, plus the Work resource."""

    def __init__(self, store, limiter=None, config: PlatformConfig | None = None, from_env: bool = False):
        self.store = store
        # from_env: limiter and configuration read from the environment, as in the service
        self.backends = Backends(store) if from_env else \
            Backends(store, limiter or MemoryLimiter(), config or PlatformConfig(rate_limit=1000))
        self.app = create_app(backends=self.backends)
        self.work = Work()
        self.app.add_route(GEN, self.work)
        self.app.add_route(VAL, self.work)
        self.client = falcon.testing.TestClient(self.app)

    def key(self, credits=10, env="test", rate_limit=None) -> tuple[str, str]:
        key_id, token, digest = apikeys.mint(env)
        self.store.create_key(key_id, "test", env, digest, credits, rate_limit)
        return key_id, token

    def post(self, token, path=GEN, **kw):
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        headers.update(kw.pop("headers", {}))
        return self.client.simulate_post(path, headers=headers, **kw)

    def finished_job(self, token, job_id: str, seconds: float = 120) -> tuple[dict, list[dict]]:
        """A job of this app once it is no longer queued or running (polled in process), and its result lines."""
        import json
        import time

        auth = {"Authorization": f"Bearer {token}"}
        path, ends = f"/v1/jobs/{job_id}", time.monotonic() + seconds
        job = self.client.simulate_get(path, headers=auth).json
        while job["state"] in ("queued", "running") and time.monotonic() < ends:
            time.sleep(0.2)
            job = self.client.simulate_get(path, headers=auth).json
        text = self.client.simulate_get(path + "/results", headers=auth).text
        return job, [json.loads(x) for x in text.splitlines()]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_in(first: int, last: int) -> int:
    """A free loopback port of a suite's own range, beside the ephemeral ports other tests' servers take."""
    for port in range(first, last + 1):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError(f"no free port in {first}-{last}")


class Server:
    """`pipeline serve` in a subprocess on a free loopback port."""

    def __init__(self, env: dict, workers: int = 1, port: int | None = None, warm: bool = False, log_path=None):
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        args = [sys.executable, "-m", "pipeline", "serve", "--port", str(self.port), "--workers", str(workers)]
        if not warm:
            args.append("--no-warm")
        self._log = open(log_path, "wb") if log_path else subprocess.DEVNULL
        self.proc = subprocess.Popen(args, cwd=REPO, env={**os.environ, **env}, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        self.wait_ready()

    def wait_ready(self, stall: float = 60, limit: float = 1200) -> None:
        """Until /healthz answers 200, as long as the server makes progress: its log grows or its processes (the
        master and the workers it forked) use CPU. It fails when neither moved for `stall` seconds, when it exited,
        or after `limit` seconds in all. A fixed minute gave up on a 2-core machine kept busy by another process,
        where warming the rule packs takes several minutes of wall time."""
        import requests

        started = last_move = time.monotonic()
        seen = None
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"pipeline serve exited with {self.proc.returncode}")
            try:
                if requests.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                time.sleep(0.2)
            now, progress = time.monotonic(), Server._progress(self)  # self: also a stand-in (test_faults_chunked)
            if progress != seen:
                seen, last_move = progress, now
            if now - last_move > stall or now - started > limit:
                raise RuntimeError(f"pipeline serve did not come up: {now - started:.0f} s, the last "
                                   f"{now - last_move:.0f} s without progress (log, CPU time)")

    def _progress(self) -> tuple[int, int]:
        """(the log's size, CPU clock ticks of the server's process tree)."""
        log = getattr(self, "log_path", None)
        size = Path(log).stat().st_size if log and Path(log).exists() else 0
        return size, tree_cpu_ticks(self.proc.pid)

    def app_seconds(self, request_id: str, wait: float = 2.0) -> float:
        """The app's own time for one request, from the access log (`durationMs`, by `X-Request-Id`). A bound on
        the HTTP front subtracts it: inside the app a worker can pause ~0.7 s in a full collection of Saxon's heap,
        whatever the front does (bench/gc_pauses.py)."""
        deadline = time.monotonic() + wait
        while True:
            for line in Path(self.log_path).read_text(errors="replace").splitlines():
                if request_id in line and line.startswith("{"):
                    return json.loads(line)["durationMs"] / 1000
            if time.monotonic() > deadline:
                raise AssertionError(f"request {request_id} is not in the access log {self.log_path}")
            time.sleep(0.05)

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._log is not subprocess.DEVNULL:
            self._log.close()
        return self.proc.returncode


def _processes() -> dict[int, tuple[int, int]]:
    """pid -> (parent pid, CPU clock ticks: user + system, reaped children included), from Linux's /proc/PID/stat."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # the name in parentheses may hold spaces
        table[int(entry.name)] = int(fields[1]), sum(map(int, fields[11:15]))  # ppid; utime stime cutime cstime
    return table


def descendants(root: int, table: dict[int, tuple[int, int]] | None = None) -> set[int]:
    """`root` and every process below it."""
    table = _processes() if table is None else table
    tree, grown = {root}, True
    while grown:  # a child's pid may be lower than its parent's: repeat until nothing joins
        joining = {pid for pid, (ppid, _) in table.items() if ppid in tree} - tree
        tree |= joining
        grown = bool(joining)
    return tree


def worker_pids(server: Server) -> set[int]:
    """The processes `server`'s master has started (gunicorn's workers)."""
    return {pid for pid, (ppid, _) in _processes().items() if ppid == server.proc.pid}


def tree_cpu_ticks(root: int) -> int:
    """CPU time (clock ticks, reaped children included) of process `root` and all its descendants."""
    table = _processes()
    return sum(table[pid][1] for pid in descendants(root, table) if pid in table)


class SlowConnections:
    """One connection from each of `sources`, all driven by one thread (non-blocking sockets, not a thread each):
    each sends `head` at once, then `drip` one byte every `interval` s. A connection the server closes (408 at its
    client timeout, or pushed out to make room) is opened again on the next round, so the load stays; `opened`
    counts the connections made."""

    def __init__(self, port: int, sources: list[str], drip: bytes, head: bytes = b"", interval: float = 2.0):
        self.port, self.sources, self.interval = port, sources, interval
        self.head, self.stream = head, head + drip
        self.socks: list[socket.socket | None] = [None] * len(sources)
        self.sent = [0] * len(sources)
        self.opened = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _open(self, i: int) -> None:
        s = socket.socket()
        s.setblocking(False)
        try:
            s.bind((self.sources[i], 0))
            s.connect_ex(("127.0.0.1", self.port))
        except OSError:
            s.close()
            s = None
        self.socks[i], self.sent[i] = s, 0
        self.opened += s is not None

    def _run(self):
        for i in range(len(self.sources)):
            self._open(i)
        while not self.stop.is_set():
            for i, s in enumerate(self.socks):
                if s is None:
                    self._open(i)
                    continue
                at = self.sent[i]
                try:
                    self.sent[i] += s.send(self.stream[at:len(self.head)] if at < len(self.head)
                                           else self.stream[at:at + 1])
                except BlockingIOError:
                    pass
                except OSError:  # closed by the server: the load goes on
                    s.close()
                    self._open(i)
            self.stop.wait(self.interval)

    def close(self):
        self.stop.set()
        self.thread.join(10)
        for s in self.socks:
            if s is not None:
                s.close()


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=600)  # a hang guard, not a bound


def embedded_node(tmp_path_factory, name: str, **settings: str):
    """A module's `pipeline serve` (one worker, not warmed) on embedded defaults in a fresh data folder (no
    PostgreSQL, no Redis), with more `settings` (EINVOICE_...); it is stopped after the module's tests."""
    data = tmp_path_factory.mktemp(name)
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "", **settings}
    server = Server(env, workers=1, warm=False, log_path=data / "serve.log")
    yield server
    server.stop()


def serve_with_key(data: Path, name: str, credits: int, rate_limit: str = "10000/min", workers: int = 2,
                   warm: bool = True, env: dict | None = None) -> tuple[Server, dict, str]:
    """`pipeline serve` on a fresh SQLite store in `data` (no PostgreSQL, no Redis) with one test key holding
    `credits`: (server, its environment, the key). The access log goes to data/serve.log. `env`: more settings."""
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": rate_limit, **(env or {})}
    token = cli(env, "keys", "create", "--name", name, "--env", "test", "--credits", str(credits)).stdout.strip()
    assert token.startswith("einv_test_"), token
    return Server(env, workers=workers, warm=warm, log_path=data / "serve.log"), env, token
