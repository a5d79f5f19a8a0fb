"""Every X-Conversion-* header against the converted document read back (issue 35, item 3), where
tests/test_conversions.py does not reach: its attempts are XML sources going to CII and UBL (and UBL under peppol).
Here the valid ZUGFeRD / Factur-X PDFs of ../shared/realworld go to CII, UBL and UBL under peppol, and the valid
real-world XML invoices to a ZUGFeRD PDF (whose invoice XML is read back), each with allowLoss, so that the lost
values' headers are checked too. Refusals are not judged here (tests/test_conversions.py and bench/conversions.py
do); each converted answer is."""
from __future__ import annotations

from collections import Counter

import falcon.testing
import pytest

from conftest import SHARED
from pipeline.errors import ApiError
from pipeline.flows.parse import parse
from pipeline.service.app import create_app
from roundtrip.conversions import is_valid
from test_conversions import _check_headers
from test_parse import upload

REALWORLD = SHARED / "realworld"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _valid(paths) -> list[tuple[str, bytes, bytes]]:
    """(name, file, its invoice XML) of each file whose invoice is valid (on its claim, or valid EN 16931)."""
    found = []
    for path in paths:
        data = path.read_bytes()
        try:
            parsed = parse(data)
            if not is_valid(parse(parsed.source.xml) if parsed.source.pdf is not None else parsed):
                continue
        except ApiError:
            continue
        found.append((path.relative_to(SHARED).as_posix(), data, parsed.source.xml))
    return found


def _convert(client, name: str, data: bytes, request: dict):
    return upload(client, data, {**request, "allowLoss": True}, name=name.rpartition("/")[2],
                  path="/v1/invoice/convert")


@pytest.mark.slow
def test_a_pdf_source_converted_says_in_its_headers_what_the_document_says(client):
    pdfs = _valid(sorted(REALWORLD.rglob("*.pdf")))
    assert len(pdfs) >= 40
    statuses = Counter()
    for name, data, xml in pdfs:
        for request in ({"to": "CII"}, {"to": "UBL"}, {"to": "UBL", "spec": "peppol"}):
            resp = _convert(client, name, data, request)
            statuses[resp.status_code] += 1
            assert resp.status_code in (200, 422), (name, request, resp.text[:300])
            if resp.status_code == 200:
                _check_headers(xml, resp.content, resp.headers, f"{name} -> {request}")
    assert statuses[200] >= 75, statuses   # 79 (2026-12-06); the 422s: Peppol refusing German PDFs mostly


@pytest.mark.slow
def test_a_zugferd_target_says_in_its_headers_what_its_invoice_xml_says(client):
    xmls = _valid(sorted(REALWORLD.rglob("*.xml")))
    assert len(xmls) >= 60
    converted = 0
    for name, data, xml in xmls:
        resp = _convert(client, name, data, {"to": "ZUGFERD"})
        assert resp.status_code in (200, 422), (name, resp.text[:300])
        if resp.status_code == 200:
            converted += 1
            _check_headers(xml, parse(resp.content).source.xml, resp.headers, f"{name} -> ZUGFERD")
    assert converted >= 50, converted
