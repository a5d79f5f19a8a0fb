"""One structured JSON log line per request on the `pipeline.access` logger.

Fields: method, path, status, durationMs, keyId (the public key id, never the secret), requestId,
creditsCharged (what the ledger holds for this request), and chargePending when the charge could not reach the
ledger yet and is owed (pipeline.service.platform). The query string and headers are not logged. Every request has
its line: those the app answers here, those `pipeline serve`'s worker refuses itself (`front_line`, "front": true)
and one in a worker that was killed before it answered (`workerKilled`, written by the master).
"""
from __future__ import annotations

import json
import logging
import time

log = logging.getLogger("pipeline.access")
_encode = json.JSONEncoder(separators=(",", ":")).encode  # json.dumps(separators=...) builds an encoder per call


class AccessLogMiddleware:
    def process_request(self, req, resp):
        req.context.started = time.perf_counter()

    def process_response(self, req, resp, resource, req_succeeded):
        if not log.isEnabledFor(logging.INFO):
            return
        ctx = req.context
        started = getattr(ctx, "started", None)
        line = {
            "event": "request",
            "method": req.method,
            "path": req.path,
            "status": resp.status_code,
            "durationMs": round((time.perf_counter() - started) * 1000, 3) if started else None,
            "keyId": getattr(ctx, "key_id", None),
            "requestId": getattr(ctx, "request_id", None),
            "creditsCharged": getattr(ctx, "credits_charged", 0),
        }
        if getattr(ctx, "charge_pending", 0):
            line["chargePending"] = ctx.charge_pending
        write(line)


def write(line: dict) -> None:
    """One access line; also for the requests the HTTP worker answers itself (`pipeline.cli.serve`) and those a
    killed worker never answered (written by the master)."""
    # the record straight to the handlers: Logger.info would look up the caller's file and line (findCaller),
    # which no access line shows (a third of the logging's CPU per line: 11.9 -> 8.2 us on a loaded machine)
    log.handle(log.makeRecord(log.name, logging.INFO, __file__, 0, _encode(line), None, None))


def front_line(method: str | None, path: str | None, status: int | None, seconds: float | None,
               request_id: str | None, **more) -> None:
    """The access line of a request the app never answered: refused by the HTTP worker itself (400, 408, 413,
    431, 505, 503), or in a worker that was killed (`status` None, `workerKilled`)."""
    if log.isEnabledFor(logging.INFO):
        write({"event": "request", "method": method, "path": path, "status": status,
               "durationMs": None if seconds is None else round(seconds * 1000, 3), "keyId": None,
               "requestId": request_id, "creditsCharged": 0, **more})
