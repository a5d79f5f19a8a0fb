"""GET / and GET /docs over HTTP (pipeline.service.resources.web): served without a key and for nothing, in English
or German, with the security headers; every script and stylesheet they name is ours (no CDN, no inline script) and
answers with its content type and cache headers. The browser suite (test_web_browser.py) drives the pages."""
from __future__ import annotations

import gzip
import json
import re

import pytest
import requests

from test_platform_helpers import cli, serve_with_key

from pipeline.service.resources.web import CSP, language, strings, takes_gzip

SCRIPT = re.compile(r"<script\b([^>]*)>(.*?)</script>", re.S)
ASSET = re.compile(r'<(?:script|link)\b[^>]*(?:src|href)="([^"]+)"')


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server, env, token = serve_with_key(tmp_path_factory.mktemp("web-pages"), "web", 5, workers=1, warm=False)
    yield server, env, token
    server.stop()


def test_strings_exist_in_both_languages():
    both = strings()
    assert set(both) == {"en", "de"} and set(both["en"]) == set(both["de"])
    tables = ("errors", "swagger", "convert_words", "json_reader", "messages", "swagger_tags")
    assert all(both["de"][k].strip() for k in both["de"] if k not in tables)
    # the service's error codes, Swagger UI's words, a conversion's fixed words, the JSON reader's sentences, a
    # message the service words for one case of a code and the API reference's group names in German (the English
    # page shows them as they are)
    for table in tables:
        assert both["en"][table] == {} and all(v.strip() for v in both["de"][table].values())
    assert {"NOT_AN_EINVOICE", "INVALID_API_KEY", "VALIDATION_FAILED"} <= set(both["de"]["errors"])


class _Req:
    def __init__(self, lang=None, accept=None):
        self._lang, self._accept = lang, accept

    def get_param(self, name):
        return self._lang

    def get_header(self, name):
        return self._accept


@pytest.mark.parametrize("lang, accept, expected", [
    (None, None, "en"), (None, "de-DE,de;q=0.9,en;q=0.8", "de"), (None, "fr-FR, en;q=0.5, de;q=0.7", "de"),
    (None, "de;q=0, en", "en"), ("de", "en", "de"), ("EN", "de", "en"), ("fr", "de", "de"), (None, "de;q=x", "en")])
def test_language_from_query_then_accept_language(lang, accept, expected):
    assert language(_Req(lang, accept)) == expected


def test_takes_gzip():
    assert takes_gzip("gzip, deflate, br") and takes_gzip("*") and takes_gzip("br;q=1, gzip;q=0.5")
    assert not takes_gzip(None) and not takes_gzip("gzip;q=0") and not takes_gzip("identity")


def test_pages_need_no_key_and_send_the_security_headers(live):
    server, _, _ = live
    for path in ("/", "/docs"):
        r = requests.get(server.url + path, timeout=30)
        assert r.status_code == 200 and r.headers["Content-Type"] == "text/html; charset=utf-8"
        assert r.headers["Content-Security-Policy"] == CSP
        directives = dict(d.strip().split(" ", 1) for d in CSP.split(";"))
        assert directives["script-src"] == "'self'" and directives["frame-ancestors"] == "'none'"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "no-referrer"
        # no inline script: every <script> loads a file of ours, or is a JSON data block (never executed)
        scripts = SCRIPT.findall(r.text)
        assert scripts
        for attributes, body in scripts:
            assert ('src="/static/' in attributes and not body.strip()) or 'type="application/json"' in attributes


def test_every_asset_is_ours_with_type_and_cache_headers(live):
    server, _, _ = live
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml"}
    seen = set()
    for path in ("/", "/docs"):
        for url in ASSET.findall(requests.get(server.url + path, timeout=30).text):
            assert url.startswith("/static/"), url  # same origin: nothing from a CDN
            seen.add(url)
            r = requests.get(server.url + url, timeout=30)
            assert r.status_code == 200, url
            assert r.headers["Content-Type"] == types[url.split("?")[0][url.rfind("."):]]
            assert r.headers["X-Content-Type-Options"] == "nosniff"
            etag = r.headers["ETag"]
            assert url.endswith("?v=" + etag.strip('"'))
            assert r.headers["Cache-Control"] == "public, max-age=31536000, immutable"
            again = requests.get(server.url + url, headers={"If-None-Match": etag}, timeout=30)
            assert again.status_code == 304 and not again.content
    assert {"swagger-ui-bundle.js", "web.js", "favicon.svg"} <= {u.split("?")[0].rsplit("/", 1)[1] for u in seen}
    # without the hash: a short cache; gzip when asked (the Swagger UI bundle is 1.5 MB)
    r = requests.get(server.url + "/static/swagger-ui/swagger-ui-bundle.js", headers={"Accept-Encoding": "identity"},
                     timeout=30)
    assert r.headers["Cache-Control"] == "public, max-age=300" and "Content-Encoding" not in r.headers
    packed = requests.get(server.url + "/static/swagger-ui/swagger-ui-bundle.js", headers={"Accept-Encoding": "gzip"},
                          timeout=30, stream=True)
    assert packed.headers["Content-Encoding"] == "gzip"
    raw = packed.raw.read()
    assert len(raw) < len(r.content) / 2 and gzip.decompress(raw) == r.content


def test_unknown_files_are_404_and_nothing_outside_the_folders(live):
    server, _, _ = live
    for path in ("/static/nope.js", "/static/..%2Fweb.py", "/static/swagger-ui/index.html",
                 "/static/swagger-ui/oauth2-redirect.html", "/examples/..%2F..%2Fpyproject.toml", "/examples/golden"):
        r = requests.get(server.url + path, timeout=30)
        assert r.status_code == 404, path
        assert r.json()["errorCode"] == "NOT_FOUND"


def test_examples_are_the_fixtures(live):
    from test_platform_helpers import REPO

    server, _, _ = live
    page = requests.get(server.url + "/", timeout=30).text
    names = sorted(p.name for p in (REPO / "fixtures").glob("*.json"))
    assert names and all(f'<option value="{n}">' in page for n in names)
    r = requests.get(server.url + "/examples/invoice-all-fields.json", timeout=30)
    assert r.headers["Content-Type"] == "application/json"
    assert r.json() == json.loads((REPO / "fixtures" / "invoice-all-fields.json").read_text())


def test_language_of_the_page(live):
    server, _, _ = live
    de = requests.get(server.url + "/", headers={"Accept-Language": "de-DE,de;q=0.9"}, timeout=30)
    assert '<html lang="de">' in de.text and strings()["de"]["tab_validate"] in de.text
    assert de.headers["Content-Language"] == "de" and "Accept-Language" in de.headers["Vary"]
    en = requests.get(server.url + "/?lang=en", headers={"Accept-Language": "de"}, timeout=30)
    assert '<html lang="en">' in en.text and strings()["en"]["tab_validate"] in en.text
    docs = requests.get(server.url + "/docs?lang=de", timeout=30)
    assert strings()["de"]["docs_title"] in docs.text


def test_pages_cost_nothing_and_carry_no_key(live):
    server, env, token = live
    for path in ("/", "/docs", "/static/web.js", "/examples/credit-note.json"):
        requests.get(server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    lines = [json.loads(x) for x in server.log_path.read_text().splitlines() if x.startswith('{"event"')]
    pages = [x for x in lines if x["path"] in ("/", "/docs") or x["path"].startswith(("/static/", "/examples/"))]
    assert pages and all(x["keyId"] is None and x["creditsCharged"] == 0 for x in pages)
    listing = cli(env, "keys", "list").stdout
    assert re.search(r"\b5\b", listing), listing  # the balance the key was created with


@pytest.mark.parametrize("lang", ["en", "de"])
def test_the_file_label_says_what_the_input_takes(live, lang):
    """The validate tab's file input takes e-mail (.eml, .mbox) and checks Peppol and French invoices, but its label
    said "XML or PDF" and its hint named neither: a newcomer with an invoice in a mail did not know to drop it."""
    server, _, _ = live
    page = requests.get(f"{server.url}/?lang={lang}", timeout=30).text
    accept = re.search(r'<input id="file" type="file" accept="([^"]+)"', page).group(1)
    assert ".eml" in accept and ".mbox" in accept
    label = re.search(r'<label for="file">([^<]+)</label>', page).group(1)
    hint = re.search(r'<p id="drop-hint" class="hint">([^<]+)</p>', page).group(1)
    assert {"en": "e-mail", "de": "E-Mail"}[lang] in label
    assert ".eml" in hint and ".mbox" in hint and "Peppol" in hint and "ZIP" in hint
