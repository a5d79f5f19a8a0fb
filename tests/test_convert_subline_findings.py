"""Findings on an XRechnung sub-invoice line (BG-DEX-01) name the sub-line's field, not the invoice's.

The CEN rule for the invoicing period (BR-29) has the context `cac:InvoicePeriod` minus a line's, so it fires on a
sub-line's period too; and the extension's scheme rules (BR-DEX-04, -06..08) name no business term. Both were reported
on the invoice's period (BT-73/BT-74, with the invoice's dates as rejectedValue) or on the sub-line as a whole
(BG-DEX-01). Built in memory from the official extension business case 04.01a (sub-lines three deep)."""
from __future__ import annotations

import copy

import pytest

from conftest import CORPUS
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.generate_xml import generate_xml
from pipeline.flows.parse import parse
from pipeline.invoice.request_json import dump_request

CASE = CORPUS / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml"
NESTED = (0, 0, 0)   # line 1, its first sub-line, that one's first (XML: "1 1 1")
FIRST_LEVEL = (1, 1)  # line 2, its second sub-line ("2 2")


def _path(at: tuple[int, ...]) -> str:
    return f"invoice.invoiceLines[{at[0]}]" + "".join(f".subInvoiceLines[{i}]" for i in at[1:])


def _sub_line(invoice: dict, at: tuple[int, ...]) -> dict:
    line = invoice["invoiceLines"][at[0]]
    for i in at[1:]:
        line = line["subInvoiceLines"][i]
    return line


def _generated(at: tuple[int, ...]) -> ApiError:
    parsed = parse(CASE.read_bytes())
    invoice = copy.deepcopy(parsed.invoice)
    sub = _sub_line(invoice, at)
    sub["invoiceLinePeriod"] = {"startDate": "2019-03-01", "endDate": "2019-02-01"}
    sub["itemInformation"].update(standardIdentifier="4012345000016", standardIdentifierSchemeId="9999")
    with pytest.raises(ApiError) as caught:
        generate_xml(dump_request({"invoice": invoice, "config": {**parsed.config, "calculationMode": "MANUAL"}}),
                     "xrechnung")
    return caught.value


@pytest.mark.parametrize("at", [NESTED, FIRST_LEVEL])
def test_generation_names_the_sub_lines_period_and_item_scheme(at):
    err = _generated(at)
    assert err.http_status == 422 and err.error_code == "VALIDATION_FAILED", err.message
    found = {e.code: e for e in err.errors}
    assert {"BR-29", "BR-DEX-06"} <= set(found), err.errors
    period, scheme = found["BR-29"], found["BR-DEX-06"]
    assert (period.field, period.businessTerm, period.rejectedValue) == (
        _path(at) + ".invoiceLinePeriod.endDate", "BT-135", "2019-02-01")
    assert (scheme.field, scheme.businessTerm, scheme.rejectedValue) == (
        _path(at) + ".itemInformation.standardIdentifierSchemeId", "BT-157-1", "9999")


def test_the_invoices_own_period_is_still_the_invoices():
    parsed = parse(CASE.read_bytes())
    invoice = copy.deepcopy(parsed.invoice)
    invoice["invoicingPeriod"] = {"startDate": "2019-05-07", "endDate": "2019-02-01"}
    with pytest.raises(ApiError) as caught:
        generate_xml(dump_request({"invoice": invoice, "config": {**parsed.config, "calculationMode": "MANUAL"}}),
                     "xrechnung")
    period = next(e for e in caught.value.errors if e.code == "BR-29")
    assert (period.field, period.businessTerm) == ("invoice.invoicingPeriod.endDate", "BT-74")


def test_a_source_refused_for_its_sub_line_names_the_sub_lines_terms_and_node():
    data = CASE.read_bytes()
    amount = b'>193.70</cbc:LineExtensionAmount>'   # sub-line "1 1 1"
    name = b"<cbc:Name>Demontage TW-Rohrleitung DN 12-25</cbc:Name>"
    assert data.count(amount) == 1 and data.count(name) == 1
    data = data.replace(amount, amount + b"<cac:InvoicePeriod><cbc:StartDate>2019-03-01</cbc:StartDate>"
                        b"<cbc:EndDate>2019-02-01</cbc:EndDate></cac:InvoicePeriod>").replace(
        name, name + b'<cac:StandardItemIdentification><cbc:ID schemeID="9999">4012345000016</cbc:ID>'
        b"</cac:StandardItemIdentification>")
    for to in ("UBL", "CII"):   # the source's rules decide before anything is written
        with pytest.raises(ApiError) as caught:
            convert(data, to)
        err = caught.value
        assert err.error_code == "SOURCE_INVALID", err.message
        found = {e.code: e for e in err.errors}
        sub = "/ubl:Invoice/cac:InvoiceLine[1]/cac:SubInvoiceLine[1]/cac:SubInvoiceLine[1]"
        assert found["BR-29"].businessTerm == "BT-135" and f"{sub}/cac:InvoicePeriod" in found["BR-29"].message
        assert found["BR-DEX-06"].businessTerm == "BT-157-1"
        assert f"{sub}/cac:Item/cac:StandardItemIdentification/cbc:ID" in found["BR-DEX-06"].message
