"""Peppol BIS Billing 3.0 as data: its specification and business process identifiers, its code list of electronic
address schemes, and the requirements a generation request must meet before a Peppol document is written.

The values are the release's (`../shared/rules/peppol/2026.5`: VERSION.json, sch/PEPPOL-EN16931-UBL.sch and the
self-billing .sch); tests/test_peppol_generate.py holds them against the installed pack's Schematron. Each
requirement names the PEPPOL rule it anticipates, so that a request gets a 400 on its JSON field instead of a 422
on the written document; the official rules still judge every document before it leaves.
"""
from __future__ import annotations

from typing import Iterator

from pipeline.invoice.specs import EN16931_ID

BILLING_ID = EN16931_ID + "#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0"            # BT-24
SELF_BILLING_ID = EN16931_ID + "#compliant#urn:fdc:peppol.eu:2017:poacc:selfbilling:3.0"
BILLING_PROCESS = "urn:fdc:peppol.eu:2017:poacc:billing:01:1.0"                               # BT-23 default
SELF_BILLING_PROCESS = "urn:fdc:peppol.eu:2017:poacc:selfbilling:01:1.0"
_SHARED_PROCESSES = ("urn:peppol:france:billing:regulated", "urn:peppol:france:billing:non-regulated",
                     "urn:peppol:bis:billing_with_response")
# BT-24 -> the BT-23 values its rules approve (PEPPOL-EN16931-R007), the default first.
PROCESSES = {BILLING_ID: (BILLING_PROCESS, *_SHARED_PROCESSES),
             SELF_BILLING_ID: (SELF_BILLING_PROCESS, *_SHARED_PROCESSES)}

# Electronic address scheme identifiers (EAS) Peppol accepts for BT-34-1 / BT-49-1 (PEPPOL-EN16931-CL008, `$eaid`):
# a subset of the CEN EAS list (no EM e-mail, no AN/AQ/AS/AU, no retired numbers).
EAS = frozenset((
    "0002 0007 0009 0060 0088 0096 0097 0106 0130 0135 0142 0151 0183 0184 0188 0190 0191 0192 0195 0196 0198 0199 "
    "0200 0201 0204 0208 0209 0210 0211 0216 0218 0221 0225 0230 0235 0240 0242 0244 0245 0246 0248 9910 9913 9914 "
    "9915 9918 9919 9920 9922 9923 9924 9925 9926 9927 9928 9929 9930 9931 9932 9933 9934 9935 9936 9937 9938 9939 "
    "9940 9941 9942 9943 9944 9945 9946 9947 9948 9949 9950 9951 9952 9953 9957 9959").split())


def process_for(specification_id: str | None) -> str:
    """The BT-23 written when the request sends none: billing, or self-billing for its BT-24."""
    return PROCESSES.get((specification_id or "").strip(), PROCESSES[BILLING_ID])[0]


def requirements(invoice, config, reading: bool = False) -> Iterator[tuple[str, str, str, object]]:
    """(code, JSON field, problem, rejected value) for each Peppol requirement a request misses; `invoice` and
    `config` are the model's Invoice and GenerationConfig (read by attribute only). `reading`: an invoice read from a
    document (convert): only the syntax is checked here, since what its content lacks is for the official Peppol
    rules to name on the written document (422 with their rule ids, as they would fail on the source)."""
    if str(config.syntax).upper() == "CII":
        yield ("INVALID_VALUE", "config.syntax", "Peppol BIS Billing 3.0 is a UBL invoice (the Peppol CII rules are "
               "not published as a compiled release): send config.syntax UBL", config.syntax)
    if reading:
        return
    for party, term in (("seller", "PEPPOL-EN16931-R020"), ("buyer", "PEPPOL-EN16931-R010")):
        values = getattr(invoice, party)
        if not values.electronicAddress:
            yield ("REQUIRED", f"invoice.{party}.electronicAddress", "is required in Peppol (" + term + "): the "
                   "Peppol participant identifier the document is delivered by", None)
        if values.electronicAddress and values.electronicAddressSchemeId is None:
            yield ("REQUIRED", f"invoice.{party}.electronicAddressSchemeId",
                   "is required with the electronic address (BR-62/BR-63): an EAS code such as 0088 or 0208", None)
        elif values.electronicAddressSchemeId is not None and values.electronicAddressSchemeId.strip() not in EAS:
            yield ("INVALID_VALUE", f"invoice.{party}.electronicAddressSchemeId", "is not an electronic address "
                   "scheme Peppol accepts (PEPPOL-EN16931-CL008), e.g. 0088 GLN, 0208 Belgian enterprise number, "
                   "9930 German VAT number", values.electronicAddressSchemeId)
    if not (invoice.buyerReference or invoice.purchaseOrderReference or invoice.salesOrderReference):
        yield ("REQUIRED", "invoice.buyerReference", "is required in Peppol unless invoice.purchaseOrderReference is "
               "sent (PEPPOL-EN16931-R003: a buyer reference or a purchase order reference)", None)
    both_german = all(getattr(getattr(invoice, p).postalAddress, "countryCode", None) == "DE"
                      for p in ("seller", "buyer"))
    if invoice.additionalInvoiceNotes and not both_german:
        yield ("INVALID_VALUE", "invoice.additionalInvoiceNotes", "Peppol allows one invoice note (invoiceNote) "
               "unless seller and buyer are both German (PEPPOL-EN16931-R002)",
               [n.invoiceNote for n in invoice.additionalInvoiceNotes])
    if str(invoice.invoiceTypeCode) in ("326", "384") and not both_german:
        yield ("INVALID_VALUE", "invoice.invoiceTypeCode", "326 and 384 are allowed in Peppol only when seller and "
               "buyer are both German (PEPPOL-EN16931-P0112)", invoice.invoiceTypeCode)
    control = invoice.processControl
    spec_id = (control.specificationIdentifier or "").strip() if control else ""
    process = (control.businessProcessType or "").strip() if control else ""
    if process and process not in PROCESSES.get(spec_id, PROCESSES[BILLING_ID]):
        yield ("INVALID_VALUE", "invoice.processControl.businessProcessType", "is not a business process Peppol "
               f"approves (PEPPOL-EN16931-R007): one of {', '.join(PROCESSES.get(spec_id, PROCESSES[BILLING_ID]))}",
               control.businessProcessType)
