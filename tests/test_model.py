"""Request model and parse_request: every class of input error as a 400 INVALID_INPUT with field path and BT,
and the business-term table that names them."""
from __future__ import annotations

import importlib.util
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from lxml import etree
from pydantic import BaseModel

from pipeline.invoice import terms
from pipeline.errors import ApiError
from pipeline.invoice.model import InvoiceRequest, parse_request, validate_request
from pipeline.flows.generate_xml import normalize
from pipeline.invoice.model import field_kind  # the type walk the schema generator uses
from pipeline.invoice.request_json import dumps
from pipeline.write.canonical import schema as canonical_schema
from pipeline.invoice.terms import ARRAY_ITEMS

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "tests" / "data" / "request-standard.json"


def sample() -> dict:
    return json.loads(SAMPLE.read_bytes(), parse_float=Decimal)


def body(data) -> bytes:
    return json.dumps(data, default=lambda d: float(d) if isinstance(d, Decimal) else str(d)).encode()


def errors_of(raw: bytes, spec: str = "xrechnung") -> list[dict]:
    with pytest.raises(ApiError) as info:
        parse_request(raw, spec)
    err = info.value
    assert (err.http_status, err.error_code) == (400, "INVALID_INPUT")
    return [e.to_dict() for e in err.errors]


def only_error(data: dict, spec: str = "xrechnung") -> dict:
    errors = errors_of(body(data), spec)
    assert len(errors) == 1, errors
    return errors[0]


# ---- valid requests ---------------------------------------------------------------------------------------------

def test_sample_parses_with_decimals_and_defaults():
    req = parse_request(SAMPLE.read_bytes(), "xrechnung")
    assert req.config.spec == "xrechnung" and req.config.calculationMode == "AUTO"
    assert req.invoice.invoiceLines[0].quantity == Decimal("12.5")
    assert isinstance(req.invoice.invoiceLines[2].priceDetails.netPrice, Decimal)
    assert str(req.invoice.invoiceLines[2].priceDetails.netPrice) == "4.99"   # never through float
    assert req.invoice.issueDate == "2024-03-15"   # as sent (a time zone would stay: issue 23)


def test_case_insensitive_config_and_codes_are_normalised():
    data = sample()
    data["config"] = {"syntax": "ubl", "calculationMode": "manual", "spec": "XRechnung"}
    data["invoice"]["currencyCode"] = "eur"
    data["invoice"]["seller"]["postalAddress"]["countryCode"] = "de"
    data["invoice"]["invoiceLines"][0]["lineVatInformation"]["vatCategoryCode"] = "s"
    req = parse_request(body(data), "xrechnung")
    assert (req.config.syntax, req.config.calculationMode, req.config.spec) == ("UBL", "MANUAL", "xrechnung")
    assert req.invoice.currencyCode == "EUR"
    assert req.invoice.seller.postalAddress.countryCode == "DE"
    assert req.invoice.invoiceLines[0].lineVatInformation.vatCategoryCode == "S"


def test_metadata_language_on_zugferd_is_case_insensitive():
    data = sample()
    data["config"] = {"syntax": "CII", "metadataLanguage": "DE"}
    assert parse_request(body(data), "zugferd").config.metadataLanguage == "de"


# ---- body-level errors ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("raw,code", [
    (b"", "EMPTY_BODY"),
    (b"  \n ", "EMPTY_BODY"),
    (b"{", "MALFORMED_JSON"),
    (b'{"invoice": 1,}', "MALFORMED_JSON"),
    (b"\xff\xfe{}", "MALFORMED_JSON"),
    (b'{"invoice": NaN}', "MALFORMED_JSON"),
    (b'{"invoice": Infinity}', "MALFORMED_JSON"),
    (b'{"config": {}, "config": {}}', "MALFORMED_JSON"),
    (b"[1, 2]", "INVALID_TYPE"),
    (b'"text"', "INVALID_TYPE"),
    (b"[" * 100_000, "MALFORMED_JSON"),
    (b'{"invoice": {"invoiceNumber": ' + b"9" * 5000 + b"}}", "MALFORMED_JSON"),
])
def test_body_errors_have_the_same_shape_without_field(raw, code):
    errors = errors_of(raw)
    assert [e["code"] for e in errors] == [code]
    assert errors[0]["field"] is None and errors[0]["businessTerm"] is None and errors[0]["message"]


# ---- field errors: code, path with indexes, business term, rejected value -----------------------------------

def test_missing_nested_field():
    data = sample()
    del data["invoice"]["seller"]["postalAddress"]["city"]
    e = only_error(data)
    assert e == {**e, "code": "REQUIRED", "field": "invoice.seller.postalAddress.city", "businessTerm": "BT-37",
                 "rejectedValue": None}
    assert "BT-37" in e["message"] and "City" in e["message"]


def test_a_json_request_must_send_the_payment_means_code():
    """BT-81 is API_REQUIRED: a document read from CII may state BT-83 without it (tests/test_realworld.py), a
    JSON request may not."""
    data = sample()
    del data["invoice"]["paymentInstructions"]["meansCode"]
    e = only_error(data)
    assert e == {**e, "code": "REQUIRED", "field": "invoice.paymentInstructions.meansCode", "businessTerm": "BT-81"}


@pytest.mark.parametrize("value, code", [("2016-04-04+01:00", None), ("2016-04-04Z", None),
                                         ("2016-02-30+01:00", "INVALID_FORMAT"), ("2016-04-04T10:00", "INVALID_FORMAT"),
                                         ("2016-04-04+25:00", "INVALID_FORMAT")])
def test_a_date_may_carry_a_time_zone_as_xs_date_allows(value, code):
    data = sample()
    data["invoice"]["issueDate"] = value
    if code is None:
        assert validate_request(data, "en16931").invoice.issueDate == value
    else:
        e = only_error(data)
        assert (e["code"], e["field"]) == (code, "invoice.issueDate")


def test_extended_line_hierarchy_only_in_a_cii_that_says_extended():
    data = sample()
    data["invoice"]["invoiceLines"][0]["lineStatusReasonCode"] = "DETAIL"
    e = only_error(data)
    assert (e["code"], e["field"]) == ("INVALID_VALUE", "invoice.invoiceLines[0].lineStatusReasonCode")
    assert "EXTENDED" in e["message"]
    data["config"]["syntax"] = "CII"
    data["invoice"].setdefault("processControl", {})["specificationIdentifier"] = (
        "urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended")
    request = validate_request(data, "en16931")
    assert request.invoice.invoiceLines[0].lineStatusReasonCode == "DETAIL"


def test_missing_top_level_objects():
    errors = errors_of(b'{"invoice": {}, "config": {}}')
    fields = {e["field"]: (e["code"], e["businessTerm"]) for e in errors}
    assert fields["invoice.invoiceNumber"] == ("REQUIRED", "BT-1")
    assert fields["invoice.seller"] == ("REQUIRED", "BG-4")
    assert fields["invoice.invoiceLines"] == ("REQUIRED", "BG-25")
    assert fields["config.syntax"] == ("REQUIRED", None)


def test_wrong_type_in_third_line():
    data = sample()
    data["invoice"]["invoiceLines"][2]["quantity"] = "seven"
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        "INVALID_TYPE", "invoice.invoiceLines[2].quantity", "BT-129", "seven")


@pytest.mark.parametrize("value", ["12.5", True, [1], {"v": 1}])
def test_numbers_accept_json_numbers_only(value):
    data = sample()
    data["invoice"]["invoiceLines"][0]["priceDetails"]["netPrice"] = value
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == (
        "INVALID_TYPE", "invoice.invoiceLines[0].priceDetails.netPrice", "BT-146")


@pytest.mark.parametrize("value", ["1e30", "1e-20", "1e999999999", "-1e-999999999", "0.12345678901"])
def test_number_bounds(value):
    """rejectedValue is the number as sent, also out of range (the error body writes it digit for digit)."""
    from pipeline.invoice.request_json import dumps

    raw = SAMPLE.read_bytes().replace(b'"amount": 12.50', b'"amount": ' + value.encode())
    errors = errors_of(raw)
    assert [(e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) for e in errors] == [
        ("OUT_OF_RANGE", "invoice.documentLevelCharges[0].amount", "BT-99", Decimal(value))]
    written = dumps(errors[0])
    assert json.loads(written, parse_float=Decimal)["rejectedValue"] == Decimal(value) and len(written) < 1000


def test_a_sent_text_shaped_like_a_number_marker_stays_text():
    """request_json.dumps marks Decimals with a per-call random tag: a hostile string of the same shape is kept."""
    from pipeline.invoice.request_json import dumps

    fake = "\x00" + "0" * 16 + "0\x00"
    assert json.loads(dumps({"s": fake, "n": Decimal("1.50"), "k": [fake]})) == {"s": fake, "n": 1.5, "k": [fake]}
    assert '"n": 1.50' in dumps({"s": fake, "n": Decimal("1.50")})


def test_unknown_field_is_rejected_not_dropped():
    data = sample()
    data["invoice"]["seller"]["postalAdress"] = data["invoice"]["seller"].pop("postalAddress")
    e = only_error(data)
    assert (e["code"], e["field"]) == ("UNKNOWN_FIELD", "invoice.seller.postalAdress")
    assert e["businessTerm"] == "BG-4"   # nearest known parent
    assert e["rejectedValue"]["city"] == "Berlin"


def test_hostile_unknown_fields_are_cut_and_capped():
    data = sample()
    data["invoice"]["seller"].update({f"k{i}": i for i in range(5000)})
    data["invoice"]["seller"]["x" * 100_000] = 1
    with pytest.raises(ApiError) as info:
        parse_request(body(data), "xrechnung")
    assert len(info.value.errors) == 100 and "5001" in info.value.message
    assert all(len(e.field) < 200 for e in info.value.errors)


def test_unknown_field_in_config_and_root():
    data = sample()
    data["config"]["calculation"] = "AUTO"
    data["extra"] = 1
    fields = {(e["code"], e["field"]) for e in errors_of(body(data))}
    assert fields == {("UNKNOWN_FIELD", "config.calculation"), ("UNKNOWN_FIELD", "extra")}


@pytest.mark.parametrize("value", ["", "   "])
def test_empty_strings_rejected(value):
    data = sample()
    data["invoice"]["invoiceNumber"] = value
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        "INVALID_VALUE", "invoice.invoiceNumber", "BT-1", value)


@pytest.mark.parametrize("value", ["A\u0000B", "A\u001bB", "A\ufffeB", "A\ud800B"])
def test_characters_xml_cannot_carry_are_rejected(value):
    data = sample()
    data["invoice"]["invoiceLines"][0]["itemInformation"]["name"] = value
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == (
        "INVALID_VALUE", "invoice.invoiceLines[0].itemInformation.name", "BT-153")
    if value[1] != "\ud800":   # (a lone surrogate is no string at all to pydantic: refused before this check)
        assert f"(U+{ord(value[1]):04X})" in e["message"]   # the character named as people write it


def test_too_long_string_is_cut_in_the_error():
    data = sample()
    data["invoice"]["buyer"]["name"] = "x" * 5000
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == ("TOO_LONG", "invoice.buyer.name", "BT-44")
    assert len(e["rejectedValue"]) < 300


def test_non_string_for_string_field():
    data = sample()
    data["invoice"]["invoiceNumber"] = 4711
    e = only_error(data)
    assert (e["code"], e["field"], e["rejectedValue"]) == ("INVALID_TYPE", "invoice.invoiceNumber", 4711)


@pytest.mark.parametrize("value,code", [
    ("15.03.2024", "INVALID_FORMAT"), ("2024-02-30", "INVALID_FORMAT"), ("2024-3-1", "INVALID_FORMAT"),
    ("2024-03-01T10:00:00", "INVALID_FORMAT"), (20240301, "INVALID_TYPE"),
])
def test_dates_are_iso_calendar_dates(value, code):
    data = sample()
    data["invoice"]["invoicingPeriod"]["endDate"] = value
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        code, "invoice.invoicingPeriod.endDate", "BT-74", value)


@pytest.mark.parametrize("path,value,bt", [
    (("currencyCode",), "EURO", "BT-5"),
    (("vatAccountingCurrencyCode",), "XYZ", "BT-6"),
    (("invoiceTypeCode",), "999", "BT-3"),
    (("buyer", "postalAddress", "countryCode"), "XX", "BT-55"),
    (("invoiceLines", 1, "lineVatInformation", "vatCategoryCode"), "X", "BT-151"),
    (("vatBreakdowns", 0, "vatCategoryCode"), "VAT", "BT-118"),
    (("documentLevelAllowances", 0, "vatCategoryCode"), "SS", "BT-95"),
])
def test_code_lists(path, value, bt):
    data = sample()
    target = data["invoice"]
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    e = only_error(data)
    expected_field = "invoice" + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in path)
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        "INVALID_VALUE", expected_field, bt, value)


@pytest.mark.parametrize("rate", [150, -7])
def test_vat_rate_range(rate):
    data = sample()
    data["invoice"]["vatBreakdowns"][1]["vatCategoryRate"] = rate
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == ("OUT_OF_RANGE", "invoice.vatBreakdowns[1].vatCategoryRate",
                                                         "BT-119")


def test_a_rate_on_category_o_is_refused_not_dropped():
    """Category O has no VAT rate (BR-O-05..07): 0 is accepted (the spec requires a line's vatRate), another rate
    says the category is wrong."""
    data = sample()
    data["invoice"]["invoiceLines"][0]["lineVatInformation"] = {"vatCategoryCode": "O", "vatRate": 19}
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        "INVALID_VALUE", "invoice.invoiceLines[0].lineVatInformation.vatRate", "BT-152", 19)
    data["invoice"]["invoiceLines"][0]["lineVatInformation"]["vatRate"] = 0
    parse_request(body(data), "xrechnung")


def test_price_base_quantity_must_not_be_negative():
    """0 is valid EN 16931 and kept as sent (AUTO calculation refuses it: tests/test_realworld_more.py)."""
    data = sample()
    data["invoice"]["invoiceLines"][2]["priceDetails"]["priceBasisQuantity"] = -1
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == (
        "OUT_OF_RANGE", "invoice.invoiceLines[2].priceDetails.priceBasisQuantity", "BT-149")


def test_trailing_zeros_beyond_ten_places_are_dropped():
    raw = SAMPLE.read_bytes().replace(b'"amount": 12.50', b'"amount": 0e-999999999').replace(
        b'"netPrice": 80.00', b'"netPrice": 80.000000000000000000')
    req = parse_request(raw, "xrechnung")
    assert str(req.invoice.documentLevelCharges[0].amount) == "0E-10"
    assert req.invoice.invoiceLines[0].priceDetails.netPrice == 80


def test_at_least_one_line():
    data = sample()
    data["invoice"]["invoiceLines"] = []
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == ("INVALID_VALUE", "invoice.invoiceLines", "BG-25")


def test_every_problem_is_reported_at_once():
    data = sample()
    data["invoice"]["issueDate"] = "yesterday"
    data["invoice"]["invoiceLines"][1]["quantity"] = "3"
    del data["invoice"]["buyer"]["name"]
    data["config"]["syntax"] = "PDF"
    errors = errors_of(body(data))
    assert {(e["field"], e["code"]) for e in errors} == {
        ("invoice.issueDate", "INVALID_FORMAT"), ("invoice.invoiceLines[1].quantity", "INVALID_TYPE"),
        ("invoice.buyer.name", "REQUIRED"), ("config.syntax", "INVALID_VALUE")}


# ---- config and endpoint checks ---------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["xrechnung", "en16931"])
@pytest.mark.parametrize("language", ["en", "de"])
def test_metadata_language_rejected_on_xml_endpoints(spec, language):
    data = sample()
    data["config"]["metadataLanguage"] = language
    e = only_error(data, spec)
    assert (e["code"], e["field"], e["rejectedValue"]) == ("INVALID_VALUE", "config.metadataLanguage", language)


@pytest.mark.parametrize("language", ["de-DE", "en_GB", "fr", "english", 1])
def test_unsupported_or_region_qualified_language(language):
    data = sample()
    data["config"]["metadataLanguage"] = language
    e = only_error(data, "zugferd")
    assert e["field"] == "config.metadataLanguage" and e["code"] in ("INVALID_VALUE", "INVALID_TYPE")
    if language == "de-DE":
        assert "region" in e["message"]


def test_endpoint_errors_are_reported_with_field_errors():
    data = sample()
    data["config"].update(metadataLanguage="de", spec="zugferd")
    data["invoice"]["invoiceLines"][0]["quantity"] = "1"
    errors = errors_of(body(data), "en16931")
    assert {(e["field"], e["code"]) for e in errors} == {
        ("invoice.invoiceLines[0].quantity", "INVALID_TYPE"), ("config.metadataLanguage", "INVALID_VALUE"),
        ("config.spec", "INVALID_VALUE")}
    data["config"]["metadataLanguage"] = "de-DE"   # reported once, by the model
    assert [e["field"] for e in errors_of(body(data), "en16931")].count("config.metadataLanguage") == 1


def test_spec_must_match_endpoint():
    data = sample()
    data["config"]["spec"] = "en16931"
    e = only_error(data, "xrechnung")
    assert (e["code"], e["field"], e["rejectedValue"]) == ("INVALID_VALUE", "config.spec", "en16931")
    data["config"]["spec"] = "nonsense"
    assert only_error(data, "xrechnung")["code"] == "INVALID_VALUE"


def test_zugferd_needs_cii():
    data = sample()
    data["config"]["syntax"] = "UBL"
    assert only_error(data, "zugferd")["field"] == "config.syntax"


def test_calculation_mode_values():
    data = sample()
    data["config"]["calculationMode"] = "SEMI"
    assert only_error(data)["field"] == "config.calculationMode"


XR_ID = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"


@pytest.mark.parametrize("spec,profile,spec_id,ok", [
    ("xrechnung", None, XR_ID, True),
    ("xrechnung", None, "urn:cen.eu:en16931:2017", False),
    ("en16931", None, "urn:cen.eu:en16931:2017", True),
    ("en16931", None, XR_ID, False),
    ("zugferd", None, "urn:cen.eu:en16931:2017", True),
    ("zugferd", "EXTENDED", "urn:cen.eu:en16931:2017", False),
    ("zugferd", "EXTENDED", "urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended", True),
])
def test_specification_identifier_must_not_contradict(spec, profile, spec_id, ok):
    data = sample()
    data["invoice"]["processControl"]["specificationIdentifier"] = spec_id
    if profile:
        data["config"]["profile"] = profile
    if ok:
        parse_request(body(data), spec)
    else:
        e = only_error(data, spec)
        assert (e["field"], e["businessTerm"], e["rejectedValue"]) == (
            "invoice.processControl.specificationIdentifier", "BT-24", spec_id)


def test_invoice_currency_code_must_equal_currency_code():
    data = sample()
    data["invoice"]["invoiceCurrencyCode"] = "EUR"
    parse_request(body(data), "xrechnung")
    data["invoice"]["invoiceCurrencyCode"] = "USD"
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        "INVALID_VALUE", "invoice.invoiceCurrencyCode", "BT-5", "USD")


def test_vat_breakdowns_are_unique_per_category_and_rate():
    data = sample()
    data["invoice"]["vatBreakdowns"].append({"vatCategoryCode": "S", "vatCategoryRate": Decimal("19.00")})
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == ("INVALID_VALUE", "invoice.vatBreakdowns[2]", "BG-23")
    assert "vatBreakdowns[0]" in e["message"]
    assert e["rejectedValue"] == {"vatCategoryCode": "S", "vatCategoryRate": 19}
    assert json.loads(dumps(e))["rejectedValue"] == {"vatCategoryCode": "S", "vatCategoryRate": 19}   # plain JSON


def test_accounting_currency_needs_bt111():
    data = sample()
    data["invoice"]["vatAccountingCurrencyCode"] = "USD"
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == (
        "REQUIRED", "invoice.documentTotals.taxTotalAmountInAccountingCurrency", "BT-111")
    data["invoice"]["documentTotals"]["taxTotalAmountInAccountingCurrency"] = 215.44
    parse_request(body(data), "xrechnung")


def test_further_occurrences_of_repeatable_terms_are_accepted():
    data = sample()
    inv = data["invoice"]
    inv["additionalInvoiceNotes"] = [{"invoiceNote": "Zweite Bemerkung", "invoiceNoteSubjectCode": "AAI"}]
    inv["seller"].update(identifier="4000001123452", identifierSchemeId="0088",
                         additionalIdentifiers=[{"identifier": "DE-SUP-7"}])
    inv["paymentInstructions"]["additionalCreditTransfers"] = [{"accountIdentifier": "DE75512108001245126199"}]
    item = inv["invoiceLines"][0]["itemInformation"]
    item.update(classifiedIdentifier="43211503", classifiedIdentifierSchemeId="STI",
                additionalClassifiedIdentifiers=[{"classifiedIdentifier": "0815", "classifiedIdentifierSchemeId": "IB"}])
    req = parse_request(body(data), "xrechnung")
    assert req.invoice.additionalInvoiceNotes[0].invoiceNoteSubjectCode == "AAI"
    assert req.invoice.seller.additionalIdentifiers[0].identifierSchemeId is None
    assert req.invoice.invoiceLines[0].itemInformation.additionalClassifiedIdentifiers[0].classifiedIdentifier == "0815"


@pytest.mark.parametrize("owner,extra,first,item,bt", [
    ("invoice", "additionalInvoiceNotes", "invoiceNote", {"invoiceNote": "x"}, "BT-22"),
    ("invoice.seller", "additionalIdentifiers", "identifier", {"identifier": "x"}, "BT-29"),
    ("invoice.paymentInstructions", "additionalCreditTransfers", "creditTransfer", {"accountIdentifier": "x"}, "BG-17"),
    ("invoice.invoiceLines[1].itemInformation", "additionalClassifiedIdentifiers", "classifiedIdentifier",
     {"classifiedIdentifier": "x"}, "BT-158"),
])
def test_further_occurrences_need_the_first(owner, extra, first, item, bt):
    data = sample()
    obj = data
    for step in owner.replace("[1]", ".1").split("."):
        obj = obj[int(step)] if step.isdigit() else obj[step]
    obj.pop(first, None)
    obj[extra] = [item]
    e = only_error(data)
    assert (e["code"], e["field"], e["businessTerm"]) == ("REQUIRED", f"{owner}.{first}", bt)
    assert extra in e["message"]


def test_several_preceding_invoices_need_ubl():
    data = sample()
    data["invoice"]["precedingInvoiceReference"] = {"documentReference": "R-1"}
    data["invoice"]["additionalPrecedingInvoiceReferences"] = [{"documentReference": "R-2", "issueDate": "2024-01-02"}]
    e = only_error(data)   # the sample asks for CII, whose D16B schema has one InvoiceReferencedDocument
    assert (e["code"], e["field"], e["businessTerm"], e["rejectedValue"]) == (
        "INVALID_VALUE", "invoice.additionalPrecedingInvoiceReferences", "BG-3", ["R-2"])
    data["config"]["syntax"] = "UBL"
    assert parse_request(body(data), "xrechnung").invoice.additionalPrecedingInvoiceReferences[0].documentReference == "R-2"


# ---- the business-term table -----------------------------------------------------------------------------------

def model_paths(model: type[BaseModel], prefix: str, outer: tuple = ()) -> set[str]:
    """Field paths; a model nested in itself (sub-invoice lines) is walked once more, as the table's rows are."""
    paths = set()
    for name, field in model.model_fields.items():
        kind, typ = field_kind(field.annotation)
        path = f"{prefix}.{name}" + ("[]" if kind == "list" else "")
        paths.add(path)
        if isinstance(typ, type) and issubclass(typ, BaseModel) and outer.count(typ) < 2:
            paths |= model_paths(typ, path, outer + (model,))
    return paths


def test_every_model_field_has_a_row_and_every_row_a_field():
    fields = {terms.pattern_of(p[1:]) for p in model_paths(InvoiceRequest, "")}
    rows = set(terms.BY_PATH)
    assert fields - rows == set()
    assert rows - fields - {"invoice", "config"} == set()   # (BT-147 priceDiscount is a field since issue 23)


# Further occurrences of a term (the `additional...` extension arrays) repeat its BT; CII D16B cannot carry further
# preceding invoices (the model refuses them for CII), so those rows have a UBL binding only.
def _further_occurrence(t) -> bool:
    return ".additional" in t.json_path and "[]" in t.json_path and "SupportingDocuments" not in t.json_path


# The XRechnung extension's groups: UBL only (the model refuses them for CII); a sub-invoice line repeats the BTs of
# a line (its groups are BG-DEX-01..08).
_XRECHNUNG_EXTENSION = ("invoice.invoiceLines[].subInvoiceLines[]", "invoice.thirdPartyPayments[]")


def test_table_rows_are_complete_and_unique():
    assert len(terms.BY_PATH) == len(terms.TERMS)
    for t in terms.TERMS:
        if t.bt:
            assert t.bt.startswith(("BT-", "BG-")) and t.name
            if t.json_path.startswith("invoice.additionalPrecedingInvoiceReferences[]"):
                assert t.cii is None and t.ubl.startswith("(/Invoice/cac:BillingReference/"), t
            elif t.json_path.startswith(_XRECHNUNG_EXTENSION) and not t.bt.startswith("BT-X-"):
                assert t.cii is None and t.extension and t.ubl.startswith(
                    ("/Invoice/cac:InvoiceLine//cac:SubInvoiceLine", "/Invoice/cac:PrepaidPayment")), t
            elif t.bt.startswith("BT-X-"):   # Factur-X EXTENDED's line hierarchy: CII only (UBL-CR-646), no sub-line
                assert t.extension and t.ubl is None and (t.cii or "/rsm:CrossIndustryInvoice").startswith(
                    "/rsm:CrossIndustryInvoice") and (t.cii is None) == ("subInvoiceLines" in t.json_path), t
            elif t.json_path != "invoice.processControl":   # "(...)[position() > 1]": further occurrences
                assert t.cii.lstrip("(").startswith("/rsm:CrossIndustryInvoice"), t
                assert t.ubl.lstrip("(").startswith("/Invoice"), t
    bts = [t.bt for t in terms.TERMS if t.bt and t.json_path != "invoice.invoiceCurrencyCode"
           and not _further_occurrence(t) and not t.json_path.startswith(_XRECHNUNG_EXTENSION[0])]
    assert len(bts) == len(set(bts))
    further = {t.bt for t in terms.TERMS if _further_occurrence(t)}
    assert further == {"BG-1", "BT-22", "BT-21", "BG-3", "BT-25", "BT-26", "BT-29", "BT-29-1", "BG-17", "BT-84",
                       "BT-85", "BT-86", "BT-158", "BT-158-1", "BT-158-2"}
    # a rule about a term points at its single field (the first occurrence), never at a further one (section 2
    # has no BG-1 object: the note is BT-22)
    assert all(not _further_occurrence(terms.BY_PATH[terms.fields_for_bt(bt)[0]]) for bt in further - {"BG-1"})
    # the extension fields of docs/canonical.md are marked as extensions (priceDiscount: computed-only element)
    doc = (REPO / "docs" / "canonical.md").read_text()
    for t in terms.TERMS:
        if t.extension and t.json_path.startswith("invoice.") and not t.json_path.endswith("priceDiscount"):
            array = re.match(r".*\.additional\w+\[\]", t.json_path)   # a further occurrence: its array
            group = next((g for g in _XRECHNUNG_EXTENSION if t.json_path.startswith(g)), None)
            assert (t.json_path in doc or (_further_occurrence(t) and array.group() in doc)
                    or (group and group in doc)), t.json_path


def test_term_lookup_by_concrete_path_and_canonical_path():
    assert terms.business_term("invoice.invoiceLines[12].itemInformation.itemAttributes[0].value") == "BT-161"
    t = terms.term_for("invoice.seller.postalAddress.city")
    assert (t.bt, t.canonical) == ("BT-37", "/c:invoice/c:seller/c:postalAddress/c:city")
    assert t.cii.endswith("ram:SellerTradeParty/ram:PostalTradeAddress/ram:CityName")
    assert terms.term_for("invoice.vatBreakdowns[0]").canonical == "/c:invoice/c:vatBreakdown"
    assert set(ARRAY_ITEMS.values()) >= {"invoiceLine", "vatBreakdown"}


def test_rule_map_points_failed_rules_at_fields():
    assert terms.field_for_rule("BR-CO-10") == ("invoice.documentTotals.lineExtensionAmount", "BT-106")
    assert terms.field_for_rule("BR-CO-15") == ("invoice.documentTotals.taxInclusiveAmount", "BT-112")
    assert terms.field_for_rule("BR-45") == ("invoice.vatBreakdowns[].vatCategoryTaxableAmount", "BT-116")
    assert terms.field_for_rule("BR-DE-14") == ("invoice.vatBreakdowns[].vatCategoryRate", "BT-119")
    assert terms.field_for_rule("BR-CL-14")[1] == "BT-40"
    # the term a rule is about: the subject with its conditions removed, or the object of "shall have/contain"
    assert terms.field_for_rule("BR-S-08") == ("invoice.vatBreakdowns[].vatCategoryTaxableAmount", "BT-116")
    assert terms.field_for_rule("BR-S-09") == ("invoice.vatBreakdowns[].vatCategoryTaxAmount", "BT-117")
    assert terms.field_for_rule("BR-S-05") == ("invoice.invoiceLines[].lineVatInformation.vatRate", "BT-152")
    assert terms.field_for_rule("BR-O-05") == ("invoice.invoiceLines[].lineVatInformation.vatRate", "BT-152")
    assert terms.field_for_rule("BR-53") == ("invoice.documentTotals.taxTotalAmountInAccountingCurrency", "BT-111")
    assert terms.field_for_rule("BR-AE-04") == ("invoice.seller.vatIdentifier", "BT-31")
    assert terms.field_for_rule("BR-E-10") == ("invoice.vatBreakdowns[].exemptionReasonCode", "BT-121")
    assert terms.field_for_rule("CII-SR-001") == (None, None)
    # every business term an official rule names is a field of the table (section 2 or an extension)
    known = {t.bt for t in terms.TERMS if t.bt}
    named = {bt for bts in terms.RULE_TERMS.values() for bt in bts}
    assert named - known == set()
    assert terms.field_for_rule("BR-CL-06") == ("invoice.valueAddedTaxPointDateCode", "BT-8")
    assert terms.field_for_rule("PEPPOL-EN16931-R101") == ("invoice.invoiceLines[].objectIdentifier", "BT-128")


def test_generated_rule_table_is_current(shared_dir):
    spec = importlib.util.spec_from_file_location("gen", REPO / "scripts" / "gen_official_tables.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    rules = shared_dir / "rules"
    found, codes = gen.collect(rules)
    assert gen.render(found, codes, rules) == (REPO / "pipeline" / "invoice" / "codes.py").read_text()
    assert "EUR" in codes["CURRENCY_CODES"] and "DE" in codes["COUNTRY_CODES"] and "380" in codes["INVOICE_TYPE_CODES"]


def test_json_schema_tells_what_the_model_accepts_and_names_business_terms():
    defs = InvoiceRequest.model_json_schema()["$defs"]
    assert defs["PriceDetails"]["properties"]["netPrice"]["anyOf"][0] == {"type": "number"}
    assert defs["PriceDetails"]["properties"]["netPrice"]["description"].startswith("Item net price - BT-146")
    assert defs["Invoice"]["properties"]["issueDate"]["format"] == "date"
    assert "BT-37 (invoice.seller.postalAddress.city)" in defs["PostalAddress"]["properties"]["city"]["description"]
    assert "BT-52 (invoice.buyer.postalAddress.city)" in defs["PostalAddress"]["properties"]["city"]["description"]
    assert "Extension" in defs["Invoice"]["properties"]["paymentDueDate"]["description"]
    further = defs["PaymentInstructions"]["properties"]["additionalCreditTransfers"]["description"]
    assert further.startswith("Further credit transfers - BG-17.") and "Extension" in further
    assert "BT-21" in defs["InvoiceNote"]["properties"]["invoiceNoteSubjectCode"]["description"]
    assert "MANUAL" in defs["GenerationConfig"]["properties"]["calculationMode"]["description"]
    assert defs["Invoice"]["additionalProperties"] is False


# ---- fuzz: any JSON anywhere is a 400 or a document, never a crash ------------------------------------------

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.text(max_size=30)
    | st.decimals(allow_nan=False, allow_infinity=False) | st.sampled_from(["", " ", "2024-02-30", "EUR", "O", "0"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8)


def _slots(value, path=()):
    """Every place in the sample a value can be put (existing keys and list items, and new keys)."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _slots(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _slots(v, path + (i,))


_SLOTS = list(_slots(sample()))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_SLOTS[1:]), _json_values, st.sampled_from(["xrechnung", "en16931", "zugferd"]),
       st.sampled_from(["AUTO", "MANUAL"]))
def test_any_value_anywhere_is_a_400_or_a_document(slot, value, spec, mode):
    data = sample()
    data["config"]["calculationMode"] = mode
    target = data
    for step in slot[:-1]:
        target = target[step]
    target[slot[-1]] = value
    numbers: list[str] = []

    def number(d):   # Decimals go out as JSON numbers, digit for digit (1E+999 included)
        numbers.append(str(d))
        return f"@{len(numbers) - 1}@"

    raw = json.dumps(data, default=number)
    for i, text in enumerate(numbers):
        raw = raw.replace(f'"@{i}@"', text, 1)
    try:
        _, xml = normalize(raw.encode(), spec)
    except ApiError as exc:
        assert exc.http_status == 400 and exc.errors
        json.loads(dumps(exc.to_dict("r")))   # renderable as the service writes it
    else:                                     # and every document written is schema-valid
        assert canonical_schema().validate(etree.fromstring(xml)), canonical_schema().error_log
