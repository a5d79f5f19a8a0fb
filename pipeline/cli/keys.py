"""`pipeline keys ...`: API key administration on the configured store (no admin HTTP surface).

  pipeline keys create --name N --env test|live --credits N [--rate-limit N/min]   prints the key once
  pipeline keys list [--json]
  pipeline keys revoke KEYID
  pipeline keys credit KEYID N        (N may be negative to take credits back)
  pipeline keys usage KEYID [--json]  the ledger: top-ups and charges with request id and endpoint
"""
from __future__ import annotations

import json
import sys
from dataclasses import asdict

from pipeline.service import apikeys
from pipeline.service.platform import ConfigError, parse_rate
from pipeline.storage import StorageUnavailable, open_store


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value


_non_negative.__name__ = "non-negative integer"  # argparse names the type in its error message


def _per_minute(text: str) -> int:
    limit, window = parse_rate(text if "/" in text else f"{text}/min")
    if window != 60:
        raise ConfigError("per-key rate limits are given per minute: N/min")
    return limit


def _create(args, store) -> int:
    rate = _per_minute(args.rate_limit) if args.rate_limit else None
    key_id, token, secret_hash = apikeys.mint(args.env)
    key = store.create_key(key_id, args.name, args.env, secret_hash, args.credits, rate)
    print(token)
    print(f"key id {key.key_id}, {key.balance} credit(s), rate limit "
          f"{f'{rate}/min' if rate else 'service default'}. The key is shown only now; store it safely.",
          file=sys.stderr)
    return 0


def _list(args, store) -> int:
    keys = store.list_keys()
    if args.json:
        print(json.dumps([{k: v for k, v in asdict(key).items() if k != "secret_hash"} for key in keys], indent=2))
        return 0
    print(f"{'KEY ID':<14}{'ENV':<6}{'CREDITS':>9}  {'RATE/MIN':<9}{'STATE':<9}{'CREATED':<27}NAME")
    for k in keys:
        print(f"{k.key_id:<14}{k.env:<6}{k.balance:>9}  {str(k.rate_limit or 'default'):<9}"
              f"{'revoked' if k.revoked else 'active':<9}{k.created_at[:26]:<27}{k.name}")
    return 0


def _revoke(args, store) -> int:
    if store.get_key(args.key_id) is None:
        print(f"unknown key id {args.key_id}", file=sys.stderr)
        return 2
    if not store.revoke_key(args.key_id):
        print(f"key {args.key_id} was already revoked", file=sys.stderr)
        return 0
    print(f"revoked {args.key_id}")
    return 0


def _credit(args, store) -> int:
    balance = store.add_credits(args.key_id, args.amount)
    if balance is None:
        print(f"unknown key id {args.key_id}, or the balance would go below zero", file=sys.stderr)
        return 2
    print(f"{args.key_id}: balance {balance}")
    return 0


def _usage(args, store) -> int:
    if store.get_key(args.key_id) is None:
        print(f"unknown key id {args.key_id}", file=sys.stderr)
        return 2
    rows = store.usage(args.key_id, limit=args.limit)
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=2))
        return 0
    # as wide as the longest id: a job's (job_ + 32 hex) ran into the endpoint column at a fixed 34
    width = max([34] + [len(r.request_id or "-") + 2 for r in rows])
    print(f"{'TIME':<34}{'KIND':<8}{'AMOUNT':>7}  {'REQUEST ID':<{width}}ENDPOINT")
    for r in rows:
        print(f"{r.created_at:<34}{r.kind:<8}{r.amount:>7}  {r.request_id or '-':<{width}}{r.endpoint or '-'}")
    return 0


def _run(handler):
    def run(args) -> int:
        try:
            store = open_store()
        except (StorageUnavailable, ValueError) as exc:
            print(f"error: key store unavailable: {exc}", file=sys.stderr)
            return 2
        try:
            store.release_expired()
            return handler(args, store)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except StorageUnavailable as exc:
            print(f"error: key store unavailable: {exc}", file=sys.stderr)
            return 2
        finally:
            store.close()
    return run


def register(subparsers) -> None:
    p = subparsers.add_parser("keys", help="administer API keys, credits and usage")
    sub = p.add_subparsers(dest="keys_command", metavar="ACTION")
    sub.required = True

    c = sub.add_parser("create", help="create a key and print it once")
    c.add_argument("--name", required=True, help="who the key is for (shown in keys list)")
    c.add_argument("--env", choices=apikeys.ENVIRONMENTS, required=True,
                   help="test or live: part of the key (einv_test_... / einv_live_...), to tell them apart")
    c.add_argument("--credits", type=_non_negative, default=0, help="starting balance (default: 0)")
    c.add_argument("--rate-limit", help="requests per minute for this key, e.g. 60/min (default: service default)")
    c.set_defaults(func=_run(_create))

    ls = sub.add_parser("list", help="list keys (never their secrets)")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=_run(_list))

    r = sub.add_parser("revoke", help="revoke a key")
    r.add_argument("key_id", help="the key id (keys list)")
    r.set_defaults(func=_run(_revoke))

    cr = sub.add_parser("credit", help="add (or with a negative N take back) credits")
    cr.add_argument("key_id", help="the key id (keys list)")
    cr.add_argument("amount", type=int, help="credits to add (negative: to take away)")
    cr.set_defaults(func=_run(_credit))

    u = sub.add_parser("usage", help="the key's ledger")
    u.add_argument("key_id", help="the key id (keys list)")
    u.add_argument("--json", action="store_true", help="print JSON")
    u.add_argument("--limit", type=int, default=1000, help="newest ledger entries shown (default: 1000)")
    u.set_defaults(func=_run(_usage))
