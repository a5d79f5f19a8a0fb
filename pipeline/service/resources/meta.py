"""Service resources without authentication or credits: liveness, readiness and the OpenAPI document."""
from __future__ import annotations

import json
import logging

import falcon

from pipeline.check import packs
from pipeline.errors import ApiError

log = logging.getLogger("pipeline.service")


class Health:
    auth = False

    def on_get(self, req, resp):
        resp.media = {"status": "ok"}


def rule_packs_ready() -> dict:
    """Every spec has an active, verified rule pack installed."""
    return {spec: packs.latest_active(spec).version for spec in packs.SPECS}


class Ready:
    auth = False

    def on_get(self, req, resp):
        from pipeline.service.platform import shared

        checks, problems = {}, []
        try:
            checks["rulePacks"] = rule_packs_ready()
        except Exception as exc:  # not installed, modified, or the rules module is missing
            problems.append(f"rule packs: {exc}")
        try:
            (getattr(req.context, "platform", None) or shared()).store().ping()
            checks["storage"] = "ok"
        except Exception as exc:
            log.error("readiness: storage unreachable: %s", exc)
            problems.append("storage: unreachable")
        if problems:
            raise ApiError(503, "NOT_READY", "; ".join(problems), headers={"Retry-After": "5"})
        resp.media = {"status": "ready", **checks}


class OpenApi:
    auth = False

    def __init__(self, app: falcon.App):
        self.app = app
        self._body: bytes | None = None

    def mounted_paths(self) -> set[str]:
        from falcon.inspect import inspect_routes

        return {route.path for route in inspect_routes(self.app)}

    def on_get(self, req, resp):
        if self._body is None:
            from pipeline.service.openapi import build
            from pipeline.service.platform import shared

            try:
                _, config = shared().limiter_and_config()
            except Exception:
                config = None
            self._body = json.dumps(build(self.mounted_paths(), config)).encode()
        resp.content_type = falcon.MEDIA_JSON
        resp.data = self._body


def add_routes(app: falcon.App) -> None:
    app.add_route("/healthz", Health())
    app.add_route("/readyz", Ready())
    app.add_route("/v1/openapi.json", OpenApi(app))
