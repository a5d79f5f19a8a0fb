"""Every finding of the official rules points at a field and business term where its rule or place names one (the
422 of a generated document, the term column of the reports for people): PEPPOL-EN16931-R008 (an empty element)
and the other rules the tables name no term for get the term bound at the element they point at; rules the tables
do not know (Peppol's national DE-R-*) the terms their message names."""
from __future__ import annotations

import re

import pytest

from conftest import CORPUS
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice import terms

UBL_STD = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
CII_STD = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"

# (sample, the element emptied, the field its R008 finding points at)
EMPTIED = [(UBL_STD, rb"(<cbc:BuyerReference>)[^<]*(</cbc:BuyerReference>)", "invoice.buyerReference", "BT-10"),
           (CII_STD, rb"(<ram:BuyerReference>)[^<]*(</ram:BuyerReference>)", "invoice.buyerReference", "BT-10"),
           (UBL_STD, rb"(<cbc:CityName>)[^<]*(</cbc:CityName>)", "invoice.seller.postalAddress.city", "BT-37")]


@pytest.mark.parametrize("sample, element, field, bt", EMPTIED, ids=["UBL BT-10", "CII BT-10", "UBL BT-37"])
def test_an_empty_element_points_at_its_field(sample, element, field, bt):
    data = re.sub(element, rb"\1\2", sample.read_bytes(), count=1)
    [r008] = [i for i in validate_xml(data, "xrechnung").issues if i.code == "PEPPOL-EN16931-R008"]
    assert terms.field_for_rule(r008.code, r008.location.xpath, message=r008.message) == (field, bt)


def test_a_rule_without_terms_takes_the_term_of_its_place_or_none_at_the_root():
    supplier = "/Invoice[1]/cac:AccountingSupplierParty[1]/cac:Party[1]"
    assert terms.field_for_rule("UBL-SR-53", supplier + "/cac:PartyTaxScheme[1]") == ("invoice.seller", "BG-4")
    assert terms.field_for_rule("PEPPOL-COMMON-R049", supplier + "/cbc:EndpointID[1]") == \
        ("invoice.seller.electronicAddress", "BT-34")
    assert terms.field_for_rule("UBL-CR-470", "/Invoice[1]") == (None, None)   # the document as a whole
    assert terms.field_for_rule("CII-SR-001") == (None, None)                  # nowhere


def test_a_rule_the_tables_do_not_know_takes_the_terms_its_message_names():
    message = ('[DE-R-015]-If both supplier and customer are located in Germany, the element "Buyer reference" (BT-10) '
               "shall be provided.")
    assert terms.field_for_rule("DE-R-015", "/Invoice[1]", message=message) == ("invoice.buyerReference", "BT-10")
