"""BT-83 (remittance information) in every UBL payment means. The model holds it once; UBL binds it in
cac:PaymentMeans/cbc:PaymentID, and UBL-SR-44 lets each means repeat it, as the CEN, XRechnung and Peppol examples
do. A buyer paying to the second account must see the reference there too, so both convert (CII -> UBL) and
generate (JSON -> UBL) write it in each means; reading that UBL back gives BT-83 once, nothing unmapped, and the
conversion back to CII names no loss.

The source is the XRechnung test suite's business case 03.07a (one payment reference, two credit transfers), whose
official UBL twin repeats the reference in both means.
"""
from __future__ import annotations

import copy
import re

import pytest
from lxml import etree

from conftest import CORPUS
from pipeline.flows.convert import convert
from pipeline.flows.generate_xml import generate_xml
from pipeline.flows.parse import parse
from pipeline.invoice.request_json import dump_request
from roundtrip import official
from roundtrip.reader import flatten, read_terms

CASE = CORPUS / "xrechnung-testsuite/business-cases/standard"
CII_SOURCE = CASE / "03.07a-INVOICE_uncefact.xml"
UBL_TWIN = CASE / "03.07a-INVOICE_ubl.xml"
REFERENCE = "Deb. 12345 / Fact. 9876543"
ACCOUNTS = ["DE79000000001234567890", "DE16000000002345678901"]


def _source(spec: str | None) -> bytes:
    data = CII_SOURCE.read_bytes()
    if spec == "peppol":
        # the case's GLNs (123456789) and e-mail endpoints (scheme EM) fail Peppol's own rules (PEPPOL-COMMON-R040,
        # CL008); a valid GLN in their place leaves the payment content as it is
        data = re.sub(rb'schemeID="(0088|EM)">[^<]*<', b'schemeID="0088">4000001123452<', data)
    return data


def _means(ubl: bytes) -> list[tuple[str | None, str | None]]:
    """(PaymentID, payee account) of each cac:PaymentMeans, in document order."""
    root = etree.fromstring(ubl)
    return [(m.findtext("{*}PaymentID"), m.findtext("{*}PayeeFinancialAccount/{*}ID"))
            for m in root.findall("{*}PaymentMeans")]


def _reads_back_once(ubl: bytes) -> None:
    parsed = parse(ubl)
    assert parsed.unmapped == [], parsed.unmapped   # the repeated PaymentID is read, not left over
    assert parsed.invoice["paymentInstructions"]["remittanceInformation"] == REFERENCE
    terms = flatten(read_terms(ubl).terms)
    assert [k for k in terms if k.endswith("remittanceInformation")] == ["paymentInstructions.remittanceInformation"]


def test_the_official_twin_repeats_the_reference():
    assert b"<ram:PaymentReference>" + REFERENCE.encode() in CII_SOURCE.read_bytes()
    assert _means(UBL_TWIN.read_bytes()) == [(REFERENCE, a) for a in ACCOUNTS]


@pytest.mark.parametrize("spec", [None, "en16931", "peppol"])
def test_convert_writes_the_reference_in_each_means(spec):
    done = convert(_source(spec), "UBL", spec)
    assert _means(done.document) == [(REFERENCE, a) for a in ACCOUNTS]
    judged = official.judge(done.document, spec or "xrechnung")
    assert judged.valid, judged
    assert done.losses == [] and done.technical == []
    assert [c["businessTerm"] for c in done.changed] == ([] if spec is None else ["BT-24"])
    _reads_back_once(done.document)
    back = convert(done.document, "CII", "en16931")   # and home again: one PaymentReference, nothing lost
    assert back.losses == [] and back.technical == []
    assert etree.fromstring(back.document).xpath("//*[local-name()='PaymentReference']/text()") == [REFERENCE]


@pytest.mark.parametrize("spec", ["xrechnung", "en16931"])
def test_generate_writes_the_reference_in_each_means(spec):
    parsed = parse(CII_SOURCE.read_bytes())
    invoice = copy.deepcopy(parsed.invoice)
    if spec == "en16931":   # the source's XRechnung BT-24 would be refused under en16931
        del invoice["processControl"]["specificationIdentifier"]
    xml, report = generate_xml(dump_request({"invoice": invoice,
                                             "config": dict(parsed.config, spec=spec, syntax="UBL")}), spec)
    assert report.valid
    assert _means(xml) == [(REFERENCE, a) for a in ACCOUNTS]
    judged = official.judge(xml, spec)
    assert judged.valid, judged
    _reads_back_once(xml)
