"""X-Request-Id: keep a valid client value (<= 128 safe characters), otherwise mint a new one."""
from __future__ import annotations

import re
import uuid

_SAFE = re.compile(r"^[A-Za-z0-9._:\-]{1,128}$")


def accept_or_new(value: str | None) -> str:
    if value and _SAFE.match(value):
        return value
    return uuid.uuid4().hex


class RequestIdMiddleware:
    def process_request(self, req, resp):
        req.context.request_id = accept_or_new(req.get_header("X-Request-Id"))

    def process_response(self, req, resp, resource, req_succeeded):
        rid = getattr(req.context, "request_id", None)
        if rid:
            resp.set_header("X-Request-Id", rid)
