"""Overhead of the platform layer (auth + rate limit + credits) per request, in process.

The same request is sent through the same app with and without the platform middleware (Falcon test
client), interleaved in small blocks so drift hits both sides equally. The resource is a trivial one, so the
difference of medians is the platform's cost: a POST to a generation-like path (auth, limit, reserve +
commit) and to a validation-like path (auth and limit only, 0 credits).

Budget: median overhead <= 1 ms on SQLite, <= 3 ms on PostgreSQL + Redis.

    python3 bench/bench_platform.py [--requests 2000] [--backends sqlite,postgres]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import falcon.testing

from pipeline.service import apikeys
from pipeline.service.app import create_app
from pipeline.service.platform import Backends, PlatformConfig
from pipeline.storage.ratelimit import RedisLimiter, SqliteLimiter

GEN, VAL = "/v1/invoice/benchwork", "/v1/invoice/benchwork/validate"
PG = "postgresql://127.0.0.1:5432/test"
REDIS = "redis://127.0.0.1:6379/0"


class Trivial:
    def on_post(self, req, resp):
        resp.media = {"ok": True}


def _client(app) -> falcon.testing.TestClient:
    app.add_route(GEN, Trivial())
    app.add_route(VAL, Trivial())
    return falcon.testing.TestClient(app)


def _backends(kind: str, tmp: Path):
    if kind == "sqlite":
        from pipeline.storage.sqlite import SqliteStore

        store = SqliteStore(tmp / "bench.sqlite3")
        return store, Backends(store, SqliteLimiter(store), PlatformConfig(rate_limit=10**9))
    from pipeline.storage.postgres import PostgresStore

    store = PostgresStore(f"{PG}?options=-csearch_path%3Dbench_{uuid.uuid4().hex[:8]}")
    return store, Backends(store, RedisLimiter(REDIS, prefix=f"bench:{uuid.uuid4().hex[:6]}:"),
                           PlatformConfig(rate_limit=10**9))


def _time(client, path, headers, n) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        r = client.simulate_post(path, headers=headers)
        out.append(time.perf_counter() - t)
        assert r.status_code == 200, r.text
    return out


def measure(kind: str, n: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store, backends = _backends(kind, Path(tmp))
        key_id, token, digest = apikeys.mint("test")
        store.create_key(key_id, "bench", "test", digest, 10**9, None)
        on, off = _client(create_app(backends=backends)), _client(create_app(platform=False))
        auth = {"Authorization": f"Bearer {token}"}
        results = {}
        for label, path in (("generation (auth+limit+reserve+commit)", GEN), ("validation (auth+limit)", VAL)):
            _time(on, path, auth, 50)
            _time(off, path, {}, 50)
            t_on, t_off = [], []
            for _ in range(n // 100):
                t_on += _time(on, path, auth, 100)
                t_off += _time(off, path, {}, 100)
            results[label] = (statistics.median(t_on), statistics.median(t_off),
                              statistics.quantiles(t_on, n=100)[98], statistics.quantiles(t_off, n=100)[98])
        charged = len([e for e in store.usage(key_id, limit=10**7) if e.kind == "charge"])
        if kind == "postgres":
            store.drop_schema()
        return {"results": results, "charged": charged}


def hashing() -> None:
    """Why sha256: the secret has 256 random bits, so a slow KDF buys nothing and costs the latency budget."""
    import hashlib
    import secrets
    import timeit

    secret = secrets.token_urlsafe(32)
    sha = min(timeit.repeat(lambda: apikeys.secret_matches(secret, apikeys.hash_secret(secret)), number=1000,
                            repeat=3)) / 1000
    scrypt = min(timeit.repeat(lambda: hashlib.scrypt(secret.encode(), salt=b"s" * 16, n=2**14, r=8, p=1),
                               number=5, repeat=3)) / 5
    print(f"key check: sha256 + constant-time compare {sha * 1e6:.1f} us; scrypt (n=2^14, r=8) {scrypt * 1e3:.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--backends", default="sqlite,postgres")
    args = ap.parse_args()
    budget = {"sqlite": 1.0, "postgres": 3.0}
    hashing()
    ok = True
    for kind in args.backends.split(","):
        m = measure(kind, args.requests)
        name = "SQLite" if kind == "sqlite" else "PostgreSQL + Redis"
        print(f"\n{name}: {args.requests} requests per side, interleaved; {m['charged']} charges in the ledger")
        print(f"  {'request':<40}{'median on':>11}{'median off':>12}{'overhead':>10}{'p99 on':>9}{'p99 off':>9}")
        for label, (on, off, p99on, p99off) in m["results"].items():
            over = (on - off) * 1000
            ok &= over <= budget[kind]
            print(f"  {label:<40}{on * 1000:>9.3f}ms{off * 1000:>10.3f}ms{over:>8.3f}ms"
                  f"{p99on * 1000:>7.2f}ms{p99off * 1000:>7.2f}ms")
        print(f"  budget: median overhead <= {budget[kind]} ms")
    print("\nwithin budget" if ok else "\nOVER BUDGET")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
