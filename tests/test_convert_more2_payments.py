"""XRechnung's third-party payments (BG-DEX-09) going to a target without their place (CII, UBL under en16931 or
peppol), as a receiver would expect:

- an amount due (BT-115) that does not include them (the invoice adds up on EN 16931's BR-CO-16 without them): a
  loss each value of every payment names (business term, source node, why), which allowLoss leaves out; the document
  written is valid EN 16931 and has no payment;
- an amount due that includes them (BR-DEX-09): a refusal allowLoss cannot lift, saying why, with each payment at
  its source node, in both target syntaxes and under each spec (tests/test_convert_sub_lines.py).
"""
from __future__ import annotations

import pytest

from conftest import CORPUS
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from roundtrip import official
from roundtrip.reader import flatten, read_terms

# the amount due is BT-112 (no payment in it): the XRechnung rules refuse it (BR-DEX-09), EN 16931's pass it
EXCLUDED = CORPUS / "xrechnung-schematron-tests/ubl-inv/ubl-inv-br-dex-11-test.xml"
PAYMENT_TERMS = {"BT-DEX-001": "MobilesBezahlen", "BT-DEX-002": "19.96",
                 "BT-DEX-003": "Mobiles Bezahlen (Brutto-Forderung für Fremdleistungen)"}


@pytest.mark.parametrize("to", ["CII", "UBL"])
def test_payments_outside_the_amount_due_are_a_named_loss(to):
    with pytest.raises(ApiError) as refused:
        convert(EXCLUDED.read_bytes(), to, "en16931")
    assert refused.value.error_code == "CONVERSION_LOSS", refused.value.message
    assert "send request.allowLoss true" in refused.value.message
    entries = {e.businessTerm: e.message for e in refused.value.errors}
    assert set(entries) == set(PAYMENT_TERMS), entries
    for term, value in PAYMENT_TERMS.items():
        message = entries[term]
        assert "/ubl:Invoice/cac:PrepaidPayment/" in message and repr(value) in message, message
        assert "third-party payments (BG-DEX-09)" in message and "BR-CO-16" in message, message


@pytest.mark.parametrize("to", ["CII", "UBL"])
def test_allow_loss_leaves_them_out_and_the_rest_converts(to):
    source = EXCLUDED.read_bytes()
    done = convert(source, to, "en16931", allow_loss=True)
    assert {loss["businessTerm"]: str(loss["value"]) for loss in done.losses} == PAYMENT_TERMS
    assert all("BT-24" not in loss["businessTerm"] for loss in done.losses)
    assert official.cen(done.document).valid
    written = flatten(read_terms(done.document).terms)
    assert not any(k.startswith("thirdPartyPayments") for k in written), written
    assert written["documentTotals.payableAmount"] == flatten(read_terms(source).terms)["documentTotals.payableAmount"]
    # the source's own XRechnung fault travels as a finding, not as a refusal
    assert "BR-DEX-09" in {f["code"] for f in done.source_findings}
