"""GET /v1/openapi.json?lang=de: the OpenAPI document with German texts for what a person reads in Swagger UI
(pipeline.service.openapi_text over pipeline/service/openapi_de.json). The same document as the English one, whose
bytes do not change: same paths, operations, parameters, responses, schemas, codes and names, only texts differ.
Every English text shown has a German entry, under every cost configuration, and every entry is still used."""
from __future__ import annotations

import json
import re

import pytest
from falcon.inspect import inspect_routes
from openapi_spec_validator import validate as validate_openapi

from pipeline.service.openapi import build
from pipeline.service.openapi_text import Texts, table
from pipeline.service.platform import PlatformConfig
from test_platform_helpers import Platform, make_store

TEXTS = ("summary", "description")


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    store = make_store("sqlite", tmp_path_factory.mktemp("openapi-de"))
    yield Platform(store)
    store.close()


@pytest.fixture(scope="module")
def docs(platform):
    def get(query="", accept=None):
        r = platform.client.simulate_get("/v1/openapi.json" + query,
                                         headers={"Accept-Language": accept} if accept else {})
        assert r.status_code == 200
        return r
    return get


@pytest.fixture(scope="module")
def mounted(platform):
    return {route.path for route in inspect_routes(platform.app)}


KEPT = ("enum", "const", "default", "example", "examples")


def shown(node, where=(), names=False):
    """(where, text) of every text Swagger UI shows: info.title, summaries and descriptions (not the names in a
    `properties` map, not enum values, examples or `x-` extensions)."""
    if isinstance(node, list):
        for i, value in enumerate(node):
            yield from shown(value, where + (i,))
    elif isinstance(node, dict):
        for key, value in node.items():
            here = where + (key,)
            if names:
                yield from shown(value, here)
            elif isinstance(value, str) and (key in TEXTS or here == ("info", "title")):
                yield here, value
            elif key not in KEPT and not key.startswith("x-"):
                yield from shown(value, here, key == "properties")


def blank(doc):
    """The document without its texts (and without the tags' descriptions, which only the German one has)."""
    doc = json.loads(json.dumps(doc))
    doc.pop("tags", None)
    for where, _ in list(shown(doc)):
        node = doc
        for step in where[:-1]:
            node = node[step]
        node[where[-1]] = ""
    return doc


def test_english_stays_the_default_and_german_is_asked_for(docs):
    english = docs().content
    assert docs("?lang=en").content == english and docs(accept="fr-FR, en;q=0.5").content == english
    assert docs("?lang=en", accept="de-DE,de;q=0.9").content == english
    german = docs("?lang=de")
    assert german.content != english and german.headers["Content-Language"] == "de"
    assert docs(accept="de-DE,de;q=0.9,en;q=0.8").content == german.content
    assert docs().headers["Content-Language"] == "en" and "Accept-Language" in docs().headers["Vary"]
    assert json.loads(english)["info"]["title"] == "E-invoice generation and validation service"
    assert "tags" not in json.loads(english)


def test_german_document_is_valid_openapi_31_and_the_same_but_for_its_texts(docs):
    english, german = json.loads(docs().content), json.loads(docs("?lang=de").content)
    validate_openapi(german)
    assert german["openapi"] == english["openapi"] and german["info"]["version"] == english["info"]["version"]
    assert list(german["paths"]) == list(english["paths"])
    assert list(german["components"]["schemas"]) == list(english["components"]["schemas"])
    assert blank(german) == blank(english)   # operations, parameters, responses, codes, schemas, names: unchanged
    # the tags keep their names (Swagger UI's anchors) and are described, in the order the operations use them
    used = list(dict.fromkeys(t for item in english["paths"].values() for op in item.values() for t in op["tags"]))
    assert [t["name"] for t in german["tags"]] == used and all(t["description"] for t in german["tags"])
    # every text shown differs from the English one, but for those that read the same in German
    same = {text for text, translated in table("de")["texts"].items() if text == translated}
    english_texts = dict(shown(english))
    german_texts = {where: text for where, text in shown(german) if where[0] != "tags"}
    assert english_texts.keys() == german_texts.keys()
    alike = [w for w, text in english_texts.items() if german_texts[w] == text and text not in same and text]
    assert not alike, alike[:20]
    assert not [w for w, text in german_texts.items() if re.search(r"\{(cost|costs|codes|auth|rate|window|checks|"
                                                                     r"statuses|code|what|why)\}", text)]


def test_every_shown_text_has_a_german_entry_and_every_entry_is_used(mounted):
    """A new operation, parameter, response or field whose text has no entry in pipeline/service/openapi_de.json
    fails here, naming the text; so does an entry whose English text is gone (changed in the code)."""
    missing, used = [], set()
    for config in (PlatformConfig(), PlatformConfig(rate_limit=7, rate_window=3600, costs={p: 0 for p in mounted}),
                   PlatformConfig(costs={p: 2 for p in mounted})):
        texts = Texts("de")
        build(mounted, config, texts)
        missing += [text for text in texts.missing if text not in missing]
        used |= texts.used
    assert not missing, "English texts without a German entry in pipeline/service/openapi_de.json:\n" + "\n".join(
        f"  {text!r}" for text in missing)
    stale = sorted(set(table("de")["texts"]) - used)
    assert not stale, "Entries of pipeline/service/openapi_de.json no English text uses any more:\n" + "\n".join(
        f"  {text!r}" for text in stale)


def test_operations_parameters_responses_and_report_fields_read_german(docs):
    d = json.loads(docs("?lang=de").content)
    op = d["paths"]["/v1/invoice/xrechnung/validate"]["post"]
    assert op["summary"] == "XRechnung-XML (CII oder UBL, erkannt) nach den offiziellen XRechnung-Regeln prüfen."
    assert op["description"].startswith("HTTP 200 heißt: Die Prüfung ist abgeschlossen")
    assert op["description"].endswith("Kostet keine Credits.")
    assert op["parameters"][0]["description"].startswith("Anfrage-ID des Clients")
    assert op["responses"]["200"]["description"] == "Prüfbericht."
    assert "API-Schlüssel" in op["responses"]["401"]["description"]
    assert op["responses"]["400"]["description"].startswith("`bad_request`: Ungültige Anfrage")
    assert "Nicht in der Fehlertabelle der Dienstspezifikation: `UNSUPPORTED_VERSION`, `UNSUPPORTED_SYNTAX`." in \
        op["responses"]["400"]["description"]
    assert d["paths"]["/v1/invoice/xrechnung"]["post"]["description"] == (
        "Kostet 1 Credit(s), wenn ein Dokument geliefert wird; Fehlschläge kosten nichts.")
    assert d["paths"]["/v1/jobs"]["post"]["summary"].startswith("Viele Dokumente als Auftrag")
    assert "*Warum:*" in d["info"]["description"] and "**Authentifizierung**" in d["info"]["description"]
    schemas = d["components"]["schemas"]
    assert schemas["ErrorDetail"]["properties"]["businessTerm"]["description"].startswith(
        "ID des Geschäftsbegriffs")
    assert schemas["Invoice"]["properties"]["invoiceNumber"]["description"] == "Rechnungsnummer - BT-1."
    assert d["components"]["headers"]["Retry-After"]["description"].startswith("Sekunden")
    # the machine words stay: errorCode values, field names, enum values, header names
    assert op["responses"]["401"]["content"]["application/json"]["schema"]["properties"]["errorCode"]["enum"][0] == \
        "AUTHENTICATION_REQUIRED"
    assert "verdict" in schemas["XRechnungValidationResponse"]["properties"]
