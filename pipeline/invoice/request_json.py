"""Request JSON as data (CLI, golden files, tests): numbers as Decimal, written back exactly as read."""
from __future__ import annotations

import json
from decimal import Decimal


def load_request(body: bytes) -> dict:
    """Request JSON as a dict with numbers as Decimal (so nothing is rounded through float)."""
    return json.loads(body, parse_float=Decimal)


def dump_request(request: dict) -> bytes:
    """Inverse of `load_request`: JSON with every Decimal written exactly as it was read."""
    decimals: list[Decimal] = []

    def mark(value):
        if isinstance(value, dict):
            return {k: mark(v) for k, v in value.items()}
        if isinstance(value, list):
            return [mark(v) for v in value]
        if isinstance(value, Decimal):
            decimals.append(value)
            return f"\x00{len(decimals) - 1}\x00"
        return value

    text = json.dumps(mark(request), ensure_ascii=False, indent=1)
    for i, d in enumerate(decimals):
        text = text.replace(f'"\\u0000{i}\\u0000"', format(d, "f"), 1)
    return text.encode("utf-8")


def with_config(body: bytes, **config) -> bytes:
    """The same request with config values replaced (e.g. syntax="UBL")."""
    request = load_request(body)
    request.setdefault("config", {}).update(config)
    return dump_request(request)
