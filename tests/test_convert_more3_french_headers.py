"""The endpoint says what `tests/test_convert_more3_french.py` shows of the flow: a French invoice's converted
document held to France's rules, X-Target-Rules naming them and X-Target-Findings their errors on it, each rule id
one the FNFE chain's own files find in the document returned; nothing of it for an invoice no French platform
holds."""
from __future__ import annotations

import falcon.testing
import pytest

from pipeline.check import packs
from pipeline.service.app import create_app
from test_convert_more3_french import GERMAN, MULTI_VENDOR
from test_fr_ctc_validate import _official_chain
from test_parse import upload


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_the_headers_say_the_converted_document_is_no_valid_french_invoice(client):
    resp = upload(client, MULTI_VENDOR.read_bytes(), {"to": "UBL", "allowLoss": True}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert resp.headers["X-Target-Rules"].startswith("fr-ctc ")
    valid, rules, _ = _official_chain(resp.content, (packs.latest_active("fr-ctc").root,
                                                     packs.latest_active("en16931").root))
    assert not valid
    assert set(resp.headers["X-Target-Findings"].split(", ")) == {r for r in rules if r.startswith("BR-FR")}


def test_no_target_headers_for_a_german_invoice(client):
    resp = upload(client, GERMAN.read_bytes(), {"to": "UBL"}, path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert "X-Target-Rules" not in resp.headers and "X-Target-Findings" not in resp.headers
