"""Two status messages under one identifier (MDT-4) that say different things: a platform sent a correction again
under the old identifier, or two senders' numbering collided. A receiver knows a message by its identifier alone,
so it cannot tell which one counts; the timeline showed them as two plain statuses and the clash went unseen. Each
now names the other files in `sameIdentifier` (JSON, OpenAPI) and the page marks it, in English and in French. A
copy (same identifier, same content) stays one status, as before."""
from __future__ import annotations

import falcon.testing
import pytest
from lxml import etree

from cdar_cases import example, official_chain
from pipeline.invoice.request_json import load_request
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, _files

DISPUTED = example("204").read_bytes()
# the same message (identifier, status, invoice) with the buyer's name written otherwise
CORRECTED = DISPUTED.replace(b"<ram:Name>ACHETEUR</ram:Name>", b"<ram:Name>ACHETEUR SAS</ram:Name>")
FILES = [("204.xml", DISPUTED), ("from-mail.xml", DISPUTED), ("corrected.xml", CORRECTED),
         ("202.xml", example("202").read_bytes())]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_both_messages_are_valid_on_the_official_chain():
    assert CORRECTED != DISPUTED
    for data in (DISPUTED, CORRECTED):
        valid, rules, xsd_valid, _ = official_chain(data)
        assert valid and xsd_valid and not rules


def test_each_message_names_the_files_saying_otherwise_under_its_identifier(client):
    body = load_request(_files(client, BASE + "/timeline", FILES).content)
    (invoice,) = body["invoices"]
    assert [(s["file"], s.get("copies"), s.get("sameIdentifier")) for s in invoice["statuses"]] == [
        ("202.xml", None, None),
        ("204.xml", ["from-mail.xml"], ["corrected.xml"]),
        ("corrected.xml", None, ["204.xml", "from-mail.xml"])]


def test_messages_with_their_own_identifiers_name_none(client):
    body = load_request(_files(client, BASE + "/timeline", FILES[:2] + FILES[3:]).content)
    assert not [s for i in body["invoices"] for s in i["statuses"] if "sameIdentifier" in s]


@pytest.mark.parametrize("lang, label", [("en", "Same identifier, other content, in MDT-4"),
                                         ("fr", "Même identifiant, autre contenu, dans MDT-4")])
def test_the_page_marks_it_in_its_language(client, lang, label):
    page = _files(client, BASE + "/render", FILES, {"language": lang}, headers={"Accept": "text/html"})
    assert page.status_code == 200
    marked = [[" ".join(part.xpath("string()").split()) for part in fact.xpath("dt | dd")]
              for fact in etree.HTML(page.content).xpath("//div[@class = 'fact conflict']")]
    assert [(dt, dd.split(" (")[0]) for dt, dd in marked] == [(label, "corrected.xml"),
                                                              (label, "204.xml, from-mail.xml")]


def test_the_openapi_document_describes_it(client):
    doc = client.simulate_get("/v1/openapi.json").json
    schema = doc["paths"][BASE + "/timeline"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    status = schema["properties"]["invoices"]["items"]["properties"]["statuses"]["items"]
    assert status["properties"]["sameIdentifier"]["items"] == {"type": "string"}
