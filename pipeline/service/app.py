"""Build the Falcon WSGI app. Heavy objects (Saxon, compiled stylesheets, database connections) are created
lazily in each worker.

Middleware order: request id -> access log -> security headers on HTML answers -> time budget -> platform (auth,
rate limit, credits). Responses pass back in reverse, so the access log sees the key id and the credits the platform charged.
"""
from __future__ import annotations

import importlib
import pkgutil

import falcon

from pipeline.service import errors, platform as platform_layer, resources
from pipeline.service.accesslog import AccessLogMiddleware
from pipeline.service.htmlheaders import SecurityHeadersMiddleware
from pipeline.service.requestid import RequestIdMiddleware
from pipeline.service.timebudget import TimeBudgetMiddleware


def platform_middleware(backends=None) -> list:
    return platform_layer.middleware(backends)


class _App(falcon.App):
    """Every GET route answers HEAD too (RFC 9110 9.3.2; load balancers probe /healthz with it): the GET
    responder runs and Falcon sends its headers without the body."""

    def add_route(self, uri_template, resource, **kwargs):
        suffix = kwargs.get("suffix")
        get, head = (f"on_get_{suffix}", f"on_head_{suffix}") if suffix else ("on_get", "on_head")
        if hasattr(resource, get) and not hasattr(resource, head):
            setattr(resource, head, getattr(resource, get))
        super().add_route(uri_template, resource, **kwargs)


def create_app(platform: bool = True, backends=None) -> falcon.App:
    """`platform=False` mounts the stages without auth/credits/rate limits (stage tests and benchmarks).
    `backends` (a pipeline.service.platform.Backends) replaces the store/limiter/config read from settings."""
    mw = [RequestIdMiddleware(), AccessLogMiddleware(), SecurityHeadersMiddleware(), TimeBudgetMiddleware()]
    mw += platform_middleware(backends) if platform else []
    app = _App(middleware=mw)
    app.req_options.strip_url_path_trailing_slash = True
    errors.install(app)
    for info in sorted(pkgutil.iter_modules(resources.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{resources.__name__}.{info.name}")
        add_routes = getattr(module, "add_routes", None)
        if add_routes is not None:
            add_routes(app)
    return app
