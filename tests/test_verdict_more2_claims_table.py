"""Issue 37 as a demanding receiver tries it: official documents of ../shared/corpus whose specification identifier
(BT-24) is rewritten to claim rules this service does not have, in the spellings such claims come in: another
edition, XRechnung and Peppol versions to come (4.0, 3.1, 4.0.0, an extension of 4.0 over a 3.0 id), Peppol's
international PINT and a later namespace, a ZUGFeRD version not published (2p3), the id in upper case or ending in a
character that looks like nothing. Each is `indeterminate` (never valid, never a format error) at every endpoint it
is sent to, singly and in a batch, naming the identifier as written and the rules that did run (the CEN rules where
the claim builds on EN 16931:2017, none for another edition)."""
from __future__ import annotations

import falcon.testing
import pytest

from app import create_app
from conftest import CORPUS
from pipeline.check import claims, verdict
from test_validate_batch import post, single
from test_verdict_version import claiming

CEN_CII = CORPUS / "en16931-cen/cii/examples/CII_example1.xml"
CEN_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml"
XR_CII = CORPUS / "xrechnung-testsuite/technical-cases/cius/01.01_comprehensive_test_uncefact.xml"
XR_UBL = CORPUS / "xrechnung-testsuite/technical-cases/cius/01.01_comprehensive_test_ubl.xml"
XR30 = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
PEPPOL30 = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"

# (case, document, BT-24 it states, endpoints, the packs that run on it)
CASES = [
    ("2026 upper case", CEN_CII, "URN:CEN.EU:EN16931:2026", ["en16931", "xrechnung", "fr-ctc"], []),
    ("2017 upper case", CEN_CII, "URN:CEN.EU:EN16931:2017", ["en16931"], []),  # no edition we can read: none ran
    ("2017 zero-width space", CEN_CII, "urn:cen.eu:en16931:2017\u200b", ["en16931"], ["en16931"]),
    ("2017 trailing #", CEN_CII, "urn:cen.eu:en16931:2017#", ["en16931"], ["en16931"]),
    ("XRechnung 2026 edition", XR_UBL, "urn:cen.eu:en16931:2026#compliant#urn:xeinkauf.de:kosit:xrechnung_4.0",
     ["xrechnung", "en16931"], []),
    ("XRechnung 4.0.0", XR_CII, XR30.replace("_3.0", "_4.0.0"),
     ["xrechnung", "en16931"], ["en16931"]),
    ("XRechnung 3.1", XR_UBL, XR30.replace("_3.0", "_3.1"), ["xrechnung"], ["en16931"]),
    ("XRechnung upper case", XR_CII, XR30.replace("xrechnung_3.0", "XRECHNUNG_3.0"), ["xrechnung"], ["en16931"]),
    ("XRechnung 4.0 extension over 3.0", XR_CII,
     XR30 + "#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_4.0", ["xrechnung"], ["en16931"]),
    ("XRechnung 4.0 extension alone", XR_UBL,
     "urn:cen.eu:en16931:2017#conformant#urn:xeinkauf.de:kosit:extension:xrechnung_4.0", ["xrechnung"],
     ["en16931"]),
    ("Peppol 4.0", CEN_UBL, PEPPOL30.replace(":3.0", ":4.0"), ["peppol", "en16931"], ["en16931"]),
    ("Peppol 2026 namespace", CEN_UBL, PEPPOL30.replace("peppol.eu:2017", "peppol.eu:2026"), ["peppol"],
     ["en16931"]),
    ("Peppol upper case", CEN_UBL, PEPPOL30.upper(), ["peppol"], []),
    ("Peppol PINT", CEN_UBL, "urn:peppol:pint:billing-1@jp-1", ["peppol", "en16931"], []),
    ("ZUGFeRD 2p3", CEN_CII, "urn:cen.eu:en16931:2017#conformant#urn:zugferd.de:2p3:extended", ["en16931"],
     ["en16931"]),
    ("Factur-X 2p0", CEN_CII, "urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:2p0:basic", ["en16931"],
     ["en16931"]),
    ("Factur-X upper-case profile", CEN_CII, "urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:1p0:BASIC",
     ["en16931"], ["en16931"]),
    ("Factur-X EXTENDED in UBL", CEN_UBL, "urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended",
     ["en16931"], ["en16931"]),
]


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _indeterminate(report: dict, gid: str, ran: list[str]) -> None:
    assert (report["verdict"], report["valid"]) == (verdict.INDETERMINATE, False), report
    assert report["summary"]["errors"] == 0 and report["summary"]["worstCategory"] == verdict.INDETERMINATE
    assert [(n["code"], n["claim"]) for n in report["notJudged"]] == [(verdict.RULES_NOT_INSTALLED, gid)]
    said = report["notJudged"][0]
    # the identifier as people can read it, invisible characters by their code point, in English and German
    assert claims.shown(gid) in said["message"] and claims.shown(gid) in said["messageDe"], said
    assert [r["pack"] for r in report["rules"]] == ran


@pytest.mark.parametrize("case, path, gid, endpoints, ran", CASES, ids=[c[0] for c in CASES])
def test_a_claim_of_rules_not_here_is_indeterminate_at_every_endpoint(client, case, path, gid, endpoints, ran):
    data = claiming(path, gid)
    for endpoint in endpoints:
        _indeterminate(single(client, data, f"/v1/invoice/{endpoint}/validate"), gid, ran)


def test_the_same_claims_in_one_batch_each_say_so_and_are_counted(client):
    members = [(f"{n:02d}.xml", claiming(path, gid)) for n, (_, path, gid, endpoints, _) in enumerate(CASES)
               if "en16931" in endpoints]
    answer = post(client, members, path="/v1/invoice/en16931/validate/batch").json
    ran = {f"{n:02d}.xml": (gid, rules) for n, (_, _, gid, endpoints, rules) in enumerate(CASES)
           if "en16931" in endpoints}
    assert [e["name"] for e in answer["results"]] == sorted(ran)
    for entry in answer["results"]:
        _indeterminate(entry["report"], *ran[entry["name"]])
    assert (answer["summary"]["valid"], answer["summary"][verdict.INDETERMINATE]) == (0, len(members))


def test_the_unchanged_documents_stay_valid(client):
    """The same documents as published, at the endpoint of what they claim: the rewrite alone made them
    indeterminate."""
    for path, endpoint in [(CEN_CII, "en16931"), (CEN_UBL, "en16931"), (XR_CII, "xrechnung"), (XR_UBL, "xrechnung")]:
        report = single(client, path.read_bytes(), f"/v1/invoice/{endpoint}/validate")
        assert (report["verdict"], report["valid"], report["notJudged"]) == (verdict.VALID, True, []), path
