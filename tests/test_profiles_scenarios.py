"""The Factur-X XRECHNUNG profile's rules (`pipeline.check.generated.validate_profile`, generation's check of what it
writes) ran the XRechnung pack through `engine.pack_checked` alone: for an id KoSIT's scenarios do not name
(`xrechnung_3.0.2`, a suffix) its `rules` listed no XRechnung entry at all, where the same invoice as XML or in a
PDF lists the scenario selection that rejected it; and an XRechnung version we lack (`xrechnung_3.9`) was an
XRECHNUNG-NO-SCENARIO error there, not judged elsewhere. Now the three list the same XRechnung rules."""
from __future__ import annotations

import io
import json

import falcon.testing
import pikepdf
import pytest

from pipeline.check import generated as generation_check
from pipeline.invoice.specs import PROFILES
from pipeline.service.app import create_app
from test_parse import upload
from test_zugferd_samples import invoice_request

XRECHNUNG = PROFILES["XRECHNUNG"]
SAID = b"urn:xeinkauf.de:kosit:xrechnung_3.0</ram:ID>"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.fixture(scope="module")
def generated(client) -> tuple[bytes, bytes]:
    """(a generated XRECHNUNG-profile PDF, its embedded invoice)."""
    resp = client.simulate_post("/v1/invoice/zugferd", body=json.dumps(invoice_request(2, "XRECHNUNG", "en")),
                                headers={"Content-Type": "application/json"})
    assert resp.status_code == 200, resp.text
    with pikepdf.open(io.BytesIO(resp.content)) as pdf:
        xml = pdf.attachments[XRECHNUNG.file_name].get_file().read_bytes()
    assert xml.count(SAID) == 1
    return resp.content, xml


def _with_invoice(pdf: bytes, xml: bytes) -> bytes:
    """The PDF with `xml` as its embedded invoice."""
    with pikepdf.open(io.BytesIO(pdf)) as doc:
        files = doc.attachments[XRECHNUNG.file_name].obj.EF
        for key in ("/F", "/UF"):
            if key in files:
                files[key].write(xml)
        out = io.BytesIO()
        doc.save(out)
    return out.getvalue()


def _judged(report: dict) -> tuple:
    """The XRechnung and EN 16931 rules a report lists, its errors and what it left unjudged."""
    rules = [r for r in report["rules"] if r["pack"] in ("xrechnung", "en16931")]
    errors = sorted({i["code"] for i in report["issues"] if i["severity"] == "ERROR"})
    return rules, errors, [n["code"] for n in report["notJudged"]]


@pytest.mark.parametrize("version,rules,error,not_judged", [
    ("3.0", ["xsd", "schematron", "schematron"], [], []),
    ("3.0.2", ["scenarios"], ["XRECHNUNG-NO-SCENARIO"], []),
    ("3.9", ["xsd", "schematron"], [], ["RULES-NOT-INSTALLED"]),
], ids=["named", "suffix", "not-installed"])
def test_the_profile_rules_list_what_the_xml_and_the_pdf_list(client, generated, version, rules, error,
                                                              not_judged):
    pdf, xml = generated
    xml = xml.replace(SAID, f"urn:xeinkauf.de:kosit:xrechnung_{version}</ram:ID>".encode())
    as_xml = _judged(upload(client, xml, {}, path="/v1/invoice/xrechnung/validate").json)
    in_pdf = _judged(upload(client, _with_invoice(pdf, xml), {}, name="invoice.pdf",
                            path="/v1/invoice/zugferd/validate").json)
    gid = XRECHNUNG.guideline_id.replace("xrechnung_3.0", f"xrechnung_{version}")
    checked = generation_check.validate_profile(xml, XRECHNUNG, gid)
    assert [r.pack for r in checked.rules][:1] == ["factur-x"]  # the profile's own XSD and Schematron first
    own = ([r.to_dict() for r in checked.rules[1:]],
           sorted({i.code for i in checked.issues if i.severity == "ERROR"}),
           [n.code for n in checked.not_judged])
    assert as_xml == in_pdf == own, (as_xml, in_pdf, own)
    listed, errors, unjudged = own
    assert [step["step"] for entry in listed for step in entry["steps"]] == rules
    assert (errors, unjudged) == (error, not_judged)
