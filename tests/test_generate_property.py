"""Property: whatever amounts a client sends, AUTO calculation yields documents the official rules accept,
in both specs and syntaxes, and every sent term reads back unchanged (hypothesis-generated invoices:
quantities with decimals and signs, unit prices with 4 decimals, price base quantities, line and document
allowances and charges, two standard rates, a zero-rated and an exempt line; prepaid and rounding amounts, line
amounts a cent off quantity x price, and any part of the derived amounts sent, the rest left to AUTO)."""
from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.flows import generate_xml as generate
from pipeline.invoice.model import validate_request
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.write.calc import calculate
from pipeline.cli.golden import FIXTURES
from roundtrip.reader import NOT_WRITTEN, flatten, read_terms

BASE = load_request((FIXTURES / "vat-g-export.json").read_bytes())

quantity = st.decimals(min_value=Decimal("-20"), max_value=Decimal("500"), places=3).filter(lambda d: d != 0)
price = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("9999"), places=4)
percent = st.decimals(min_value=Decimal("0.5"), max_value=Decimal("30"), places=2)
amount = st.decimals(min_value=Decimal("0.01"), max_value=Decimal("50"), places=2)
CATEGORIES = [("S", Decimal("19")), ("S", Decimal("7")), ("Z", Decimal("0")), ("E", Decimal("0"))]


@st.composite
def lines(draw):
    n = draw(st.integers(min_value=1, max_value=6))
    out = []
    for i in range(n):
        category, rate = draw(st.sampled_from(CATEGORIES))
        line = {"lineIdentifier": str(i + 1), "itemInformation": {"name": f"Artikel {i + 1}"},
                "quantity": draw(quantity), "unitCode": "C62",
                "priceDetails": {"netPrice": draw(price)},
                "lineVatInformation": {"vatCategoryCode": category, "vatRate": rate}}
        if draw(st.booleans()):
            line["priceDetails"]["priceBasisQuantity"] = draw(st.sampled_from([Decimal(1), Decimal(10), Decimal(100)]))
        if draw(st.booleans()):
            line["invoiceLineAllowances"] = [{"percentage": draw(percent), "reason": "Rabatt"}]
        if draw(st.booleans()):
            line["invoiceLineCharges"] = [{"amount": draw(amount), "reason": "Zuschlag"}]
        out.append(line)
    return out


@st.composite
def requests(draw):
    request = {"invoice": dict(BASE["invoice"]), "config": {"syntax": draw(st.sampled_from(["CII", "UBL"]))}}
    invoice = request["invoice"]
    invoice["seller"] = dict(invoice["seller"], vatIdentifier="DE123456789")
    invoice["invoiceLines"] = draw(lines())
    used = {(l["lineVatInformation"]["vatCategoryCode"], l["lineVatInformation"]["vatRate"]) for l in invoice["invoiceLines"]}
    invoice["vatBreakdowns"] = [
        {"vatCategoryCode": c, "vatCategoryRate": r,
         **({"exemptionReason": "Steuerfrei nach § 4 Nr. 14 UStG"} if c == "E" else {})}
        for c, r in CATEGORIES if (c, r) in used]
    category, rate = sorted(used)[0]
    if draw(st.booleans()):
        invoice["documentLevelAllowances"] = [{"amount": draw(amount), "vatCategoryCode": category, "vatRate": rate,
                                               "reason": "Nachlass"}]
    if draw(st.booleans()):
        invoice["documentLevelCharges"] = [{"amount": draw(amount), "vatCategoryCode": category, "vatRate": rate,
                                            "reason": "Versand"}]
    invoice["documentTotals"] = {}
    if draw(st.booleans()):
        invoice["documentTotals"]["prepaidAmount"] = draw(amount)
    if draw(st.booleans()):
        invoice["documentTotals"]["payableRoundingAmount"] = draw(st.sampled_from(
            [Decimal("-0.02"), Decimal("0.01"), Decimal("0.04")]))
    if draw(st.booleans()):
        # line amounts an ERP computed from unrounded prices: a cent off quantity x price (kept, the totals follow)
        computed = _amounts(request)
        for i, line in enumerate(invoice["invoiceLines"]):
            if draw(st.booleans()):
                line["netAmount"] = computed[f"invoiceLines[{i}].netAmount"] + draw(st.sampled_from(
                    [Decimal("-0.01"), Decimal("0.01")]))
    # any part of the derived amounts sent (as AUTO computes them from what is sent), the rest left out
    computed = _amounts(request)
    for path in draw(st.sets(st.sampled_from(sorted(computed)))):
        _put(invoice, path, computed[path])
    return request


def _amounts(request: dict) -> dict[str, Decimal]:
    """{invoice path: amount} of every amount AUTO writes for a request (paths as `flatten` spells them)."""
    invoice = calculate(validate_request(load_request(dump_request(request)), "en16931")).invoice
    return {k: Decimal(str(v)) for k, v in flatten(invoice.model_dump(exclude_none=True)).items()
            if k.rsplit(".", 1)[-1] == "amount" or k.endswith("Amount")}


def _put(invoice: dict, path: str, value: Decimal) -> None:
    """Set `invoiceLines[2].invoiceLineAllowances[0].amount` style paths in the request."""
    target = invoice
    steps = path.replace("]", "").split(".")
    for step in steps[:-1]:
        name, _, index = step.partition("[")
        target = target[name][int(index)] if index else target.setdefault(name, {})
    target[steps[-1]] = value


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=requests(), spec=st.sampled_from(["xrechnung", "en16931"]))
def test_auto_calculation_always_gives_valid_documents_that_carry_the_request(request, spec):
    xml, report = generate.generate_xml(dump_request(request), spec)
    assert report.valid
    back = flatten(read_terms(xml).terms)
    sent = {k: v for k, v in flatten(request["invoice"]).items() if k.split(".")[0] not in NOT_WRITTEN}
    assert {k: back.get(k) for k in sent} == sent       # every sent amount (and term) unchanged
    # what AUTO filled in is what it computes from the sent amounts: the same as with none of the derived ones sent
    expected = {k: format(v.normalize(), "f") if v else "0" for k, v in _amounts(request).items()}
    assert {k: back.get(k) for k in expected} == expected


# ---- damaged requests on every generation endpoint: a clear 4xx (or a valid document), never a 500 ----------

from falcon import testing  # noqa: E402

from pipeline.cli.golden import invoice_fixtures  # noqa: E402
from pipeline.service.app import create_app  # noqa: E402
from pipeline.flows.validate_pdf import validate_pdf  # noqa: E402

_BODIES = [load_request(p.read_bytes()) for p in invoice_fixtures()]
_CLIENT = testing.TestClient(create_app(platform=False))


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


@st.composite
def damaged(draw):
    import copy
    request = copy.deepcopy(draw(st.sampled_from(_BODIES)))
    path = draw(st.sampled_from([p for p in _paths(request) if p]))
    parent = request
    for step in path[:-1]:
        parent = parent[step]
    how = draw(st.sampled_from(["delete", "string", "number", "negative", "empty", "list", "long", "any script"]))
    if how == "delete":
        del parent[path[-1]]
    elif how == "any script":   # text from any plane: CJK, emoji, joiners, unassigned and private-use code points
        parent[path[-1]] = draw(st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40))
    else:
        parent[path[-1]] = {"string": "x", "number": Decimal("123456.789"), "negative": Decimal("-1"), "empty": "",
                            "list": [], "long": "Ä" * 5000}[how]
    return request


@settings(max_examples=90, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request=damaged(), spec=st.sampled_from(["xrechnung", "en16931", "zugferd"]))
def test_damaged_requests_get_a_clear_answer(request, spec):
    if spec == "zugferd" and isinstance(request.get("config"), dict):
        request["config"]["syntax"] = "CII"   # reach the PDF stages, not the UBL refusal
    resp = _CLIENT.simulate_post(f"/v1/invoice/{spec}", body=dump_request(request),
                                 headers={"Content-Type": "application/json"})
    assert resp.status_code in (200, 400, 422), resp.text
    if resp.status_code == 200:
        if spec == "zugferd":
            assert validate_pdf(resp.content).valid
        else:
            assert generate.validate(resp.content, spec).valid
        return
    body = resp.json
    # 422 = the official rules refused the invoice; a PDF/A failure of our own page would be our bug, whatever the text
    assert body["errorCode"] == {400: "INVALID_INPUT", 422: "VALIDATION_FAILED"}[resp.status_code], resp.text
    assert body["errors"] and all(e["code"] and e["message"] for e in body["errors"])
    if resp.status_code == 400:
        assert all(e["field"] for e in body["errors"])
