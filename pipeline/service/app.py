"""Build the Falcon WSGI app. Heavy objects (Saxon, compiled stylesheets, database connections) are created
lazily in each worker.

Middleware order: request id -> access log -> security headers on HTML answers -> time budget -> methods (OPTIONS
and 405 by the route alone) -> platform (auth, rate limit, credits). Responses pass back in reverse, so the access
log sees the key id and the credits the platform charged.
"""
from __future__ import annotations

import importlib
import pkgutil

import falcon
from falcon.constants import COMBINED_METHODS
from falcon.routing import CompiledRouter

from pipeline.service import errors, platform as platform_layer, resources
from pipeline.service.accesslog import AccessLogMiddleware
from pipeline.service.htmlheaders import SecurityHeadersMiddleware
from pipeline.service.requestid import RequestIdMiddleware
from pipeline.service.timebudget import TimeBudgetMiddleware


def platform_middleware(backends=None) -> list:
    return platform_layer.middleware(backends)


class MethodsMiddleware:
    """What a route answers is decided by its path and method alone, before any credentials (Fetch standard: a
    browser's CORS preflight, OPTIONS, carries none): OPTIONS answers 200 with the route's Allow and no body, a
    method the route does not answer is a 405 with the same Allow, whatever the key state (both were a 401 on
    authenticated routes). No Access-Control-* headers: the service answers no cross-origin requests (the pages
    are served from its own origin). `allowed`: uri template -> the methods its route answers."""

    def __init__(self, allowed: dict[str, tuple[str, ...]]):
        self.allowed = allowed

    def process_resource(self, req, resp, resource, params):
        methods = self.allowed.get(req.uri_template)
        if methods is None or (req.method in methods and req.method != "OPTIONS"):
            return
        if req.method != "OPTIONS":
            raise falcon.HTTPMethodNotAllowed(list(methods))
        resp.status = falcon.HTTP_200
        resp.set_header("Allow", ", ".join(methods))
        resp.content_length = 0
        resp.complete = True


class _App(falcon.App):
    """Every GET route answers HEAD too (RFC 9110 9.3.2; load balancers probe /healthz with it): the GET
    responder runs and Falcon sends its headers without the body. `allowed` holds what each route answers
    (OPTIONS included: Falcon's own OPTIONS left it out of Allow, its 405 listed it)."""

    def __init__(self, allowed: dict[str, tuple[str, ...]], **kwargs):
        self.router = kwargs.setdefault("router", CompiledRouter())
        self.allowed = allowed
        super().__init__(**kwargs)

    def add_route(self, uri_template, resource, **kwargs):
        suffix = kwargs.get("suffix")
        get, head = (f"on_get_{suffix}", f"on_head_{suffix}") if suffix else ("on_get", "on_head")
        if hasattr(resource, get) and not hasattr(resource, head):
            setattr(resource, head, getattr(resource, get))
        end = f"_{suffix}" if suffix else ""
        self.allowed[uri_template] = tuple(m for m in COMBINED_METHODS if m == "OPTIONS"
                                           or hasattr(resource, f"on_{m.lower()}{end}"))
        super().add_route(uri_template, resource, **kwargs)

    def __call__(self, env, start_response):
        if env.get("REQUEST_METHOD") != "OPTIONS":
            return super().__call__(env, start_response)

        def start(status, headers, exc_info=None):
            # Falcon types every answer but a 204/304 with its default media type: an OPTIONS answer without a body
            # has nothing to type (an error's JSON body keeps its type)
            if ("content-length", "0") in ((n.lower(), v) for n, v in headers):
                headers = [(n, v) for n, v in headers if n.lower() != "content-type"]
            return start_response(status, headers, exc_info)

        return super().__call__(env, start)

    def allow(self, path_info: str) -> tuple[str, tuple[str, ...] | None]:
        """(the request's path, the methods its route answers) for a WSGI PATH_INFO, read as Falcon's Request reads
        it (UTF-8 tunnelled through latin-1, a trailing slash dropped); None for no route there (the app's 404). For
        `pipeline serve`'s worker, which answers a 405 before it reads the request's body."""
        path = path_info or "/"
        if not path.isascii():
            path = path.encode("latin-1").decode("utf-8", "replace")
        if self.req_options.strip_url_path_trailing_slash and len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        found = self.router.find(path)
        return path, None if found is None else self.allowed.get(found[3])


def create_app(platform: bool = True, backends=None) -> falcon.App:
    """`platform=False` mounts the stages without auth/credits/rate limits (stage tests and benchmarks).
    `backends` (a pipeline.service.platform.Backends) replaces the store/limiter/config read from settings."""
    allowed: dict[str, tuple[str, ...]] = {}
    mw = [RequestIdMiddleware(), AccessLogMiddleware(), SecurityHeadersMiddleware(), TimeBudgetMiddleware(),
          MethodsMiddleware(allowed)]
    mw += platform_middleware(backends) if platform else []
    app = _App(allowed, middleware=mw)
    app.req_options.strip_url_path_trailing_slash = True
    errors.install(app)
    for info in sorted(pkgutil.iter_modules(resources.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{resources.__name__}.{info.name}")
        add_routes = getattr(module, "add_routes", None)
        if add_routes is not None:
            add_routes(app)
    return app
