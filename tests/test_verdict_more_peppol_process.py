"""Peppol's business process identifier (ProfileID, BT-23: `urn:fdc:peppol.eu:2017:poacc:billing:01:1.0`) written as
the specification identifier (BT-24) is no claim of a Peppol BIS Billing version: the report called it "Peppol BIS
Billing 01", a specification that does not exist. It claims a specification this service does not know, and stays
indeterminate (issue 37); Peppol BIS Billing 3.0's own id keeps its rules."""
from __future__ import annotations

import re

import pytest

from conftest import CORPUS
from pipeline.flows.validate_xml import validate_xml

UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml"
PROCESS = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"


def claiming(gid: str) -> bytes:
    data, count = re.subn(rb"<cbc:CustomizationID>[^<]*</cbc:CustomizationID>",
                          f"<cbc:CustomizationID>{gid}</cbc:CustomizationID>".encode(), UBL.read_bytes())
    assert count == 1
    return data


@pytest.mark.parametrize("spec", ["peppol", "en16931"])
def test_the_process_id_as_bt24_is_an_unknown_specification(spec):
    report = validate_xml(claiming(PROCESS), spec).to_dict()
    assert (report["valid"], report["verdict"], report["version"], report["rules"]) == (
        False, "indeterminate", None, [])
    [reason] = report["notJudged"]
    assert reason["code"] == "RULES-NOT-INSTALLED" and reason["claim"] == PROCESS
    assert "Billing 01" not in reason["message"] and "Billing 01" not in reason["messageDe"]
    assert reason["message"].startswith(f"The document claims a specification this service does not know ({PROCESS})")
    assert reason["messageDe"].startswith("Das Dokument beruft sich auf eine Spezifikation, die dieser Dienst nicht "
                                          f"kennt ({PROCESS})")


def test_billing_30_keeps_the_peppol_rules():
    gid = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"
    report = validate_xml(claiming(gid), "peppol")
    assert [r.pack for r in report.rules] == ["peppol"] and report.not_judged == []
