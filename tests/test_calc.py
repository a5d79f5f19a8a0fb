"""AUTO / MANUAL calculation: exact Decimal results, the EN 16931 invariants (BR-CO-10..17, BR-S-08, BR-DEC) as
property tests, and the known traps checked against the official rules (canonical -> CII/UBL -> validation)."""
from __future__ import annotations

import copy
import json
from decimal import Decimal as D
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from decimal import ROUND_HALF_UP, localcontext

from pipeline.write.calc import EXACT, calculate, money
from pipeline.write.canonical import to_canonical, with_derived
from pipeline.errors import ApiError
from pipeline.invoice.model import validate_request

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tests" / "data" / "request-standard.json"


def base_request(lines: list[dict], breakdowns: list[dict] | None = None, **invoice) -> dict:
    data = json.loads(SAMPLE.read_bytes(), parse_float=D)
    inv = data["invoice"]
    for key in ("documentLevelAllowances", "documentLevelCharges"):
        inv.pop(key)
    inv["invoiceLines"] = lines
    inv["vatBreakdowns"] = breakdowns if breakdowns is not None else []
    inv.update(invoice)
    return data


def line(n, qty, price, cat="S", rate=19, **extra) -> dict:
    out = {"lineIdentifier": str(n), "itemInformation": {"name": f"Item {n}"}, "quantity": D(str(qty)),
           "unitCode": "C62", "priceDetails": {"netPrice": D(str(price))},
           "lineVatInformation": {"vatCategoryCode": cat, "vatRate": D(str(rate))}}
    out.update(extra)
    return out


def calc(data: dict, spec: str = "xrechnung"):
    return calculate(validate_request(copy.deepcopy(data), spec))


# ---- exact results ---------------------------------------------------------------------------------------------

def test_sample_totals_by_hand():
    req = calculate(validate_request(json.loads(SAMPLE.read_bytes(), parse_float=D), "xrechnung"))
    inv = req.invoice
    # line 1: 12.5 x 80.00; line 2: 3 x 44.91 = 134.73 - 10 % = 13.47; line 3: 7 x 4.99 + 2.00 charge
    assert [l.netAmount for l in inv.invoiceLines] == [D("1000.00"), D("121.26"), D("36.93")]
    assert inv.invoiceLines[1].invoiceLineAllowances[0].baseAmount == D("134.73")
    assert inv.documentLevelAllowances[0].amount == D("50.00")          # 5 % of 1000.00
    t = inv.documentTotals
    assert (t.lineExtensionAmount, t.allowanceTotalAmount, t.chargeTotalAmount, t.taxExclusiveAmount) == (
        D("1158.19"), D("50.00"), D("12.50"), D("1120.69"))
    s19, s7 = inv.vatBreakdowns
    assert (s19.vatCategoryTaxableAmount, s19.vatCategoryTaxAmount) == (D("999.43"), D("189.89"))
    assert (s7.vatCategoryTaxableAmount, s7.vatCategoryTaxAmount) == (D("121.26"), D("8.49"))
    assert (t.taxTotalAmount, t.taxInclusiveAmount, t.payableAmount) == (D("198.38"), D("1319.07"), D("1319.07"))


def test_price_base_quantity_and_gross_price():
    data = base_request([
        line(1, 10, "25.00", priceDetails={"netPrice": D("25.00"), "priceBasisQuantity": D(100)}),
        line(2, 2, 0, priceDetails={"grossPrice": D("9.99")}),
    ])
    inv = calc(data).invoice
    assert inv.invoiceLines[0].netAmount == D("2.50")
    assert inv.invoiceLines[1].priceDetails.netPrice == D("9.99")        # only gross: net = gross
    assert inv.invoiceLines[1].netAmount == D("19.98")


def test_percentage_only_document_allowance_applies_to_its_category_and_rate():
    data = base_request([line(1, 1, 100), line(2, 1, 50, rate=7)],
                        documentLevelAllowances=[{"percentage": D(10), "vatCategoryCode": "S", "vatRate": D(7),
                                                  "reason": "Skonto"}])
    inv = calc(data).invoice
    assert (inv.documentLevelAllowances[0].baseAmount, inv.documentLevelAllowances[0].amount) == (D("50"), D("5.00"))
    taxable = {b.vatCategoryRate: b.vatCategoryTaxableAmount for b in inv.vatBreakdowns}
    assert taxable == {D(19): D("100.00"), D(7): D("45.00")}


def test_missing_breakdowns_are_added_and_sent_ones_completed():
    data = base_request([line(1, 1, 100, cat="E", rate=0), line(2, 1, 10)],
                        [{"vatCategoryCode": "E", "vatCategoryRate": 0, "exemptionReason": "Steuerfrei nach § 4 UStG"}])
    e, s = calc(data).invoice.vatBreakdowns
    assert (e.vatCategoryCode, e.vatCategoryTaxableAmount, e.vatCategoryTaxAmount, e.exemptionReason) == (
        "E", D("100.00"), D("0.00"), "Steuerfrei nach § 4 UStG")
    assert (s.vatCategoryCode, s.vatCategoryRate, s.vatCategoryTaxableAmount, s.vatCategoryTaxAmount) == (
        "S", D(19), D("10.00"), D("1.90"))


def test_rates_compare_numerically():
    data = base_request([line(1, 1, 10, rate="19.00"), line(2, 1, 10, rate=19)],
                        [{"vatCategoryCode": "S", "vatCategoryRate": D("19.0")}])
    (b,) = calc(data).invoice.vatBreakdowns
    assert b.vatCategoryTaxableAmount == D("20.00")


def test_per_breakdown_rounding_br_co_14():
    # 10.01 x 19 % = 1.9019 -> 1.90 and 10.07 x 7 % = 0.7049 -> 0.70: BT-110 = 2.60, not round(2.6068) = 2.61
    inv = calc(base_request([line(1, 1, "10.01"), line(2, 1, "10.07", rate=7)])).invoice
    assert [b.vatCategoryTaxAmount for b in inv.vatBreakdowns] == [D("1.90"), D("0.70")]
    assert inv.documentTotals.taxTotalAmount == D("2.60")
    assert inv.documentTotals.taxInclusiveAmount == D("22.68")


def test_negative_lines_round_half_away_from_zero():
    # return line: -1 x 0.50 at 19 % = -0.095 -> -0.10 (same magnitude as the positive case, BR-S-09 uses abs())
    inv = calc(base_request([line(1, -1, "0.50")])).invoice
    assert inv.vatBreakdowns[0].vatCategoryTaxAmount == D("-0.10")
    assert inv.documentTotals.payableAmount == D("-0.60")


def test_accounting_currency_keeps_bt111_and_totals_in_invoice_currency():
    data = base_request([line(1, 3, "33.33")], currencyCode="USD", vatAccountingCurrencyCode="EUR",
                        documentTotals={"taxTotalAmountInAccountingCurrency": D("17.45")})
    t = calc(data).invoice.documentTotals
    assert (t.taxExclusiveAmount, t.taxTotalAmount, t.taxInclusiveAmount) == (D("99.99"), D("19.00"), D("118.99"))
    assert t.taxTotalAmountInAccountingCurrency == D("17.45")


def test_prepaid_and_rounding_amounts():
    data = base_request([line(1, 1, "99.99")],
                        documentTotals={"prepaidAmount": D("50"), "payableRoundingAmount": D("0.01")})
    t = calc(data).invoice.documentTotals
    assert (t.taxInclusiveAmount, t.payableAmount) == (D("118.99"), D("69.00"))


def test_category_o_groups_without_rate_and_has_no_tax():
    data = base_request([line(1, 2, 10, cat="O", rate=0), line(2, 1, 5, cat="O", rate=0)],
                        [{"vatCategoryCode": "O", "vatCategoryRate": 0, "exemptionReason": "Nicht steuerbar"}])
    (b,) = calc(data).invoice.vatBreakdowns
    assert (b.vatCategoryTaxableAmount, b.vatCategoryTaxAmount) == (D("25.00"), D("0.00"))


def test_auto_keeps_sent_totals_and_derives_the_rest_from_them():
    """AUTO never overwrites: sent totals stay (the rules judge them); absent ones follow the sent ones; the kept
    amounts that differ from what AUTO computes are recorded, with both values, for the 422."""
    data = base_request([line(1, 1, 10)], documentTotals={"payableAmount": D("999"), "lineExtensionAmount": D(1)})
    kept: dict = {}
    t = calculate(validate_request(copy.deepcopy(data), "xrechnung"), kept).invoice.documentTotals
    assert (t.lineExtensionAmount, t.taxExclusiveAmount, t.taxTotalAmount, t.taxInclusiveAmount, t.payableAmount) == (
        D("1"), D("1.00"), D("1.90"), D("2.90"), D("999"))
    assert kept == {
        "invoice.documentTotals.lineExtensionAmount": ("invoice.documentTotals.lineExtensionAmount", D(1), D("10.00")),
        "invoice.documentTotals.payableAmount": ("invoice.documentTotals.payableAmount", D(999), D("2.90"))}
    data["config"]["calculationMode"] = "MANUAL"
    kept = {}
    calculate(validate_request(copy.deepcopy(data), "xrechnung"), kept)
    assert kept == {}


def test_auto_needs_price_or_net_amount():
    data = base_request([line(1, 1, 10), {"lineIdentifier": "2", "itemInformation": {"name": "x"}, "quantity": 1,
                                          "lineVatInformation": {"vatCategoryCode": "S", "vatRate": 19}}])
    with pytest.raises(ApiError) as info:
        calc(data)
    e = info.value.errors[0]
    assert (info.value.http_status, e.code, e.field, e.businessTerm) == (
        400, "REQUIRED", "invoice.invoiceLines[1].priceDetails.netPrice", "BT-146")
    # a sent net amount is enough
    data["invoice"]["invoiceLines"][1]["netAmount"] = D("5.00")
    assert calc(data).invoice.documentTotals.lineExtensionAmount == D("15.00")


def test_computed_amounts_are_exact_and_bounded():
    # 14 + 0 digits x 10 fraction digits: exact (the default decimal precision of 28 digits would round)
    q, p = D("12345678.9012345678"), D("1234567.1234567891")
    inv = calc(base_request([line(1, q, p, rate=7)])).invoice
    with localcontext(EXACT):
        assert inv.invoiceLines[0].netAmount == (q * p).quantize(D("0.01"), rounding=ROUND_HALF_UP)
    # beyond 15 integer digits a computed amount is a 400 that names the line, never a crash
    big = D("99999999999999")
    with pytest.raises(ApiError) as info:
        calc(base_request([line(1, 1, 1), line(2, big, big), line(3, 1, big, priceDetails={
            "netPrice": big, "priceBasisQuantity": D("0.0000000001")})]))
    fields = [e.field for e in info.value.errors]
    assert info.value.http_status == 400 and {e.code for e in info.value.errors} == {"OUT_OF_RANGE"}
    assert fields[:2] == ["invoice.invoiceLines[1].netAmount", "invoice.invoiceLines[2].netAmount"]
    assert "invoice.documentTotals.payableAmount" in fields


def test_manual_keeps_amounts_and_fills_only_bt110():
    data = base_request([line(1, 1, 10, netAmount=D("10.005"))],
                        [{"vatCategoryCode": "S", "vatCategoryRate": 19, "vatCategoryTaxableAmount": D("10"),
                          "vatCategoryTaxAmount": D("1.9")}],
                        documentTotals={"lineExtensionAmount": D("10")})
    data["config"]["calculationMode"] = "MANUAL"
    inv = calc(data).invoice
    assert inv.invoiceLines[0].netAmount == D("10.005")
    assert inv.documentTotals.lineExtensionAmount == D("10") and inv.documentTotals.payableAmount is None
    assert inv.documentTotals.taxTotalAmount == D("1.9")
    data["invoice"]["vatBreakdowns"].append({"vatCategoryCode": "S", "vatCategoryRate": 7})
    assert calc(data).invoice.documentTotals.taxTotalAmount is None   # not every BT-117 sent: nothing summed


def test_input_model_is_not_modified():
    req = validate_request(base_request([line(1, 1, 10)]), "xrechnung")
    calculate(req)
    assert req.invoice.documentTotals.payableAmount is None and req.invoice.vatBreakdowns == []


# ---- invariants of every AUTO result (property test) ------------------------------------------------------------

VAT = [("S", D(19)), ("S", D(7)), ("S", D("5.5")), ("Z", D(0)), ("E", D(0))]
amounts = st.decimals(min_value=D("-500"), max_value=D("5000"), places=2)


@st.composite
def invoices(draw, vat=VAT):
    used = draw(st.lists(st.sampled_from(vat), min_size=1, max_size=3, unique=True))
    lines = []
    for n in range(draw(st.integers(1, 6))):
        cat, rate = draw(st.sampled_from(used))
        item = line(n + 1, draw(st.decimals(min_value=D("-50"), max_value=D("1000"), places=3)),
                    draw(st.decimals(min_value=D("0"), max_value=D("2000"), places=4)), cat, rate)
        if draw(st.booleans()):
            item["priceDetails"]["priceBasisQuantity"] = draw(st.sampled_from([D(1), D(10), D(100), D("0.5")]))
        if draw(st.booleans()):
            value = draw(st.decimals(min_value=0, max_value=100, places=2))
            item["invoiceLineAllowances"] = [{draw(st.sampled_from(["amount", "percentage"])): value, "reason": "r"}]
        if draw(st.booleans()):
            item["invoiceLineCharges"] = [{"amount": draw(st.decimals(min_value=0, max_value=100, places=2)),
                                           "reason": "c"}]
        lines.append(item)
    doc = {}
    for key in ("documentLevelAllowances", "documentLevelCharges"):
        items = []
        for _ in range(draw(st.integers(0, 2))):
            cat, rate = draw(st.sampled_from(used))
            if draw(st.booleans()):
                items.append({"amount": draw(st.decimals(min_value=0, max_value=200, places=2)),
                              "vatCategoryCode": cat, "vatRate": rate, "reason": "x"})
            else:
                items.append({"percentage": draw(st.decimals(min_value=0, max_value=20, places=2)),
                              "vatCategoryCode": cat, "vatRate": rate, "reason": "x"})
        if items:
            doc[key] = items
    totals = {}
    if draw(st.booleans()):
        totals["prepaidAmount"] = draw(amounts)
    if draw(st.booleans()):
        totals["payableRoundingAmount"] = draw(st.decimals(min_value=D("-0.99"), max_value=D("0.99"), places=2))
    # breakdowns as a template sends them: any of the rates, used by the lines or not (AUTO completes or drops them)
    sent = draw(st.lists(st.sampled_from(vat), max_size=3, unique=True))
    breakdowns = [{"vatCategoryCode": cat, "vatCategoryRate": rate} for cat, rate in sent]
    return base_request(lines, breakdowns, documentTotals=totals, **doc)


def two_decimals(value: D) -> bool:
    return value == value.quantize(D("0.01"))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(invoices())
def test_auto_results_satisfy_the_official_invariants(data):
    inv = calc(data).invoice
    t = inv.documentTotals
    lines = inv.invoiceLines
    allowances = inv.documentLevelAllowances or []
    charges = inv.documentLevelCharges or []
    amounts_written = [l.netAmount for l in lines] + [a.amount for a in allowances + charges] + [
        b.vatCategoryTaxableAmount for b in inv.vatBreakdowns] + [b.vatCategoryTaxAmount for b in inv.vatBreakdowns] + [
        v for v in (t.lineExtensionAmount, t.allowanceTotalAmount, t.chargeTotalAmount, t.taxExclusiveAmount,
                    t.taxTotalAmount, t.taxInclusiveAmount, t.payableAmount) if v is not None]
    for l in lines:
        amounts_written += [a.amount for a in (l.invoiceLineAllowances or []) + (l.invoiceLineCharges or [])]
    assert all(two_decimals(a) for a in amounts_written)                                    # BR-DEC-*
    assert t.lineExtensionAmount == sum(l.netAmount for l in lines)                          # BR-CO-10
    assert (t.allowanceTotalAmount or 0) == sum(a.amount for a in allowances)                # BR-CO-11
    assert (t.chargeTotalAmount or 0) == sum(c.amount for c in charges)                      # BR-CO-12
    assert t.taxExclusiveAmount == (t.lineExtensionAmount - (t.allowanceTotalAmount or 0)
                                    + (t.chargeTotalAmount or 0))                            # BR-CO-13
    assert t.taxTotalAmount == sum(b.vatCategoryTaxAmount for b in inv.vatBreakdowns)        # BR-CO-14
    assert t.taxInclusiveAmount == t.taxExclusiveAmount + t.taxTotalAmount                   # BR-CO-15
    assert t.payableAmount == (t.taxInclusiveAmount - (t.prepaidAmount or 0)
                               + (t.payableRoundingAmount or 0))                             # BR-CO-16
    for b in inv.vatBreakdowns:
        key = (b.vatCategoryCode, b.vatCategoryRate)
        expected = (sum(l.netAmount for l in lines
                        if (l.lineVatInformation.vatCategoryCode, l.lineVatInformation.vatRate) == key)
                    + sum(c.amount for c in charges if (c.vatCategoryCode, c.vatRate) == key)
                    - sum(a.amount for a in allowances if (a.vatCategoryCode, a.vatRate) == key))
        assert b.vatCategoryTaxableAmount == expected                                       # BR-S-08, BR-Z/E-08
        assert b.vatCategoryTaxAmount == money(b.vatCategoryTaxableAmount * b.vatCategoryRate / 100)  # BR-CO-17
    for l in lines:                                                     # BT-131 (PEPPOL-EN16931-R120, slack 0.02)
        p = l.priceDetails
        gross = l.quantity * p.netPrice / (p.priceBasisQuantity or 1)
        expected = gross - sum(a.amount for a in l.invoiceLineAllowances or []) + sum(
            c.amount for c in l.invoiceLineCharges or [])
        assert abs(l.netAmount - expected) <= D("0.01")


# ---- the traps, judged by the official rules ---------------------------------------------------------------------

def official_errors(data: dict, spec: str, syntax: str) -> list[str]:
    """Rule ids of the ERROR findings of the official rules for a calculated request."""
    from pipeline.flows.validate_xml import validate_xml
    from pipeline.write import transform

    data = copy.deepcopy(data)
    data["config"]["syntax"] = syntax
    canonical = to_canonical(with_derived(calculate(validate_request(data, spec))))
    params = transform.params_for(spec)
    xml = transform.to_cii(canonical, params) if syntax == "CII" else transform.to_ubl(canonical, params)
    report = validate_xml(xml, spec)
    return sorted({i.code for i in report.issues if i.severity == "ERROR"})


SPECS_SYNTAXES = [("xrechnung", "CII"), ("xrechnung", "UBL"), ("en16931", "CII"), ("en16931", "UBL")]


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_trap_two_tax_totals_when_bt6_differs(spec, syntax):
    """BR-CO-15 with a second TaxTotalAmount in the VAT accounting currency (BT-111), BR-53."""
    data = base_request([line(1, 3, "33.33"), line(2, 1, "10.07", rate=7)],
                        [{"vatCategoryCode": "S", "vatCategoryRate": 19}],
                        currencyCode="USD", vatAccountingCurrencyCode="EUR",
                        documentTotals={"taxTotalAmountInAccountingCurrency": D("18.12")})
    assert official_errors(data, spec, syntax) == []


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_trap_negative_lines_and_credit_amounts(spec, syntax):
    """BR-CO-17 / BR-S-09 with negative taxable amounts and half-cent tax (abs() in the rules)."""
    data = base_request([line(1, 1, "10.50"), line(2, -3, "3.50"), line(3, -1, "0.50", rate=7),
                         line(4, "-2.5", "1.01")])
    inv = calc(data).invoice
    assert inv.documentTotals.payableAmount < 0
    assert official_errors(data, spec, syntax) == []


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_trap_gross_price_with_discount_and_no_net_price(spec, syntax):
    """BT-148 and BT-147 sent, BT-146 not: the net price is gross - discount (PEPPOL-EN16931-R046), never the gross
    price, which would overcharge every such line."""
    data = base_request([line(1, 2, 0, priceDetails={"grossPrice": D("100.00"), "priceDiscount": D("10.00")})])
    (l,) = calc(data).invoice.invoiceLines
    assert (l.priceDetails.netPrice, l.netAmount) == (D("90.00"), D("180.00"))
    assert official_errors(data, spec, syntax) == []


def test_a_gross_price_below_the_net_price_is_a_400():
    """The price discount (BT-147 = gross - net) would be negative: the official rules let it pass, it means
    nothing."""
    data = base_request([line(1, 2, 0, priceDetails={"grossPrice": D("70.00"), "netPrice": D("80.00")})])
    with pytest.raises(ApiError) as info:
        calc(data)
    (entry,) = info.value.errors
    assert (entry.code, entry.field, entry.businessTerm) == (
        "OUT_OF_RANGE", "invoice.invoiceLines[0].priceDetails.grossPrice", "BT-148")


def test_a_price_discount_above_the_gross_price_is_a_400():
    data = base_request([line(1, 2, 0, priceDetails={"grossPrice": D("10.00"), "priceDiscount": D("12.00")})])
    with pytest.raises(ApiError) as info:
        calc(data)
    assert info.value.http_status == 400
    (entry,) = info.value.errors
    assert (entry.code, entry.field) == ("OUT_OF_RANGE", "invoice.invoiceLines[0].priceDetails.priceDiscount")


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_trap_credit_note_381(spec, syntax):
    data = base_request([line(1, 2, "19.99"), line(2, 1, "0.05", rate=7)], invoiceTypeCode="381",
                        precedingInvoiceReference={"documentReference": "RE-2024-00700", "issueDate": "2024-02-01"})
    assert official_errors(data, spec, syntax) == []


@pytest.mark.parametrize("spec,syntax", SPECS_SYNTAXES)
def test_trap_sent_breakdown_for_a_rate_nothing_has(spec, syntax):
    """A template that always sends the 19 % and 7 % breakdowns, on an invoice with 19 % lines only: AUTO leaves the
    7 % one out (a zero breakdown passed the CII rules but the UBL rules' BR-S-08 refused it, so the same request
    gave CII and a 422 for UBL); MANUAL keeps what was sent."""
    data = base_request([line(1, 2, "50")], [{"vatCategoryCode": "S", "vatCategoryRate": 19},
                                             {"vatCategoryCode": "S", "vatCategoryRate": 7}])
    (b,) = calc(data).invoice.vatBreakdowns
    assert (b.vatCategoryRate, b.vatCategoryTaxableAmount, b.vatCategoryTaxAmount) == (D(19), D("100.00"), D("19.00"))
    assert official_errors(data, spec, syntax) == []
    manual = copy.deepcopy(data)
    manual["config"]["calculationMode"] = "MANUAL"
    manual["invoice"]["vatBreakdowns"][1].update(vatCategoryTaxableAmount=D(0), vatCategoryTaxAmount=D(0))
    assert len(calc(manual).invoice.vatBreakdowns) == 2


@pytest.mark.parametrize("spec,syntax", [("en16931", "CII"), ("en16931", "UBL")])
def test_trap_per_breakdown_rounding_br_co_14(spec, syntax):
    """AUTO's BT-110 (sum of rounded BT-117) passes; the naive round(sum of exact taxes) = 2.61 fails BR-CO-14."""
    data = base_request([line(1, 1, "10.01"), line(2, 1, "10.07", rate=7)])
    assert official_errors(data, spec, syntax) == []
    manual = copy.deepcopy(data)
    manual["config"]["calculationMode"] = "MANUAL"
    inv = manual["invoice"]
    inv["invoiceLines"][0]["netAmount"], inv["invoiceLines"][1]["netAmount"] = D("10.01"), D("10.07")
    inv["vatBreakdowns"] = [
        {"vatCategoryCode": "S", "vatCategoryRate": 19, "vatCategoryTaxableAmount": D("10.01"),
         "vatCategoryTaxAmount": D("1.90")},
        {"vatCategoryCode": "S", "vatCategoryRate": 7, "vatCategoryTaxableAmount": D("10.07"),
         "vatCategoryTaxAmount": D("0.70")}]
    inv["documentTotals"] = {"lineExtensionAmount": D("20.08"), "taxExclusiveAmount": D("20.08"),
                             "taxTotalAmount": D("2.61"), "taxInclusiveAmount": D("22.69"),
                             "payableAmount": D("22.69")}
    assert "BR-CO-14" in official_errors(manual, spec, syntax)
    inv["documentTotals"].update(taxTotalAmount=D("2.60"), taxInclusiveAmount=D("22.68"), payableAmount=D("22.68"))
    assert official_errors(manual, spec, syntax) == []


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(data=invoices(vat=[("S", D(19)), ("S", D(7)), ("S", D("5.5")), ("Z", D(0))]))
def test_random_auto_invoices_pass_the_official_rules(syntax, data):
    """Whatever lines, prices, allowances and charges: AUTO amounts satisfy the official EN 16931 rules."""
    assert official_errors(data, "en16931", syntax) == []


_edge_numbers = st.decimals(min_value=D("-999999999999999.9999999999"), max_value=D("999999999999999.9999999999"),
                            places=10) | st.sampled_from([D(0), D("-0"), D("0E-10"), D("1E-10"), D("1E+14")])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_edge_numbers, _edge_numbers, _edge_numbers, _edge_numbers), min_size=1, max_size=4),
       _edge_numbers)
def test_any_numbers_within_the_model_bounds_give_a_document_or_a_400(values, allowance):
    from pipeline.flows.generate_xml import normalize
    from pipeline.invoice.request_json import dump_request

    lines = [line(i + 1, q, p, priceDetails={"netPrice": p, "priceBasisQuantity": abs(b) or D(1)},
                  invoiceLineAllowances=[{"percentage": pct, "reason": "r"}])
             for i, (q, p, b, pct) in enumerate(values)]
    data = base_request(lines, documentLevelAllowances=[{"amount": allowance, "vatCategoryCode": "S",
                                                         "vatRate": D(19), "reason": "x"}])
    try:
        normalize(dump_request(data), "en16931")
    except ApiError as exc:
        assert exc.http_status == 400 and exc.errors
