"""Service resources without authentication or credits: liveness, readiness and the OpenAPI document (in English,
or in German with `?lang=de` or Accept-Language, as the pages choose their language)."""
from __future__ import annotations

import json
import logging

import falcon

from pipeline.check import packs
from pipeline.errors import ApiError
from pipeline.service.openapi import build
from pipeline.service.openapi_text import Texts
from pipeline.service.platform import shared
from pipeline.service.resources.web import language
from pipeline.settings import get_settings

log = logging.getLogger("pipeline.service")


class Health:
    auth = False

    def on_get(self, req, resp):
        resp.media = {"status": "ok"}


def rule_packs_ready() -> dict:
    """Every spec has an active, verified rule pack installed."""
    return {spec: packs.latest_active(spec).version for spec in packs.SPECS}


def dependencies_ready(backends, timeout: float) -> tuple[dict, list]:
    """What every API request needs besides the rule packs: the key and credit store and the rate limiter
    (with its configuration). Each must answer within `timeout` where the backend can bound a call."""
    checks, problems = {}, []
    try:
        backends.store().ping(timeout=timeout)
        checks["storage"] = "ok"
    except Exception as exc:
        log.error("readiness: storage unreachable: %s", exc)
        problems.append("storage: unreachable")
    try:
        limiter, _ = backends.limiter_and_config()
        limiter.ping(timeout=timeout)
        checks["rateLimiter"] = "ok"
    except Exception as exc:
        log.error("readiness: rate limiter unavailable: %s", exc)
        problems.append("rate limiter: unavailable")
    return checks, problems


class _Checker:
    """Runs the dependency checks on one thread per process, so that /readyz answers within its own timeout
    (EINVOICE_READY_TIMEOUT, default 1 s) even while a connect is still waiting on a silent network. A check
    still running from an earlier call is not started twice: the call answers 503 at once."""

    def __init__(self):
        self._pid = None
        self._pool = None
        self._running = None

    def run(self, backends, timeout: float) -> tuple[dict, list]:
        import os
        from concurrent.futures import ThreadPoolExecutor, TimeoutError as FutureTimeout

        if self._pid != os.getpid():
            self._pid, self._pool, self._running = os.getpid(), ThreadPoolExecutor(1, "readyz"), None
        if self._running is not None and not self._running.done():
            return {}, ["storage or rate limiter: an earlier check has not answered yet"]
        self._running = self._pool.submit(dependencies_ready, backends, timeout)
        try:
            return self._running.result(timeout + 0.2)
        except FutureTimeout:
            log.error("readiness: no answer from storage or rate limiter within %s s", timeout)
            return {}, [f"storage or rate limiter: no answer within {timeout:g} s"]


class Ready:
    auth = False

    def __init__(self):
        self.checker = _Checker()

    def on_get(self, req, resp):
        checks, problems = {}, []
        try:
            checks["rulePacks"] = rule_packs_ready()
        except Exception as exc:  # not installed, modified, or the rules module is missing
            problems.append(f"rule packs: {exc}")
        backends = getattr(req.context, "platform", None) or shared()
        found, missing = self.checker.run(backends, get_settings().ready_timeout)
        checks.update(found)
        problems += missing
        if problems:
            raise ApiError(503, "NOT_READY", "; ".join(problems), headers={"Retry-After": "5"})
        resp.media = {"status": "ready", **checks}


class OpenApi:
    auth = False

    def __init__(self, app: falcon.App):
        self.app = app
        self._body: dict[str, bytes] = {}   # per language

    def mounted_paths(self) -> set[str]:
        from falcon.inspect import inspect_routes

        return {route.path for route in inspect_routes(self.app)}

    def on_get(self, req, resp):
        lang = language(req)
        if lang not in self._body:
            try:
                _, config = shared().limiter_and_config()
            except Exception:
                config = None
            texts = Texts(lang)
            self._body[lang] = json.dumps(build(self.mounted_paths(), config, texts)).encode()
            if texts.missing:   # tests/test_openapi_de.py lists them; the document shows them in English
                log.warning("OpenAPI document (%s): %d texts without translation, e.g. %r", lang,
                            len(texts.missing), texts.missing[0][:80])
        resp.content_type = falcon.MEDIA_JSON
        resp.set_header("Content-Language", lang)
        resp.set_header("Vary", "Accept-Language")
        resp.data = self._body[lang]


def add_routes(app: falcon.App) -> None:
    app.add_route("/healthz", Health())
    app.add_route("/readyz", Ready())
    app.add_route("/v1/openapi.json", OpenApi(app))
