"""Build the Falcon WSGI app. Heavy objects (Saxon, compiled stylesheets) are created lazily in each worker."""
from __future__ import annotations

import importlib
import pkgutil

import falcon

from pipeline.service import errors, resources
from pipeline.service.requestid import RequestIdMiddleware


class Health:
    def on_get(self, req, resp):
        resp.media = {"status": "ok"}


def platform_middleware() -> list:
    """Auth, rate limits, credits, access log: the platform layer (pipeline.service.platform)."""
    try:
        from pipeline.service import platform
    except ImportError:  # the platform layer is optional while the service is being assembled
        return []
    return platform.middleware()


def create_app(platform: bool = True) -> falcon.App:
    """`platform=False` mounts the stages without auth/credits/rate limits (stage tests and benchmarks)."""
    mw = [RequestIdMiddleware()] + (platform_middleware() if platform else [])
    app = falcon.App(middleware=mw)
    app.req_options.strip_url_path_trailing_slash = True
    errors.install(app)
    app.add_route("/healthz", Health())
    for info in sorted(pkgutil.iter_modules(resources.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{resources.__name__}.{info.name}")
        add_routes = getattr(module, "add_routes", None)
        if add_routes is not None:
            add_routes(app)
    return app
