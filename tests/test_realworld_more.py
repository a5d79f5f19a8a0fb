"""What more real-world senders write (issue 23, a second set of public samples): each case rebuilt from an official
sample altered in memory the way those senders write it, judged by the official rules, then read and converted."""
from __future__ import annotations

import re

import pytest

from conftest import CORPUS, SHARED
from pipeline.errors import ApiError
from pipeline.flows.convert import convert
from pipeline.flows.parse import parse, validate_source
from pipeline.read.provenance import is_plumbing

CREDIT_NOTE = SHARED / "realworld/peppol-bis3/examples/base-creditnote-correction.xml"   # Peppol BIS 3
XRECHNUNG_UBL = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
EN16931_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-example1.xml"   # BT-24 urn:cen.eu:en16931:2017


def _altered(path, old: bytes, new: bytes, count: int = 1) -> bytes:
    data = path.read_bytes()
    assert data.count(old) >= count, old
    return data.replace(old, new, count)


def _valid(data: bytes) -> None:
    report = validate_source(parse(data).source)
    assert report.valid, [i.code for i in report.issues if i.severity == "ERROR"]


def test_ubl_version_is_plumbing_but_customization_and_profile_are_content():
    """e-invoice.be and many Peppol senders write cbc:UBLVersionID 2.1 (the CEN rules allow no other, UBL-CR-002):
    unmapped with no business term, no reason to refuse; BT-24 / BT-23 beside it are read as ever."""
    data = re.sub(rb"(<CreditNote [^>]*>)", rb"\1<cbc:UBLVersionID>2.1</cbc:UBLVersionID>", CREDIT_NOTE.read_bytes(),
                  count=1)
    _valid(data)
    parsed = parse(data)
    version = [u for u in parsed.unmapped if u["xpath"].endswith("cbc:UBLVersionID")]
    assert [(u["value"], u["businessTerm"]) for u in version] == [("2.1", None)]
    assert parsed.invoice["processControl"]["specificationIdentifier"].startswith("urn:cen.eu:en16931:2017")
    assert parsed.invoice["processControl"]["businessProcessType"]
    assert not is_plumbing("/CreditNote/cbc:CustomizationID") and not is_plumbing("/Invoice/cbc:ProfileID")
    assert not is_plumbing("/Invoice/cac:InvoiceLine[1]/cac:Item/cbc:UBLVersionID")   # only the document's own
    assert convert(data, "CII").document


def test_a_price_base_quantity_of_zero_is_kept_as_sent():
    """Nortal's generator writes BT-149 0.00, which EN 16931's rules accept (Peppol's and XRechnung 3's refuse it,
    PEPPOL-EN16931-R121): reading keeps it (the parse is complete), converting writes it, and regenerating the parse
    (MANUAL: amounts as sent) divides by nothing. A JSON request in AUTO mode, which computes quantity x net price /
    base quantity, gets a 400 naming the field."""
    from pipeline.flows.generate_xml import generate_xml
    from pipeline.invoice.request_json import dump_request
    data = _altered(EN16931_UBL, b'<cbc:PriceAmount currencyID="EUR">9.95</cbc:PriceAmount>',
                    b'<cbc:PriceAmount currencyID="EUR">9.95</cbc:PriceAmount>'
                    b'<cbc:BaseQuantity unitCode="XPP">0.00</cbc:BaseQuantity>')
    _valid(data)
    parsed = parse(data)
    assert parsed.complete, (parsed.missing, parsed.problems)
    assert str(parsed.invoice["invoiceLines"][0]["priceDetails"]["priceBasisQuantity"]) in ("0", "0.00")
    cii = convert(data, "CII").document
    assert re.search(rb'<ram:BasisQuantity unitCode="XPP">0(\.00)?</ram:BasisQuantity>', cii)
    request = {"invoice": parsed.invoice, "config": {**parsed.config, "syntax": "UBL"}}
    assert b"<cbc:BaseQuantity" in generate_xml(dump_request(request), parsed.config["spec"])[0]
    with pytest.raises(ApiError) as err:
        generate_xml(dump_request({**request, "config": {**request["config"], "calculationMode": "AUTO"}}),
                     parsed.config["spec"])
    assert err.value.http_status == 400
    assert [(e.code, e.field) for e in err.value.errors] == [
        ("OUT_OF_RANGE", "invoice.invoiceLines[0].priceDetails.priceBasisQuantity")]


def test_a_bic_in_the_financial_institution_is_the_payment_service_provider():
    """UBL 2.1 recommends the BIC as cac:FinancialInstitution/cbc:ID, where Peppol BIS 2 and Odoo put it; EN 16931
    binds BT-86 to the branch's cbc:ID (the CEN rules only warn of the institution, UBL-CR-664). Without a branch
    id it is read as BT-86 and converted; beside one it is another value, which stays a loss."""
    branch = b"<cac:FinancialInstitutionBranch>\n                <cbc:ID>BIC324098</cbc:ID>"
    institution = (b"<cac:FinancialInstitutionBranch><cac:FinancialInstitution><cbc:ID>BIC324098</cbc:ID>"
                   b"</cac:FinancialInstitution>")
    data = _altered(CREDIT_NOTE, branch + b"\n            </cac:FinancialInstitutionBranch>",
                    institution + b"</cac:FinancialInstitutionBranch>")
    _valid(data)
    parsed = parse(data)
    assert parsed.invoice["paymentInstructions"]["creditTransfer"]["serviceProviderIdentifier"] == "BIC324098"
    assert not [u for u in parsed.unmapped if "FinancialInstitution" in u["xpath"]]
    assert b"<ram:BICID>BIC324098</ram:BICID>" in convert(data, "CII").document

    both = _altered(CREDIT_NOTE, branch, branch + b"<cac:FinancialInstitution><cbc:ID>OTHERBIC</cbc:ID>"
                    b"</cac:FinancialInstitution>")
    parsed = parse(both)
    assert parsed.invoice["paymentInstructions"]["creditTransfer"]["serviceProviderIdentifier"] == "BIC324098"
    assert [u["value"] for u in parsed.unmapped if "FinancialInstitution/" in u["xpath"]] == ["OTHERBIC"]
    with pytest.raises(ApiError) as err:
        convert(both, "CII")
    assert err.value.error_code == "CONVERSION_LOSS"


def _credit_note_without_terms(path) -> bytes:
    """An XRechnung UBL invoice (380) as a credit note (381) with neither due date nor payment terms."""
    data = path.read_bytes().replace(b"xsd:Invoice-2", b"xsd:CreditNote-2").replace(b"ubl:Invoice", b"ubl:CreditNote")
    data = data.replace(b"<cbc:InvoiceTypeCode>380</cbc:InvoiceTypeCode>",
                        b"<cbc:CreditNoteTypeCode>381</cbc:CreditNoteTypeCode>")
    data = re.sub(rb"(</?)cac:InvoiceLine>", rb"\1cac:CreditNoteLine>", data)
    data = re.sub(rb"(</?)cbc:InvoicedQuantity", rb"\1cbc:CreditedQuantity", data)
    return re.sub(rb"<cac:PaymentTerms>.*?</cac:PaymentTerms>|<cbc:DueDate>.*?</cbc:DueDate>", b"", data, flags=re.S)


def test_a_credit_note_the_cii_rules_judge_otherwise_is_a_clear_422():
    """Rechnora's XRechnung credit note: a positive amount due and neither due date nor payment terms is valid UBL
    (XRechnung's UBL BR-CO-25 judges invoices only); as a CII 381 it breaks BR-CO-25. Convert refuses with 422
    VALIDATION_FAILED naming the rule and BT-20, never a 500 or a silent document."""
    data = _credit_note_without_terms(XRECHNUNG_UBL)
    assert b"CreditNoteLine>" in data and b"PaymentTerms" not in data and b"DueDate" not in data
    _valid(data)
    with pytest.raises(ApiError) as err:
        convert(data, "CII")
    assert (err.value.http_status, err.value.error_code) == (422, "VALIDATION_FAILED")
    assert "BR-CO-25" in err.value.message
    assert [(e.code, e.businessTerm) for e in err.value.errors] == [("BR-CO-25", "BT-20")]


def test_a_buyer_tax_number_is_content_but_no_buyer_vat_identifier():
    """Landrix writes the buyer's tax number (FC) beside its VAT id. EN 16931 has no buyer term for it (BT-48 is the
    VAT identifier; only the seller has a tax registration, BT-32): it stays a loss, listed without a business term
    rather than as BT-48, which the converted document does carry."""
    vat = (b"<cbc:CompanyID>SE4598375937</cbc:CompanyID>\n                <cac:TaxScheme>\n"
           b"                    <cbc:ID>VAT</cbc:ID>\n                </cac:TaxScheme>\n            </cac:PartyTaxScheme>")
    data = _altered(CREDIT_NOTE, vat, vat + b"<cac:PartyTaxScheme><cbc:CompanyID>222/111/4444</cbc:CompanyID>"
                    b"<cac:TaxScheme><cbc:ID>FC</cbc:ID></cac:TaxScheme></cac:PartyTaxScheme>")
    _valid(data)
    parsed = parse(data)
    assert parsed.invoice["buyer"]["vatIdentifier"] == "SE4598375937"
    lost = [u for u in parsed.unmapped if u["value"] == "222/111/4444"]
    assert [(u["xpath"].endswith("cac:PartyTaxScheme[2]/cbc:CompanyID"), u["businessTerm"]) for u in lost] == [
        (True, None)]
    with pytest.raises(ApiError) as err:
        convert(data, "CII")
    assert err.value.error_code == "CONVERSION_LOSS"
    assert [(e.code, e.businessTerm) for e in err.value.errors] == [("NOT_CARRIED", None)]


def test_tax_registration_places_are_named_by_their_scheme():
    from lxml import etree

    from pipeline.read.provenance import term_of_element
    cii = etree.fromstring(b'<r xmlns:ram="urn:ram"><ram:ID schemeID="FC">1</ram:ID><ram:ID schemeID="VA">2</ram:ID>'
                           b'</r>')
    seller = "/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeAgreement/" \
             "ram:SellerTradeParty/ram:SpecifiedTaxRegistration[2]/ram:ID"
    assert term_of_element(cii[0], seller).startswith("BT-32 ")
    assert term_of_element(cii[1], seller).startswith("BT-31 ")
    assert term_of_element(cii[0], seller.replace("SellerTradeParty", "BuyerTradeParty")) is None
    assert term_of_element(cii[1], seller.replace("SellerTradeParty", "BuyerTradeParty")).startswith("BT-48 ")
