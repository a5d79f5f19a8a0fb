"""`pipeline serve [--host H] [--port P] [--workers N]`: the service under gunicorn.

Workers are processes (default: one per CPU core; the GIL is held during a Saxon transform, so threads
would not add throughput). The app is built in each worker after fork (no preload), so Saxon processors,
compiled stylesheets and database connections are never inherited across fork; each worker then compiles
the active rule packs' stylesheets before taking traffic. SIGTERM/SIGINT is a graceful shutdown: workers
finish the requests in flight (up to --graceful-timeout seconds).
"""
from __future__ import annotations

import json
import logging
import os
import sys

log = logging.getLogger("pipeline.serve")


def configure_logging() -> None:
    """JSON access lines (pipeline.access) and service errors to stderr, one message per line."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger("pipeline")
    if not any(getattr(h, "_pipeline", False) for h in root.handlers):
        handler._pipeline = True
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    root.propagate = False


def _open_store() -> None:
    from pipeline.service.platform import shared

    shared().store()


def _call(module: str, name: str):
    def step() -> None:
        import importlib

        getattr(importlib.import_module(module), name)()
    return step


def warm_worker(worker=None) -> None:
    """In each worker after fork: open the store connection, compile the active rule packs (the validation
    engine's `warm_up`), the generation stylesheets, the Factur-X profile rules and WeasyPrint with the PDF/A
    checker, so that no request pays for them (about 5-6 s)."""
    steps = [("key store", _open_store), ("rule packs", _call("pipeline.check.engine", "warm_up"))]
    steps += [("generation stylesheets", _call("pipeline.write.transform", "warm_up")),
              ("ZUGFeRD rendering and PDF checks", _call("pipeline.flows.generate_zugferd", "warm_up"))]
    for what, step in steps:
        try:
            step()
        except Exception as exc:  # a cold worker still serves; /readyz says whether it can
            log.warning("worker %s: %s not warmed: %s", os.getpid(), what, exc)


def _json_protocol_error(sock, status_int, reason, mesg) -> None:
    """Gunicorn answers requests it cannot parse (bad request line, 414, 431, ...) itself, before the app sees
    them; this replaces its HTML page with our ErrorResponse so that every non-2xx has one shape."""
    from gunicorn.util import write_nonblock

    from pipeline.errors import STATUS_TEXT
    from pipeline.service.requestid import accept_or_new

    request_id = accept_or_new(None)
    body = json.dumps({
        "requestId": request_id,
        "status": STATUS_TEXT.get(status_int, "bad_request" if status_int < 500 else "internal_error"),
        "errorCode": "MALFORMED_HTTP_REQUEST" if status_int < 500 else "INTERNAL_ERROR",
        "message": f"{reason}: the HTTP request could not be parsed." if status_int < 500 else "Internal error.",
        "errors": [],
    }).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"X-Request-Id: {request_id}\r\nContent-Length: {len(body)}\r\n\r\n").encode("latin-1")
    write_nonblock(sock, head + body)


def run(host: str, port: int, workers: int, timeout: int = 120, graceful_timeout: int = 30,
        warm: bool = True) -> None:
    from gunicorn.app.base import BaseApplication

    class Service(BaseApplication):
        def load_config(self):
            settings = {
                "bind": f"{host}:{port}",
                "workers": workers,
                "worker_class": "sync",
                "timeout": timeout,
                "graceful_timeout": graceful_timeout,
                "accesslog": None,  # our middleware writes one JSON line per request
                "errorlog": "-",
                "loglevel": "info",
                "proc_name": "einvoice-pipeline",
                "preload_app": False,
                "control_socket_disable": True,  # several instances may run on one host
            }
            if warm:
                settings["post_worker_init"] = warm_worker
            for key, value in settings.items():
                self.cfg.set(key, value)

        def load(self):
            from pipeline.service.app import create_app

            return create_app()

    import gunicorn.util

    gunicorn.util.write_error = _json_protocol_error
    configure_logging()
    Service().run()


def _serve(args) -> int:
    run(args.host, args.port, args.workers, graceful_timeout=args.graceful_timeout, warm=not args.no_warm)
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the HTTP service under gunicorn")
    p.add_argument("--host", default=os.environ.get("EINVOICE_HOST", "127.0.0.1"))
    p.add_argument("--port", type=int, default=int(os.environ.get("EINVOICE_PORT", "8000")))
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="worker processes (default: CPU cores)")
    p.add_argument("--graceful-timeout", type=int, default=30,
                   help="seconds workers get to finish requests in flight on shutdown")
    p.add_argument("--no-warm", action="store_true", help="do not compile rule packs when a worker starts")
    p.set_defaults(func=_serve)
