"""`pipeline keys ...`: API key administration on the configured store (no admin HTTP surface).

  pipeline keys create --name N --env test|live --credits N [--rate-limit N/min]   prints the key once
  pipeline keys list [--json]
  pipeline keys revoke KEYID
  pipeline keys credit KEYID N        (N may be negative to take credits back; a balance stays in 0..10**15)
  pipeline keys usage KEYID [--json]  the ledger: top-ups and charges with request id and endpoint
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict

from pipeline.service import apikeys
from pipeline.service.platform import ConfigError, parse_rate
from pipeline.storage import StorageUnavailable, open_store
from pipeline.storage.store import MAX_BALANCE

# The per-key limit is an INTEGER column: a larger one was a traceback on PostgreSQL (integer out of range).
MAX_RATE_LIMIT = 2**31 - 1


def _bounded(low: int, high: int, what: str):
    """An argparse type: an integer in low..high. Out of range was a traceback (an overflow in the database) or, for
    a top-up past 2**63 on SQLite, a balance turned into a rounded REAL."""
    def convert(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(text)
        return value
    convert.__name__ = f"{what} ({low}..{high})"  # argparse names the type in its error message
    return convert


_non_negative = _bounded(0, MAX_BALANCE, "credits")


def _per_minute(text: str) -> int:
    limit, window = parse_rate(text if "/" in text else f"{text}/min")
    if window != 60:
        raise ConfigError("per-key rate limits are given per minute: N/min")
    if limit > MAX_RATE_LIMIT:
        raise ConfigError(f"rate limit {text!r}: at most {MAX_RATE_LIMIT}/min")
    return limit


def _name(text: str) -> str:
    """A key's name is a line of `keys list`: not empty, no control characters (a newline or an escape sequence
    would forge rows or rewrite the terminal of whoever lists the keys)."""
    if not text.strip() or any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
        raise ValueError(text)
    return text


_name.__name__ = "name (not empty, no control characters)"


def _create(args, store) -> int:
    rate = _per_minute(args.rate_limit) if args.rate_limit else None
    key_id, token, secret_hash = apikeys.mint(args.env)
    key = store.create_key(key_id, args.name, args.env, secret_hash, args.credits, rate)
    print(token)
    print(f"key id {key.key_id}, {key.balance} credit{'' if key.balance == 1 else 's'}, rate limit "
          f"{f'{rate}/min' if rate else 'service default'}. The key is shown only now; store it safely.",
          file=sys.stderr)
    return 0


def _list(args, store) -> int:
    keys = store.list_keys()
    if args.json:
        print(json.dumps([_camel(key, "secret_hash") for key in keys], indent=2))
        return 0
    # columns as wide as their widest value: a large balance or limit ran into the next column
    cw = max([9] + [len(str(k.balance)) for k in keys])
    rw = max([9] + [len(str(k.rate_limit or "default")) + 1 for k in keys])
    print(f"{'KEY ID':<14}{'ENV':<6}{'CREDITS':>{cw}}  {'RATE/MIN':<{rw}}{'STATE':<9}{'CREATED':<27}NAME")
    for k in keys:
        print(f"{k.key_id:<14}{k.env:<6}{k.balance:>{cw}}  {str(k.rate_limit or 'default'):<{rw}}"
              f"{'revoked' if k.revoked else 'active':<9}{k.created_at[:26]:<27}{k.name}")
    return 0


def _camel(row, *left_out: str) -> dict:
    """A stored row as --json prints it: its fields named as the API and the access log name theirs (keyId,
    createdAt, requestId, rateLimit), so that one jq script reads them all alike."""
    return {_CAMEL.sub(lambda m: m[1].upper(), k): v for k, v in asdict(row).items() if k not in left_out}


_CAMEL = re.compile(r"_([a-z])")


def _revoke(args, store) -> int:
    if store.get_key(args.key_id) is None:
        _unknown(args.key_id)
        return 2
    if not store.revoke_key(args.key_id):
        print(f"key {args.key_id} was already revoked", file=sys.stderr)
        return 0
    print(f"revoked {args.key_id}")
    return 0


def _credit(args, store) -> int:
    key = store.get_key(args.key_id)
    if key is None:
        _unknown(args.key_id)
        return 2
    if args.amount == 0:  # nothing to book: no ledger row of 0
        print(f"{args.key_id}: balance {key.balance}")
        return 0
    balance = store.add_credits(args.key_id, args.amount)
    if balance is None:  # read again: requests may have spent credits meanwhile
        now = store.get_key(args.key_id)
        print(f"{args.key_id}: the balance ({now.balance if now else key.balance}) would leave 0..{MAX_BALANCE}; "
              "nothing changed", file=sys.stderr)
        return 2
    print(f"{args.key_id}: balance {balance}")
    return 0


def _usage(args, store) -> int:
    if store.get_key(args.key_id) is None:
        _unknown(args.key_id)
        return 2
    rows = store.usage(args.key_id, limit=args.limit)
    if args.json:
        print(json.dumps([_camel(r) for r in rows], indent=2))
        return 0
    # as wide as the longest id: a job's (job_ + 32 hex) ran into the endpoint column at a fixed 34
    width = max([34] + [len(r.request_id or "-") + 2 for r in rows])
    print(f"{'TIME':<34}{'KIND':<8}{'AMOUNT':>7}  {'REQUEST ID':<{width}}ENDPOINT")
    for r in rows:
        print(f"{r.created_at:<34}{r.kind:<8}{r.amount:>7}  {r.request_id or '-':<{width}}{r.endpoint or '-'}")
    return 0


def _unknown(key_id: str) -> None:
    """A key id no key has, said with where the ids are. A whole key given for its id (a newcomer's first try) is
    not echoed: its secret would stand in the terminal's scrollback and in logs."""
    if key_id.startswith(f"{apikeys.PREFIX}_"):
        parts = apikeys.token_parts(key_id)
        shown = f"{parts[1]}; " if parts else ""
        print(f"pipeline keys: that is a key, not its id: give its id ({shown}`pipeline keys list` shows them)",
              file=sys.stderr)
        return
    print(f"pipeline keys: unknown key id {key_id!r}: `pipeline keys list` shows the ids", file=sys.stderr)


def _unavailable(exc: Exception) -> str:
    """The store's one-line reason and, for the operator at the console, the driver's own first line beneath it
    (`database "einvoice" does not exist`, a refused connection), which the service's answers leave out."""
    cause = str(exc.__cause__ or "").strip().splitlines()
    return f"error: key store unavailable: {exc}" + (f" ({cause[0].strip()})" if cause else "")


def _run(handler):
    def run(args) -> int:
        try:
            store = open_store()
        except (StorageUnavailable, ValueError) as exc:
            print(_unavailable(exc), file=sys.stderr)
            return 2
        try:
            store.release_expired()
            return handler(args, store)
        except ConfigError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except StorageUnavailable as exc:
            print(_unavailable(exc), file=sys.stderr)
            return 2
        finally:
            store.close()
    return run


def register(subparsers) -> None:
    p = subparsers.add_parser("keys", help="administer API keys, credits and usage")
    sub = p.add_subparsers(dest="keys_command", metavar="ACTION")
    sub.required = True

    c = sub.add_parser("create", help="create a key and print it once")
    c.add_argument("--name", required=True, type=_name, help="who the key is for (shown in keys list)")
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
    cr.add_argument("amount", type=_bounded(-MAX_BALANCE, MAX_BALANCE, "credits"),
                    help="credits to add (negative: to take away)")
    cr.set_defaults(func=_run(_credit))

    u = sub.add_parser("usage", help="the key's ledger")
    u.add_argument("key_id", help="the key id (keys list)")
    u.add_argument("--json", action="store_true", help="print JSON")
    u.add_argument("--limit", type=_bounded(1, 10**9, "entries"), default=1000,
                   help="newest ledger entries shown (default: 1000)")
    u.set_defaults(func=_run(_usage))
