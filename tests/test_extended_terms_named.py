"""Real Factur-X / ZUGFeRD EXTENDED invoices converted to UBL: what EN 16931 has no place for is named by the BT-X
term the published field-list bindings state for the element (pipeline/read/extended_terms.py), in allowLoss's
losses and in the CONVERSION_LOSS refusal, rather than by a bare path. The files are the shared real-world ones,
read in place; each carries the elements its entry lists."""
from __future__ import annotations

import re

import pytest
from lxml import etree

from conftest import SHARED
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.parse import parse

REALWORLD = SHARED / "realworld"
_POSITION = re.compile(r"\[\d+\]")
_PREFIX = re.compile(r"(?<=/)(@?)[A-Za-z]+:")

_PRICE = ("IncludedSupplyChainTradeLineItem/SpecifiedLineTradeAgreement/GrossPriceProductTradePrice"
          "/AppliedTradeAllowanceCharge")
_LINE_TAX = ("IncludedSupplyChainTradeLineItem/SpecifiedLineTradeSettlement"
             "/SpecifiedTradeSettlementLineMonetarySummation")
UC11 = REALWORLD / "mustang/library/cii/UC11_F202600022_EXTENDED_FX_CII_BT-X-589Only_on_GROUP_Line.xml"
CHARGES = REALWORLD / "corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushItemChargesAllowances.xml"

# file -> {element path (prefixes, positions and the common trunk left out): the term its loss carries}
NAMED = {
    "mustang/library/cii/extended_warenrechnung_based_doublecashdiscount.xml": {
        "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeDelivery/PackageQuantity": "BT-X-47",
        "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeDelivery/PackageQuantity/@unitCode": "BT-X-47-0",
        "IncludedSupplyChainTradeLineItem/SpecifiedTradeProduct/IncludedReferencedProduct/GlobalID": "BT-X-15",
        "IncludedSupplyChainTradeLineItem/SpecifiedTradeProduct/IncludedReferencedProduct/Name": "BT-X-18",
        "IncludedSupplyChainTradeLineItem/SpecifiedTradeProduct/IncludedReferencedProduct/UnitQuantity": "BT-X-20",
        "ApplicableHeaderTradeSettlement/InvoiceeTradeParty/Name": "BT-X-226",
        "ApplicableHeaderTradeSettlement/InvoiceeTradeParty/PostalTradeAddress/CityName": "BT-X-238",
        "ApplicableHeaderTradeSettlement/ApplicableTradeTax/LineTotalBasisAmount": "BT-X-262",
        "ApplicableHeaderTradeSettlement/SpecifiedTradePaymentTerms/ApplicableTradePaymentDiscountTerms"
        "/CalculationPercent": "BT-X-286",
        "ApplicableHeaderTradeDelivery/DeliveryNoteReferencedDocument/IssuerAssignedID": "BT-X-202",
    },
    "mustang/library/EXTENDED_Fremdwaehrung_wdis_fx-pdfa4.pdf": {
        "ApplicableHeaderTradeSettlement/TaxApplicableTradeCurrencyExchange/SourceCurrencyCode": "BT-X-258",
        "ApplicableHeaderTradeSettlement/TaxApplicableTradeCurrencyExchange/TargetCurrencyCode": "BT-X-259",
        "ApplicableHeaderTradeSettlement/TaxApplicableTradeCurrencyExchange/ConversionRate": "BT-X-260",
        "ApplicableHeaderTradeSettlement/TaxApplicableTradeCurrencyExchange/ConversionRateDateTime/DateTimeString":
            "BT-X-261",
        "ApplicableHeaderTradeSettlement/PayeeTradeParty/PostalTradeAddress/PostcodeCode": "BT-X-249",
        "ApplicableHeaderTradeDelivery/ShipToTradeParty/URIUniversalCommunication/URIID": "BT-X-160",
        "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeAgreement/BuyerOrderReferencedDocument/IssuerAssignedID":
            "BT-X-21",
    },
    "mustang/validator/X03_01_Abschlagsrechnung_SubInvoiceLine_u_LV_Nr.xml": {
        "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeAgreement/AdditionalReferencedDocument/IssuerAssignedID":
            "BT-X-27",
        "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeAgreement/AdditionalReferencedDocument/TypeCode":
            "BT-X-30",
        "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeAgreement/AdditionalReferencedDocument/Name": "BT-X-299",
    },
    # a gross price's allowances and charges (BY_VALUE: by the ChargeIndicator): a discount's percent and basis, a
    # charge's amount (EN 16931's binding says BT-147 for any ActualAmount there; the charge's is BT-X-302)
    "corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushItemChargesAllowances.xml": {
        f"{_PRICE}/CalculationPercent": "BT-X-34",
        f"{_PRICE}/BasisAmount": "BT-X-35",
        f"{_PRICE}/ActualAmount": "BT-X-302",
    },
    "mustang/library/factur-x-extended.xml": {f"{_PRICE}/Reason": "BT-X-36"},
    "corpus/ZUGFeRDv2/correct/symtrax/Beispiele/EXTENDED/zugferd_2p1_EXTENDED_Kostenrechnung.pdf": {
        "ApplicableHeaderTradeDelivery/ShipToTradeParty/DefinedTradeContact/DepartmentName": "BT-X-156",
        "ApplicableHeaderTradeSettlement/SpecifiedTradePaymentTerms/ApplicableTradePaymentDiscountTerms"
        "/BasisPeriodMeasure": "BT-X-283",
    },
}
REVERSE_CHARGE = "corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushReverseCharge.xml"
_TRUNK = "/CrossIndustryInvoice/SupplyChainTradeTransaction/"


def _element(xpath: str) -> str:
    return _PREFIX.sub(r"\1", _POSITION.sub("", xpath)).removeprefix(_TRUNK)


def _terms_by_element(entries) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for entry in entries:
        found.setdefault(_element(entry["xpath"]), set()).add((entry["businessTerm"] or "").split(" ")[0])
    return found


@pytest.mark.parametrize("name", NAMED)
def test_the_losses_name_the_extended_terms(name):
    done = convert((REALWORLD / name).read_bytes(), "UBL", allow_loss=True)
    found = _terms_by_element(done.losses)
    assert {element: found.get(element) for element in NAMED[name]} == \
        {element: {bt} for element, bt in NAMED[name].items()}


def test_a_name_reads_with_the_id():
    done = convert((REALWORLD / REVERSE_CHARGE).read_bytes(), "UBL", allow_loss=True)
    named = {loss["businessTerm"] for loss in done.losses}
    # the rule texts' name where one names the id (BT-X-96), the field list's otherwise
    assert {"BT-X-96 Invoice line VAT exemption reason text", "BT-X-115 Buyer contact fax number"} <= named, named


def test_the_refusal_entries_carry_the_ids():
    with pytest.raises(ApiError) as refused:
        convert((REALWORLD / REVERSE_CHARGE).read_bytes(), "UBL")
    assert refused.value.error_code == "CONVERSION_LOSS"
    assert {"BT-X-96", "BT-X-115"} <= {e.businessTerm for e in refused.value.errors}


def test_the_item_seller_of_a_line_and_its_vat_identifier():
    """Mustang's UC11 sample (a line's own seller, BG-X-90): what a conversion leaves out, as read. Its VAT
    registration (schemeID VA) is BT-X-587; the scheme attribute itself stays technical."""
    found = _unmapped_terms(UC11.read_bytes())
    seller = "IncludedSupplyChainTradeLineItem/SpecifiedLineTradeAgreement/ItemSellerTradeParty/"
    assert {step: found.get(seller + step) for step in ("Name", "GlobalID", "SpecifiedLegalOrganization/ID",
                                                        "SpecifiedTaxRegistration/ID")} == \
        {"Name": {"BT-X-569"}, "GlobalID": {"BT-X-568"}, "SpecifiedLegalOrganization/ID": {"BT-X-572"},
         "SpecifiedTaxRegistration/ID": {"BT-X-587"}}
    assert found["IncludedSupplyChainTradeLineItem/SpecifiedLineTradeSettlement/ApplicableTradeTax"
                 "/DueDateTypeCode"] == {"BT-X-589"}


def _unmapped_terms(document: bytes) -> dict[str, set[str]]:
    return _terms_by_element(u for u in parse(document).unmapped if not u["technical"])


@pytest.mark.parametrize("indicator,reason,code", [("false", "BT-X-36", "BT-X-313"), ("true", "BT-X-303", "BT-X-314")])
def test_a_gross_price_reason_is_named_by_its_charge_indicator(indicator, reason, code):
    """The sample's gross price allowances and charges, one of a kind given a reason code and text: the ids of a
    discount (ChargeIndicator false) or of a charge (true)."""
    tree = etree.fromstring(CHARGES.read_bytes())
    ram = tree.nsmap["ram"]
    side = next(c for c in tree.iter(f"{{{ram}}}AppliedTradeAllowanceCharge")
                if c.findtext("{*}ChargeIndicator/{*}Indicator").strip() == indicator)
    for step, text in (("ReasonCode", "95" if indicator == "false" else "FC"), ("Reason", "given")):
        etree.SubElement(side, f"{{{ram}}}{step}").text = text
    found = _unmapped_terms(etree.tostring(tree))
    assert (found[f"{_PRICE}/ReasonCode"], found[f"{_PRICE}/Reason"]) == ({code}, {reason})


def test_a_line_vat_total_is_named_by_its_currency():
    """UC11's line VAT totals are in the invoice currency (BT-5): BT-X-329; one in the VAT accounting currency
    (BT-6) is BT-X-590, and one in neither currency has no id of either (the currencyID: the -0 ids)."""
    source = UC11.read_bytes()
    found = _unmapped_terms(source)
    assert (found[f"{_LINE_TAX}/TaxTotalAmount"], found[f"{_LINE_TAX}/TaxTotalAmount/@currencyID"]) == \
        ({"BT-X-329"}, {"BT-X-329-0"})
    invoice_currency = b"<ram:InvoiceCurrencyCode>EUR</ram:InvoiceCurrencyCode>"
    line_total = b'<ram:TaxTotalAmount currencyID="EUR">5.00</ram:TaxTotalAmount>'
    assert source.count(invoice_currency) == 1 and source.count(line_total) == 1
    accounting = source.replace(invoice_currency, invoice_currency + b"<ram:TaxCurrencyCode>USD</ram:TaxCurrencyCode>")
    found = _unmapped_terms(accounting.replace(line_total, line_total + line_total.replace(b"EUR", b"USD")))
    assert (found[f"{_LINE_TAX}/TaxTotalAmount"], found[f"{_LINE_TAX}/TaxTotalAmount/@currencyID"]) == \
        ({"BT-X-329", "BT-X-590"}, {"BT-X-329-0", "BT-X-590-0"})
    found = _unmapped_terms(source.replace(line_total, line_total.replace(b"EUR", b"GBP")))
    assert found[f"{_LINE_TAX}/TaxTotalAmount"] == {"BT-X-329", ""}
