"""Issue 37: a specification built on an XRechnung version we have, under an id no scenario of its KoSIT
configuration names (XRechnung extension 3.1, CVD 1.0, a third party's extension or CIUS written after
`...xrechnung_3.0#`), claims rules this service does not have. Before, the xrechnung endpoint answered KoSIT's
"no scenario" for them: `invalid`, a format error for a document no rules judged. Now they are `indeterminate`,
held to the EN 16931:2017 rules they build on (whose errors still make them invalid), at every endpoint and on the
command line. The ids the configuration names (standard, extension 3.0, CVD 0.9) are judged as before, and an id of
ours with anything else appended (`xrechnung_3.0.2`) keeps KoSIT's rejection, as the KoSIT validator answers it."""
from __future__ import annotations

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.check import engine, verdict
from pipeline.cli import main
from pipeline.errors import ApiError
from pipeline.flows.validate_xml import validate_xml
from pipeline.service.app import create_app
from test_parse import upload
from test_rules_add import home  # noqa: F401 - fixture: a rules home of the test's own
from test_verdict import own_pdf  # noqa: F401 - fixture: a Factur-X EN16931 PDF of our own, valid
from test_verdict_version import _edited

XR_CII = CORPUS / "xrechnung-testsuite/technical-cases/cius/01.01_comprehensive_test_uncefact.xml"
XR_UBL = CORPUS / "xrechnung-testsuite/technical-cases/cius/01.01_comprehensive_test_ubl.xml"
XR = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
NOT_HERE = {
    "extension 3.1": XR + "#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_3.1",
    "CVD 1.0": XR + "#compliant#urn:xeinkauf.de:kosit:xrechnung:cvd_1.0",
    "third-party extension": XR + "#conformant#urn:example.com:einvoice:extension:1.0",
    "third-party CIUS": XR + "#compliant#urn:example.com:einvoice:cius:1.0",
}


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _claiming(gid: str, source=XR_CII) -> bytes:
    data = source.read_bytes()
    assert data.count(XR.encode()) == 1
    return data.replace(XR.encode(), gid.encode())


@pytest.mark.parametrize("gid", NOT_HERE.values(), ids=NOT_HERE.keys())
def test_a_specification_built_on_xrechnung_that_no_scenario_names_is_indeterminate(client, gid):
    for source in (XR_CII, XR_UBL):
        for endpoint in ("xrechnung", "en16931"):
            report = upload(client, _claiming(gid, source), {}, path=f"/v1/invoice/{endpoint}/validate").json
            assert (report["verdict"], report["valid"], report["summary"]["errors"]) == ("indeterminate", False, 0)
            assert [(n["code"], n["claim"]) for n in report["notJudged"]] == [(verdict.RULES_NOT_INSTALLED, gid)]
            assert "a specification built on XRechnung 3.0" in report["notJudged"][0]["message"]
            assert [r["pack"] for r in report["rules"]] == ["en16931"]  # the CEN rules it builds on ran
            assert "XRECHNUNG-NO-SCENARIO" not in {i["code"] for i in report["issues"]}


def test_errors_on_the_cen_rules_still_make_it_invalid(client):
    gid = NOT_HERE["third-party extension"]
    broken = _claiming(gid).replace(b"<ram:TypeCode>380</ram:TypeCode>", b"<ram:TypeCode>999</ram:TypeCode>", 1)
    report = upload(client, broken, {}, path="/v1/invoice/xrechnung/validate").json
    assert (report["verdict"], report["valid"]) == ("invalid", False)
    assert "BR-CL-01" in {i["code"] for i in report["issues"]}
    assert [n["claim"] for n in report["notJudged"]] == [gid]


def test_the_ids_the_configuration_names_are_judged_by_it_and_a_mangled_one_is_rejected_as_kosit_does(client):
    for gid in (XR, XR + "#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_3.0"):
        report = upload(client, _claiming(gid), {}, path="/v1/invoice/xrechnung/validate").json
        assert (report["verdict"], report["notJudged"], [r["pack"] for r in report["rules"]]) == (
            "valid", [], ["xrechnung"])
    report = upload(client, _claiming(XR + ".2"), {}, path="/v1/invoice/xrechnung/validate").json
    assert (report["verdict"], report["notJudged"]) == ("invalid", [])
    assert [i["code"] for i in report["issues"] if i["severity"] == "ERROR"] == ["XRECHNUNG-NO-SCENARIO"]


def test_inside_a_pdf_and_on_the_command_line(client, own_pdf, tmp_path, capsys):  # noqa: F811 - the fixture
    gid = NOT_HERE["extension 3.1"]
    norm = b">urn:cen.eu:en16931:2017<"
    pdf = _edited(own_pdf, invoice=lambda xml: xml.replace(norm, f">{gid}<".encode(), 1))
    report = upload(client, pdf, {}, path="/v1/invoice/zugferd/validate").json
    assert (report["verdict"], report["valid"]) == ("indeterminate", False)
    assert [(n["code"], n["claim"]) for n in report["notJudged"]] == [(verdict.RULES_NOT_INSTALLED, gid)]
    assert [r["pack"] for r in report["rules"]] == ["pdf", "en16931"]
    path = tmp_path / "extension-3.1.xml"
    path.write_bytes(_claiming(gid))
    assert main(["validate", str(path), "--spec", "xrechnung"]) == 3
    assert capsys.readouterr().out.startswith("INDETERMINATE:")


def test_a_damaged_xrechnung_pack_does_not_stop_the_other_endpoints(home):  # noqa: F811 - the fixture
    """The ids its scenarios name cannot be read: the en16931 endpoint still judges a document claiming an XRechnung
    extension on the CEN rules (not known beyond XRechnung 3.0 then: not covered there), and the xrechnung endpoint
    names the file, as for any file of a pack gone."""
    pack = engine.pick_pack("xrechnung", None, "CII")
    pack.scenarios.unlink()
    gid = NOT_HERE["third-party extension"]
    report = validate_xml(_claiming(gid), "en16931").to_dict()
    assert (report["verdict"], [n["claim"] for n in report["notJudged"]]) == ("indeterminate", [gid])
    assert [r["pack"] for r in report["rules"]] == ["en16931"]
    with pytest.raises(ApiError) as caught:
        validate_xml(_claiming(gid), "xrechnung")
    assert caught.value.to_dict("r")["errors"][0]["code"] == "RULES_UNAVAILABLE"
