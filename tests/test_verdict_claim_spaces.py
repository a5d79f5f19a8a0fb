"""Issue 37: a specification identifier (BT-24) that only looks like one we have. XML's whitespace (space, tab, CR,
LF) around it is no part of it (CII's ID is an xs:token); any other space is: `urn:cen.eu:en16931:2017` followed by a
no-break space names no specification we have rules for (KoSIT's validator compares exactly and matches no scenario).
Before, the claim was read with Python's split()/strip(), which drop every Unicode space, and the en16931 endpoint
called such a document `valid`. Now it is `indeterminate`, held to the EN 16931:2017 rules it starts with, and the
reason shows the invisible character by its code point (the JSON `claim` keeps it as written)."""
from __future__ import annotations

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.check import verdict
from pipeline.service.app import create_app
from test_parse import upload
from test_verdict import _painted_html, own_pdf  # noqa: F401 - own_pdf: a fixture, a Factur-X EN16931 PDF of ours
from test_verdict_version import _edited

CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_example1.xml"
CEN_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml"
NORM = "urn:cen.eu:en16931:2017"
EXTENDED = NORM + "#conformant#urn:factur-x.eu:1p0:extended"
# spaces that are not XML's: no-break, em, narrow no-break, ideographic; and a zero-width space (a format character)
INVISIBLE = ["\u00a0", "\u2003", "\u202f", "\u3000", "\u200b"]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _cii(gid: str, source=CEN_CII) -> bytes:
    data = source.read_bytes()
    old = f"<ram:ID>{NORM}</ram:ID>".encode()
    assert data.count(old) == 1
    return data.replace(old, f"<ram:ID>{gid}</ram:ID>".encode())


def _ubl(gid: str) -> bytes:
    data = CEN_UBL.read_bytes()
    old = f"<cbc:CustomizationID>{NORM}</cbc:CustomizationID>".encode()
    assert data.count(old) == 1
    return data.replace(old, f"<cbc:CustomizationID>{gid}</cbc:CustomizationID>".encode())


def _not_judged_for(report: dict, gid: str, ran: list[str]) -> None:
    assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0), report
    assert report["summary"]["worstCategory"] == verdict.CATEGORY
    [reason] = report["notJudged"]
    assert (reason["code"], reason["claim"]) == (verdict.RULES_NOT_INSTALLED, gid)
    shown = "".join(ch if ch.isascii() else f"<U+{ord(ch):04X}>" for ch in gid)
    assert shown in reason["message"]  # the reader sees why the id is not the one it looks like
    assert [r["pack"] for r in report["rules"]] == ran


@pytest.mark.parametrize("space", INVISIBLE, ids=[f"U+{ord(c):04X}" for c in INVISIBLE])
def test_the_norms_id_with_a_unicode_space_is_not_the_norms_id(client, space):
    gid = NORM + space
    for data in (_cii(gid), _ubl(gid)):
        report = upload(client, data, {}, path="/v1/invoice/en16931/validate").json
        _not_judged_for(report, gid, ["en16931"])  # held to the CEN rules it builds on, which found no error


def test_the_report_for_people_shows_the_invisible_character(client):
    html = upload(client, _cii(NORM + "\u00a0"), {}, path="/v1/invoice/en16931/validate",
                  headers={"Accept": "text/html"})
    assert html.status_code == 200
    text = _painted_html(html.content)
    assert "Indeterminate" in text and f"({NORM}<U+00A0>)" in text and verdict.RULES_NOT_INSTALLED in text


def test_xml_whitespace_around_the_id_is_no_part_of_it(client):
    for gid in (f" {NORM} ", f"\n\t{NORM}\r\n"):
        for data in (_cii(gid), _ubl(gid)):
            report = upload(client, data, {}, path="/v1/invoice/en16931/validate").json
            assert (report["verdict"], report["valid"], report["notJudged"]) == ("valid", True, []), gid


def test_a_factur_x_profile_id_with_a_unicode_space_is_a_profile_we_do_not_know(client):
    """The profile rules were chosen from the id with its space stripped; the profile's rules then judged an id that
    is not theirs."""
    assert upload(client, _cii(EXTENDED), {}, path="/v1/invoice/en16931/validate").json["verdict"] == "valid"
    gid = EXTENDED + "\u00a0"
    report = upload(client, _cii(gid), {}, path="/v1/invoice/en16931/validate").json
    _not_judged_for(report, gid, ["en16931"])


def test_inside_a_pdf_the_same_id_is_not_judged_either(client, own_pdf):  # noqa: F811 - the fixture
    gid = NORM + "\u00a0"
    pdf = _edited(own_pdf, invoice=lambda xml: xml.replace(f">{NORM}<".encode(), f">{gid}<".encode(), 1))
    report = upload(client, pdf, {}, path="/v1/invoice/zugferd/validate").json
    _not_judged_for(report, gid, ["pdf", "en16931"])
