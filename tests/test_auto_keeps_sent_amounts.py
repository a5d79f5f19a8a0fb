"""AUTO fills in, never overwrites (issue 12): a sent line net amount, VAT breakdown amount or document total is kept
as sent, the amounts derived from it follow it, and the official rules judge the result - generated and validated
in both syntaxes and both specifications, the sent amounts read back from the generated XML by the independent
reader (tests/roundtrip/reader.py) and by the service's own parser; a contradiction is a 422 that names the field,
the sent value and the value computed from the other amounts."""
from __future__ import annotations

import copy
from decimal import Decimal as D

import pytest

from pipeline.errors import ApiError
from pipeline.flows import generate_xml as generate
from pipeline.flows.parse import parse
from pipeline.invoice.request_json import dump_request
from roundtrip.reader import flatten, read_terms
from test_calc import base_request, line

SPECS_SYNTAXES = [("xrechnung", "CII"), ("xrechnung", "UBL"), ("en16931", "CII"), ("en16931", "UBL")]


def generated(data: dict, spec: str, syntax: str) -> dict[str, D]:
    """Generate (the official rules must accept it, warnings allowed) and read the business terms back, twice:
    {JSON path: amount} from the independent reader, checked equal to what the service's parser reads."""
    data = copy.deepcopy(data)
    data["config"]["syntax"] = syntax
    xml, report = generate.generate_xml(dump_request(data), spec)
    assert report.valid, [i.code for i in report.issues]
    terms = {k: D(v) for k, v in flatten(read_terms(xml).terms).items() if _is_amount(k)}
    parsed = {k: D(v) for k, v in flatten(parse(xml).invoice).items() if _is_amount(k)}
    assert parsed == terms
    return terms


def _is_amount(path: str) -> bool:
    name = path.rsplit(".", 1)[-1]
    return name == "amount" or name.endswith("Amount")


def rejected(data: dict, spec: str, syntax: str) -> ApiError:
    data = copy.deepcopy(data)
    data["config"]["syntax"] = syntax
    with pytest.raises(ApiError) as info:
        generate.generate_xml(dump_request(data), spec)
    assert (info.value.http_status, info.value.error_code) == (422, "VALIDATION_FAILED")
    return info.value


def entry(error: ApiError, rule: str):
    found = [e for e in error.errors if e.code == rule]
    assert found, [e.code for e in error.errors]
    return found[0]


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_line_amount_a_cent_off_quantity_times_price_is_kept_and_the_totals_follow_it(spec, syntax):
    """The trap of the issue: the ERP computed the line from an unrounded price (3 x 3.3333 = 10.00), the document
    carries the rounded price 3.33 (3 x 3.33 = 9.99). The client booked 10.00 + 19 % = 11.90; so does the invoice."""
    data = base_request([line(1, 3, "3.33", netAmount=D("10.00")), line(2, 1, "5.00")])
    back = generated(data, spec, syntax)
    assert back["invoiceLines[0].netAmount"] == D("10.00")           # not 9.99
    assert back["invoiceLines[1].netAmount"] == D("5.00")            # absent: computed
    assert (back["documentTotals.lineExtensionAmount"], back["vatBreakdowns[0].vatCategoryTaxableAmount"],
            back["vatBreakdowns[0].vatCategoryTaxAmount"], back["documentTotals.taxInclusiveAmount"],
            back["documentTotals.payableAmount"]) == (D("15.00"), D("15.00"), D("2.85"), D("17.85"), D("17.85"))


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_sent_breakdown_amount_is_kept_and_the_totals_follow_it(spec, syntax):
    """A VAT amount the client's ERP rounded another way (1.91 for 19 % of 10.01 = 1.9019, AUTO: 1.90): within the
    rules' tolerance (BR-CO-17), kept; BT-110 and BT-112 are its sum. The taxable amount of the 7 % breakdown is sent, its
    tax computed from it; a template breakdown for a rate nothing has, with zero amounts, is left out."""
    data = base_request([line(1, 1, "10.01"), line(2, 2, "10.00", rate=7)],
                        [{"vatCategoryCode": "S", "vatCategoryRate": 5, "vatCategoryTaxableAmount": D(0),
                          "vatCategoryTaxAmount": D(0)},
                         {"vatCategoryCode": "S", "vatCategoryRate": 19, "vatCategoryTaxAmount": D("1.91")},
                         {"vatCategoryCode": "S", "vatCategoryRate": 7, "vatCategoryTaxableAmount": D("20.00")}])
    back = generated(data, spec, syntax)
    assert (back["vatBreakdowns[0].vatCategoryTaxableAmount"], back["vatBreakdowns[0].vatCategoryTaxAmount"]) == (
        D("10.01"), D("1.91"))
    assert (back["vatBreakdowns[1].vatCategoryTaxableAmount"], back["vatBreakdowns[1].vatCategoryTaxAmount"]) == (
        D("20.00"), D("1.40"))
    assert "vatBreakdowns[2].vatCategoryTaxableAmount" not in back
    totals = (back["documentTotals.taxInclusiveAmount"], back["documentTotals.payableAmount"])
    assert totals == (D("33.32"), D("33.32"))


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_sent_payable_amount_with_prepaid_and_rounding_amounts_is_kept(spec, syntax):
    data = base_request([line(1, 1, "99.99")], documentTotals={
        "prepaidAmount": D("50"), "payableRoundingAmount": D("0.01"), "payableAmount": D("69.00")})
    back = generated(data, spec, syntax)
    assert (back["documentTotals.taxInclusiveAmount"], back["documentTotals.prepaidAmount"],
            back["documentTotals.payableRoundingAmount"], back["documentTotals.payableAmount"]) == (
        D("118.99"), D("50"), D("0.01"), D("69.00"))


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_sent_totals_are_kept_and_the_absent_ones_derived_from_them(spec, syntax):
    """BT-106 and BT-110 sent (consistent with the lines), the rest derived from the sent values; a sent document
    allowance amount is kept beside its percentage."""
    data = base_request([line(1, 4, "12.50"), line(2, 1, "0.99")],
                        documentLevelAllowances=[{"amount": D("2.55"), "percentage": D(5), "baseAmount": D("50.99"),
                                                  "vatCategoryCode": "S", "vatRate": D(19), "reason": "Rabatt"}],
                        documentTotals={"lineExtensionAmount": D("50.99"), "taxTotalAmount": D("9.20")})
    back = generated(data, spec, syntax)
    assert back["documentLevelAllowances[0].amount"] == D("2.55")
    assert (back["documentTotals.lineExtensionAmount"], back["documentTotals.allowanceTotalAmount"],
            back["documentTotals.taxExclusiveAmount"], back["documentTotals.taxInclusiveAmount"]) == (
        D("50.99"), D("2.55"), D("48.44"), D("57.64"))


# ---- contradictions: the rules refuse them, and the 422 says what was sent and what the rest gives ---------------

@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_sent_line_total_that_contradicts_the_lines_is_a_422_with_both_values(spec, syntax):
    data = base_request([line(1, 1, 10), line(2, 2, 5)], documentTotals={"lineExtensionAmount": D("20.01")})
    e = entry(rejected(data, spec, syntax), "BR-CO-10")
    assert (e.field, e.businessTerm, e.rejectedValue) == ("invoice.documentTotals.lineExtensionAmount", "BT-106",
                                                          D("20.01"))
    assert "sent as 20.01" in e.message and "would be 20.00" in e.message


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_sent_taxable_amount_that_contradicts_the_lines_names_the_breakdown_as_sent(spec, syntax):
    """The field is the breakdown's index in the request, also when an empty template breakdown before it was left
    out (the document's first breakdown is the request's second)."""
    data = base_request([line(1, 1, 10)], [{"vatCategoryCode": "S", "vatCategoryRate": 7},
                                           {"vatCategoryCode": "S", "vatCategoryRate": 19,
                                            "vatCategoryTaxableAmount": D("11.00")}])
    e = entry(rejected(data, spec, syntax), "BR-S-08")
    assert (e.field, e.businessTerm, e.rejectedValue) == (
        "invoice.vatBreakdowns[1].vatCategoryTaxableAmount", "BT-116", D("11.00"))
    assert "sent as 11.00" in e.message and "would be 10.00" in e.message


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_sent_breakdown_for_a_rate_nothing_has_is_kept_and_refused(spec, syntax):
    """Leaving out a breakdown with a non-zero sent amount would drop a sent amount: it is kept, the rules refuse
    it in both syntaxes."""
    data = base_request([line(1, 1, 10)], [{"vatCategoryCode": "S", "vatCategoryRate": 7,
                                            "vatCategoryTaxableAmount": D(5), "vatCategoryTaxAmount": D("0.35")}])
    e = entry(rejected(data, spec, syntax), "BR-S-08")
    assert (e.field, e.rejectedValue) == ("invoice.vatBreakdowns[0].vatCategoryTaxableAmount", 5)
    assert "would be 0.00" in e.message


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_a_sent_payable_amount_that_contradicts_prepaid_and_rounding_is_a_422_with_both_values(spec, syntax):
    data = base_request([line(1, 1, "99.99")], documentTotals={
        "prepaidAmount": D("50"), "payableRoundingAmount": D("0.01"), "payableAmount": D("68.99")})
    error = rejected(data, spec, syntax)
    assert {e.code for e in error.errors} == {"BR-CO-16"}
    e = entry(error, "BR-CO-16")
    assert (e.field, e.businessTerm, e.rejectedValue) == ("invoice.documentTotals.payableAmount", "BT-115", D("68.99"))
    assert "sent as 68.99" in e.message and "would be 69.00" in e.message


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_a_sent_allowance_amount_beside_its_percentage_is_kept_and_the_rules_judge_it(syntax):
    """6.00 sent beside 5 % of 100.00: the CEN rules accept it (the base is filled in, R041), XRechnung's
    PEPPOL-EN16931-R040 refuses it, naming the allowance amount with both values."""
    data = base_request([line(1, 1, 100)], documentLevelAllowances=[
        {"amount": D("6.00"), "percentage": D(5), "vatCategoryCode": "S", "vatRate": D(19), "reason": "Rabatt"}])
    back = generated(data, "en16931", syntax)
    assert (back["documentLevelAllowances[0].amount"], back["documentLevelAllowances[0].baseAmount"],
            back["documentTotals.taxExclusiveAmount"]) == (D("6.00"), D("100.00"), D("94.00"))
    e = entry(rejected(data, "xrechnung", syntax), "PEPPOL-EN16931-R040")
    assert (e.field, e.rejectedValue) == ("invoice.documentLevelAllowances[0].amount", D("6.00"))
    assert "would be 5.00" in e.message
