"""API keys: format, 401 codes with WWW-Authenticate, only a hash stored, the secret never logged; CLI."""
from __future__ import annotations

import json
import logging
import time

import pytest

from pipeline.service import apikeys
from pipeline.service.platform import PlatformConfig
from test_platform_helpers import GEN, VAL, Platform, cli, make_store


@pytest.fixture
def p(tmp_path):
    s = make_store("sqlite", tmp_path)
    yield Platform(s)
    s.close()


def _assert_401(r, code):
    assert r.status_code == 401, r.text
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    body = r.json
    assert body["errorCode"] == code and body["status"] == "unauthorized"
    assert body["requestId"] == r.headers["X-Request-Id"]
    assert set(body) == {"requestId", "status", "errorCode", "message", "errors"}


def test_valid_key_passes(p):
    _, token = p.key()
    assert token.startswith("einv_test_")
    r = p.post(token)
    assert r.status_code == 200 and p.work.calls == 1


@pytest.mark.parametrize("header, code", [
    (None, "AUTHENTICATION_REQUIRED"),
    ("", "AUTHENTICATION_REQUIRED"),
    ("Basic dXNlcjpwYXNz", "AUTHENTICATION_REQUIRED"),
    ("Bearer", "MALFORMED_API_KEY"),
    ("Bearer not-a-key", "MALFORMED_API_KEY"),
    ("Bearer einv_prod_0123456789ab." + "A" * 43, "MALFORMED_API_KEY"),
    ("Bearer einv_test_0123456789ab." + "A" * 42, "MALFORMED_API_KEY"),
    ("Bearer xyz_test_0123456789ab." + "A" * 43, "MALFORMED_API_KEY"),
    ("Bearer einv_test_0123456789ab." + "A" * 43, "INVALID_API_KEY"),  # well-formed, unknown id
])
def test_missing_malformed_unknown(p, header, code):
    headers = {"Authorization": header} if header is not None else {}
    r = p.client.simulate_post(GEN, headers=headers)
    _assert_401(r, code)
    assert p.work.calls == 0


def test_wrong_secret_wrong_env_and_revoked(p):
    key_id, token = p.key()
    prefix, secret = token.split(".")
    wrong = prefix + "." + ("B" if secret[0] != "B" else "C") + secret[1:]
    _assert_401(p.post(wrong), "INVALID_API_KEY")
    _assert_401(p.post(token.replace("einv_test_", "einv_live_")), "INVALID_API_KEY")
    p.store.revoke_key(key_id)
    _assert_401(p.post(token), "API_KEY_REVOKED")
    assert p.work.calls == 0
    assert p.store.get_key(key_id).balance == 10


def test_only_a_hash_of_the_secret_is_stored(p):
    key_id, token = p.key()
    secret = token.split(".", 1)[1]
    stored = p.store.get_key(key_id).secret_hash
    assert secret not in stored and stored == apikeys.hash_secret(secret)
    raw = p.store.path.read_bytes() + (p.store.path.parent / (p.store.path.name + "-wal")).read_bytes()
    assert secret.encode() not in raw


def test_secret_never_logged(p, caplog):
    key_id, token = p.key()
    with caplog.at_level(logging.DEBUG):
        p.post(token)
        p.post(token + "x")
        p.post(token, params={"outcome": "raise"})
    text = "\n".join(r.getMessage() for r in caplog.records) + caplog.text
    assert token.split(".")[1] not in text
    access = [json.loads(r.getMessage()) for r in caplog.records if r.name == "pipeline.access"]
    assert access[0]["keyId"] == key_id


def test_public_endpoints_need_no_key(p):
    for path in ("/healthz", "/v1/openapi.json"):
        r = p.client.simulate_get(path)
        assert r.status_code == 200, path
        assert "RateLimit-Limit" not in r.headers


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/v1/openapi.json", "/", "/v1/jobs"])
def test_head_answers_as_get_without_the_body(p, path):
    """RFC 9110: HEAD wherever GET works (load balancers probe with it); it was a 405."""
    get, head = p.client.simulate_get(path), p.client.simulate_head(path)
    assert head.status_code == get.status_code and head.content == b"", path
    assert head.headers["content-length"] == get.headers["content-length"]
    assert head.headers["content-type"] == get.headers["content-type"]


def test_keys_cli_round_trip(tmp_path):
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": ""}
    r = cli(env, "keys", "create", "--name", "acme", "--env", "live", "--credits", "5", "--rate-limit", "30/min")
    assert r.returncode == 0, r.stderr
    token = r.stdout.strip()
    env_, key_id, secret = apikeys.parse_authorization("Bearer " + token)
    assert env_ == "live"
    listed = json.loads(cli(env, "keys", "list", "--json").stdout)
    assert [(k["keyId"], k["name"], k["balance"], k["rateLimit"], k["revoked"]) for k in listed] == \
        [(key_id, "acme", 5, 30, False)]
    assert secret not in cli(env, "keys", "list").stdout
    assert "balance 8" in cli(env, "keys", "credit", key_id, "3").stdout
    assert cli(env, "keys", "credit", key_id, "-100").returncode == 2
    usage = json.loads(cli(env, "keys", "usage", key_id, "--json").stdout)
    assert [(u["kind"], u["amount"]) for u in usage] == [("credit", 5), ("credit", 3)]
    from pipeline.jobs.chunks import Outcome
    from pipeline.storage.sqlite import SqliteStore
    store = SqliteStore(tmp_path / "platform.sqlite3")   # a job's charge: its id is longer than a request's
    job_id = "job_" + "0" * 32
    store.create_job(job_id, key_id, "validate", "{}", ["a"], {}, {0: (0, 1)}, 1)
    store.record_results(job_id, [Outcome(0, "valid", '{"name": "a"}')])
    store.close()
    table = cli(env, "keys", "usage", key_id).stdout.splitlines()
    assert table[0].split() == ["TIME", "KIND", "AMOUNT", "REQUEST", "ID", "ENDPOINT"]
    assert [line.split()[-2:] for line in table if job_id in line] == [[job_id, "/v1/jobs"]], table
    assert cli(env, "keys", "revoke", key_id).returncode == 0
    assert json.loads(cli(env, "keys", "list", "--json").stdout)[0]["revoked"] is True
    assert cli(env, "keys", "revoke", "000000000000").returncode == 2
    assert cli(env, "keys", "create", "--name", "x", "--env", "live", "--rate-limit", "5/h").returncode == 2


def test_a_revoked_key_is_refused_within_the_key_cache_time(tmp_path):
    """Workers keep verified keys for EINVOICE_KEY_CACHE_SECONDS: a revocation reaches a free endpoint within
    that time, a charged endpoint at once (the reservation re-checks the store), and 0 turns the cache off."""
    s = make_store("sqlite", tmp_path)
    try:
        cached = Platform(s, config=PlatformConfig(rate_limit=1000, key_cache_seconds=1.0))
        uncached = Platform(s, config=PlatformConfig(rate_limit=1000, key_cache_seconds=0))
        key_id, token = cached.key()
        assert cached.post(token, VAL).status_code == 200 and uncached.post(token, VAL).status_code == 200
        revoked_at = time.monotonic()
        s.revoke_key(key_id)
        _assert_401(uncached.post(token, VAL), "API_KEY_REVOKED")
        _assert_401(cached.post(token, GEN), "API_KEY_REVOKED")
        assert cached.work.calls == 1 and s.get_key(key_id).balance == 10
        time.sleep(max(0.0, revoked_at + 1.1 - time.monotonic()))
        _assert_401(cached.post(token, VAL), "API_KEY_REVOKED")
        # a wrong secret for a cached key id still asks the store and fails
        key2, token2 = cached.key()
        assert cached.post(token2, VAL).status_code == 200
        prefix, secret = token2.split(".")
        _assert_401(cached.post(prefix + "." + ("B" if secret[0] != "B" else "C") + secret[1:], VAL),
                    "INVALID_API_KEY")
    finally:
        s.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_keys_cli_refuses_odd_input_with_a_message_and_exit_2(tmp_path, backend):
    """`pipeline keys` with odd input. Before: a top-up of 99999999999999999999 was a traceback (exit 1) on both
    stores, one of 2**63 - 1 then + 1000 left SQLite a REAL balance of 9.22e18; on PostgreSQL `usage --limit -1`
    and `--rate-limit 99999999999/min` were tracebacks; a nameless key or one whose name held a newline (a forged
    row in `keys list`) was created; `credit KEY 0` wrote a ledger row of 0; a refused top-up said "unknown key
    id, or the balance would go below zero" for a key that exists."""
    import uuid

    from test_platform_helpers import pg_url

    schema = "h19cli_" + uuid.uuid4().hex[:10]
    env = {"EINVOICE_DATA_DIR": str(tmp_path),
           "EINVOICE_DATABASE_URL": pg_url(schema) if backend == "postgres" else ""}
    try:
        token = cli(env, "keys", "create", "--name", "odd", "--env", "test", "--credits", "3").stdout.strip()
        _, key_id, _ = apikeys.parse_authorization("Bearer " + token)
        for args in (["credit", key_id, "99999999999999999999"], ["credit", key_id, "9223372036854775807"],
                     ["credit", key_id, "1.5"], ["credit", key_id, "--", "-4"], ["credit", key_id, "1000000000000000"],
                     ["credit", "000000000000", "1"], ["usage", key_id, "--limit", "-1"],
                     ["create", "--name", "", "--env", "test"], ["create", "--name", "a\nb", "--env", "test"],
                     ["create", "--name", "x", "--env", "test", "--credits", "99999999999999999999"],
                     ["create", "--name", "x", "--env", "test", "--rate-limit", "99999999999/min"]):
            r = cli(env, "keys", *args)
            assert r.returncode == 2 and "Traceback" not in r.stderr and r.stderr.strip(), (args, r.stderr)
        r = cli(env, "keys", "credit", key_id, "--", "-4")
        assert "(3)" in r.stderr and "unknown" not in r.stderr, r.stderr
        assert "unknown key id" in cli(env, "keys", "credit", "000000000000", "1").stderr
        assert "balance 3" in cli(env, "keys", "credit", key_id, "0").stdout
        assert "balance 1000000000000000" in cli(env, "keys", "credit", key_id, "999999999999997").stdout
        listed = json.loads(cli(env, "keys", "list", "--json").stdout)
        assert [(k["name"], k["balance"]) for k in listed] == [("odd", 10**15)]
        usage = json.loads(cli(env, "keys", "usage", key_id, "--json").stdout)
        assert [u["amount"] for u in usage] == [3, 999999999999997]   # no row of 0, none refused
        table = cli(env, "keys", "list").stdout.splitlines()
        assert table[1].split()[2] == str(10**15), table   # its own column, not run into the next
    finally:
        if backend == "postgres":
            from pipeline.storage.postgres import PostgresStore

            PostgresStore(pg_url(schema)).drop_schema()
