"""XRechnung sub-invoice lines (BG-DEX-01) going where the target has no place for them (issue 35's decision:
CONVERSION_LOSS naming them, allowLoss dropping them). CII, a ZUGFeRD PDF's CII and UBL under en16931 or peppol
carry none (XRechnung binds them in UBL under its extension only); the line above states their sum (BR-DEX-02), so
the invoice adds up without them. Third-party payments (BG-DEX-09) are no such case: the amount due includes them,
and allowLoss cannot drop them. Built from the official extension business case and KoSIT's instance."""
from __future__ import annotations

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.service.app import create_app
from roundtrip import official
from roundtrip.reader import flatten, read_terms
from test_parse import upload

CASE = CORPUS / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml"   # sub-lines three deep
PAYMENTS = CORPUS / "kosit-validator-configuration-tests/instances/ubl-br-dex-09-prepaidpayment.xml"
SUB_LINE = "/cac:SubInvoiceLine"


def _without_sub_lines(terms: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in terms.items() if ".subInvoiceLines[" not in k}


@pytest.mark.parametrize("to, spec", [("CII", None), ("ZUGFERD", None), ("UBL", "en16931"), ("UBL", "peppol")])
def test_sub_lines_are_named_as_losses_where_the_target_has_no_place_for_them(to, spec):
    data = CASE.read_bytes()
    with pytest.raises(ApiError) as refused:
        convert(data, to, spec)
    err = refused.value
    assert err.error_code == "CONVERSION_LOSS" and "send request.allowLoss true" in err.message, err.message
    assert err.errors and all(e.code == "NOT_CARRIED" and SUB_LINE in e.message for e in err.errors)
    assert all("the line above keeps its amounts" in e.message for e in err.errors)
    # each entry names its value's business term (the sub-line's terms are a line's)
    terms = {e.businessTerm for e in err.errors}
    assert {"BT-126", "BT-129", "BT-131", "BT-153"} <= terms and None not in terms


def test_allow_loss_writes_the_invoice_without_its_sub_lines():
    data = CASE.read_bytes()
    with pytest.raises(ApiError) as refused:
        convert(data, "CII")
    done = convert(data, "CII", allow_loss=True)
    assert refused.value.message.startswith(f"The target cannot carry {len(done.losses)} value(s)")
    assert all(SUB_LINE in u["xpath"] for u in done.losses)
    judged = official.xrechnung(done.document)   # the extension's CII scenario
    assert judged is not None and judged.valid, (judged and sorted(judged.errors))
    source, target = flatten(read_terms(data).terms), flatten(read_terms(done.document).terms)
    assert any(".subInvoiceLines[" in k for k in source) and not any(".subInvoiceLines[" in k for k in target)
    assert _without_sub_lines(source) == target
    # the service says as much: every value left out, at its place in the source
    resp = upload(falcon.testing.TestClient(create_app(platform=False)), data, {"to": "CII", "allowLoss": True},
                  path="/v1/invoice/convert")
    assert resp.status_code == 200, resp.text
    assert int(resp.headers["X-Conversion-Losses"]) == len(done.losses)
    assert resp.headers["X-Conversion-Lost"].startswith(done.losses[0]["xpath"] + "; ")


def test_ubl_under_en16931_without_sub_lines_is_valid_en16931():
    done = convert(CASE.read_bytes(), "UBL", "en16931", allow_loss=True)
    assert official.cen(done.document).valid and b"SubInvoiceLine" not in done.document
    assert {c["businessTerm"] for c in done.changed} == {"BT-24"}


def test_ubl_under_the_extension_keeps_them():
    done = convert(CASE.read_bytes(), "UBL")
    assert done.losses == [] and official.xrechnung(done.document).valid
    assert flatten(read_terms(done.document).terms) == flatten(read_terms(CASE.read_bytes()).terms)


def test_third_party_payments_are_structure_allow_loss_cannot_drop():
    data = PAYMENTS.read_bytes()
    for allow_loss in (False, True):
        with pytest.raises(ApiError) as refused:
            convert(data, "CII", allow_loss=allow_loss)
        message = refused.value.message
        assert refused.value.error_code == "CONVERSION_LOSS" and "third-party payments (BG-DEX-09)" in message
        assert "allowLoss does not apply: the amount due (BT-115) would not add up without them." in message
        assert {e.businessTerm for e in refused.value.errors} == {"BG-DEX-09"}
    # UBL under en16931 or peppol has no place for them either: the EN 16931 rules refuse the amount due that
    # includes them (BR-CO-16), which is the extension's counting (BR-DEX-09), not a fault of the source
    for spec in ("en16931", "peppol"):
        with pytest.raises(ApiError) as refused:
            convert(data, "UBL", spec, allow_loss=True)
        message = refused.value.message
        assert refused.value.error_code == "CONVERSION_LOSS", message
        assert message.startswith("The target cannot carry the source's third-party payments (BG-DEX-09): EN 16931 "
                                  "has no term for them: XRechnung binds them in UBL under its extension only"), message
        assert "allowLoss does not apply: the amount due (BT-115) would not add up without them." in message
        assert {e.businessTerm for e in refused.value.errors} == {"BG-DEX-09"}
        assert all("UBL without the XRechnung extension has no place for it" in e.message
                   for e in refused.value.errors)
