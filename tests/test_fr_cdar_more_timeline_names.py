"""The timeline (POST /v1/invoice/fr-ctc/status/timeline) names each status's codes as parse does: every status of
an invoice carries `names`, each code's name in French, English and German by its JSON path within the status. A
client drawing its own timeline got bare codes ("207", "TX_TVA_ERR", "SE") and had to parse every message again to
name them."""
from __future__ import annotations

import falcon.testing
import pytest

from cdar_cases import example, examples
from pipeline.flows import status_read
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, _files
from test_validate_endpoints import post


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_each_status_of_the_timeline_names_its_codes_as_parse_does(client):
    files = [(path.name, path.read_bytes()) for path in examples()]
    r = _files(client, BASE + "/timeline", files)
    assert r.status_code == 200
    statuses = [s for invoice in r.json["invoices"] for s in invoice["statuses"]]
    assert len(statuses) == len(files)
    for status in statuses:
        data = dict(files)[status["file"]]
        parsed = post(client, BASE + "/parse", file=data).json
        assert status["names"] == parsed["names"], status["file"]


def test_the_dispute_s_reason_role_and_status_are_named_in_three_languages(client):
    r = _files(client, BASE + "/timeline", [("207.xml", example("207").read_bytes())])
    [invoice] = r.json["invoices"]
    [status] = invoice["statuses"]
    names = status["names"]
    assert names["status.code"] == {"code": "207", "fr": "En litige", "en": "Disputed", "de": "Strittig"}
    assert names["status.details[0].reasonCode"] == {"code": "TX_TVA_ERR", "fr": "Taux de TVA erroné",
                                                     "en": "Wrong VAT rate", "de": "Falscher Umsatzsteuersatz"}
    assert names["message.recipients[0].role"]["de"] == "Verkäufer"
    assert names["invoice.typeCode"]["fr"] == "Facture commerciale"
    assert names["status.details[0].characteristics[1].typeCode"]["en"] == "Expected valid value"


def test_the_names_are_the_answer_s_not_the_page_s():
    """The page names codes itself: the timeline it draws carries no `names` (a JSON path is no element name)."""
    found = status_read.timeline([("207.xml", example("207").read_bytes())], names=False)
    assert "names" not in found["invoices"][0]["statuses"][0]
    html = status_read.render_status([("207.xml", example("207").read_bytes())], "de", html=True).decode()
    assert "Strittig" in html and "Falscher Umsatzsteuersatz" in html
