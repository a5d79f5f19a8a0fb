"""The pages for people: GET / (validate a received invoice, generate one from JSON) and GET /docs (the API
reference: Swagger UI over /v1/openapi.json), with their static files and the example requests (fixtures/).

No key and no credits here: every action on the pages is a call of the public API from the browser, with the key
the person entered (kept in the tab's sessionStorage), under the API's own keys, credits and limits.
Pages are rendered on the server (Jinja2, templates/web/) in English or German (`?lang=`, else Accept-Language).
The CSP allows scripts from this origin only (the pages' strings travel in a JSON data block, never executed).
Swagger UI is the static bundle of the swagger-ui-py wheel (Swagger UI 5, which reads OpenAPI 3.1; the
swagger-ui-bundle package ships 4.x, which cannot), served from this process: nothing comes from a CDN.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import falcon

from pipeline.check.detect import page_rules
from pipeline.check.xmlinput import CDAR_NS
from pipeline.errors import REFINES, ApiError
from pipeline.invoice.specs import PROFILES
from pipeline.service.htmlheaders import COMMON
from pipeline.settings import REPO_ROOT, TEMPLATES_DIR, get_settings

WEB_TEMPLATES = TEMPLATES_DIR / "web"
STATIC_DIR = WEB_TEMPLATES / "static"
EXAMPLES_DIR = REPO_ROOT / "fixtures"
STATUS_EXAMPLES = "fr-status-"  # France's lifecycle status requests: the status tab's examples, not invoices
LANGUAGES = ("en", "de")
# The root of France's lifecycle status messages (CDV): "detect from the file" validates such a file as a status
# message (POST /v1/invoice/fr-ctc/status/validate), not as an invoice
STATUS_ROOT = (CDAR_NS, "CrossDomainAcknowledgementAndResponse")
SPECS = ("xrechnung", "en16931", "peppol", "fr-ctc", "zugferd")
SWAGGER_FILES = ("swagger-ui-bundle.js", "swagger-ui.css")
MEDIA_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".json": "application/json",
               ".svg": "image/svg+xml"}

# Styles may be inline: the validation report and the invoice page carry their stylesheet in a <style> element and
# are shown in sandboxed srcdoc frames, which inherit this policy; Swagger UI sets style attributes and draws its
# icons from data: URLs. Scripts may not be inline. No frame loads a URL (srcdoc only), no form is submitted.
CSP = "; ".join((
    "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    "font-src 'self'", "connect-src 'self'", "frame-src 'none'", "base-uri 'none'", "form-action 'none'",
    "frame-ancestors 'none'"))
SECURITY_HEADERS = {"Content-Security-Policy": CSP, **COMMON}  # the static files too (every HTML answer: middleware)
LONG_CACHE = "public, max-age=31536000, immutable"  # asked by content hash (?v=): the URL changes with the file
SHORT_CACHE = "public, max-age=300"
GZIP_AT_LEAST = 2048  # bytes; smaller files are sent as they are


@dataclass(frozen=True)
class Asset:
    data: bytes
    gzipped: bytes | None
    media_type: str
    etag: str


def _load(path: Path) -> Asset:
    data = path.read_bytes()
    media_type = MEDIA_TYPES[path.suffix]
    packed = gzip.compress(data, 9, mtime=0) if len(data) >= GZIP_AT_LEAST else None
    return Asset(data, packed, media_type, hashlib.sha256(data).hexdigest()[:16])


def swagger_dir() -> Path:
    """The swagger-ui-py wheel's static folder, found without importing the package (its handlers are not used)."""
    spec = importlib.util.find_spec("swagger_ui")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("swagger-ui-py is not installed (pip install -e .)")
    return Path(next(iter(spec.submodule_search_locations))) / "static"


class Assets:
    """Files served by name, only those `files()` maps (name -> path), each read once per process."""

    def __init__(self, files):
        self._files, self._cache = files, {}

    def names(self) -> list[str]:
        return sorted(self._files())

    def get(self, name: str) -> Asset:
        asset = self._cache.get(name)
        if asset is None:
            path = self._files().get(name)
            if path is None:
                raise ApiError(404, "NOT_FOUND", f"No file {name!r} here.")
            asset = self._cache[name] = _load(path)
        return asset

    def url(self, prefix: str, name: str) -> str:
        return f"{prefix}/{name}?v={self.get(name).etag}"


def _files(folder: Path, suffixes) -> dict[str, Path]:
    if not folder.is_dir():
        return {}
    return {p.name: p for p in folder.iterdir() if p.is_file() and p.suffix in suffixes}


# Ours, and the invoice page's stylesheets: html.xsl's HTML carries none (WeasyPrint adds it for the PDF), so the page
# links them into the readable invoice it shows (the second holds the rules for narrow screens, which the PDF never
# reads).
PAGE_CSS = ("invoice.css", "invoice-screen.css")
OWN = Assets(lambda: {**_files(STATIC_DIR, MEDIA_TYPES), **{name: TEMPLATES_DIR / name for name in PAGE_CSS}})
SWAGGER = Assets(lambda: {name: swagger_dir() / name for name in SWAGGER_FILES})
EXAMPLES = Assets(lambda: _files(EXAMPLES_DIR, {".json"}))


def language(req: falcon.Request) -> str:
    """`?lang=en|de`, else the first of en / de by the Accept-Language weights, else en."""
    asked = (req.get_param("lang") or "").strip().lower()
    if asked in LANGUAGES:
        return asked
    best, weight = "en", 0.0
    for item in (req.get_header("Accept-Language") or "").split(","):
        tag, *params = item.split(";")
        q = 1.0
        for param in params:
            name, _, value = param.strip().partition("=")
            if name == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        primary = tag.strip().lower().split("-")[0]
        if primary in LANGUAGES and q > weight:
            best, weight = primary, q
    return best


def takes_gzip(accept_encoding: str | None) -> bool:
    """Accept-Encoding names gzip (or *) without q=0."""
    for item in (accept_encoding or "").lower().split(","):
        coding, *params = [part.strip() for part in item.split(";")]
        if coding in ("gzip", "*") and not any(p.replace(" ", "") in ("q=0", "q=0.0", "q=0.00", "q=0.000")
                                                for p in params):
            return True
    return False


@lru_cache(maxsize=1)
def _environment():
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    env = Environment(loader=FileSystemLoader(str(WEB_TEMPLATES)), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.globals.update(static=lambda name: OWN.url("/static", name),
                       swagger=lambda name: SWAGGER.url("/static/swagger-ui", name))
    return env


@lru_cache(maxsize=1)
def strings() -> dict:
    return json.loads((WEB_TEMPLATES / "strings.json").read_text(encoding="utf-8"))


def render_page(template: str, page: str, lang: str) -> str:
    t, settings = strings()[lang], get_settings()
    return _environment().get_template(template).render(
        t=t, lang=lang, page=page, languages=LANGUAGES, specs=SPECS, profiles=list(PROFILES),
        examples=[n for n in EXAMPLES.names() if not n.startswith(STATUS_EXAMPLES)],
        status_examples=[n for n in EXAMPLES.names() if n.startswith(STATUS_EXAMPLES)],
        data={"lang": lang, "strings": t, "invoiceCss": [OWN.url("/static", name) for name in PAGE_CSS],
              "detect": page_rules(), "refines": REFINES, "statusRoot": STATUS_ROOT,
              # the upload limits, so that the page says a file too large before sending it (web.js `tooLarge`)
              "maxUpload": settings.max_upload_bytes, "maxJob": settings.max_job_bytes})


class Page:
    auth = False

    def __init__(self, template: str, page: str):
        self.template, self.page = template, page
        self._rendered: dict[str, str] = {}

    def on_get(self, req, resp):
        lang = language(req)
        if lang not in self._rendered:
            self._rendered[lang] = render_page(self.template, self.page, lang)
        resp.text = self._rendered[lang]
        resp.content_type = "text/html; charset=utf-8"
        resp.set_headers(SECURITY_HEADERS)
        resp.set_header("Content-Language", lang)
        resp.set_header("Vary", "Accept-Language")
        resp.cache_control = ["no-cache"]  # the page names its files by content hash: always ask for the current one


class Static:
    """A file of `assets`: ETag (304 on If-None-Match), cached for a year when asked by its hash, gzip when the
    client takes it."""
    auth = False

    def __init__(self, assets: Assets):
        self.assets = assets

    def on_get(self, req, resp, name):
        asset = self.assets.get(name)
        resp.set_headers(SECURITY_HEADERS)
        resp.etag = asset.etag
        resp.set_header("Cache-Control", LONG_CACHE if req.get_param("v") == asset.etag else SHORT_CACHE)
        resp.set_header("Vary", "Accept-Encoding")
        resp.content_type = asset.media_type
        matches = req.if_none_match or []
        if "*" in matches or asset.etag in matches:
            resp.status = falcon.HTTP_304
            return
        if asset.gzipped is not None and takes_gzip(req.get_header("Accept-Encoding")):
            resp.set_header("Content-Encoding", "gzip")
            resp.data = asset.gzipped
        else:
            resp.data = asset.data


def add_routes(app: falcon.App) -> None:
    app.add_route("/", Page("index.html.j2", "app"))
    app.add_route("/docs", Page("docs.html.j2", "docs"))
    app.add_route("/static/{name}", Static(OWN))
    app.add_route("/static/swagger-ui/{name}", Static(SWAGGER))
    app.add_route("/examples/{name}", Static(EXAMPLES))
