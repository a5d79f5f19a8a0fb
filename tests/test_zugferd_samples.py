"""Sample ZUGFeRD requests (service spec section 2) used by the ZUGFeRD, PDF and render tests and the bench.

`invoice_request(lines=n)` is a complete German B2B invoice that carries every kind of content the readable
page must show (parties with ids and contacts, references, notes, periods, line allowances/charges, document
allowance and charge, two VAT rates, SEPA payment, direct-debit ids, attachments). Amounts are left to the
service's AUTO calculation (documentTotals is sent empty).
"""
from __future__ import annotations

import copy


def _line(i: int) -> dict:
    rate = 7 if i % 4 == 0 else 19
    line = {
        "lineIdentifier": str(i),
        "itemInformation": {
            "name": f"Beratungsleistung Modul {i}" if i % 3 else f"Ersatzteil Typ {i} – Größe XL",
            "description": "Analyse, Konzeption und Umsetzung gemäß Angebot A-77 vom 12.02.2024" if i % 2 else None,
            "sellersIdentifier": f"ART-{1000 + i}",
            "buyersIdentifier": f"K-{500 + i}" if i % 5 == 1 else None,
            "standardIdentifier": "4012345000016" if i == 2 else None,
            "standardIdentifierSchemeId": "0160" if i == 2 else None,
            "countryOfOrigin": "DE" if i == 2 else None,
            "itemAttributes": [{"name": "Farbe", "value": "Anthrazit"}] if i == 2 else None,
        },
        "quantity": 3 if i % 3 else 1.5,
        "unitCode": "HUR" if i % 3 else "C62",
        "priceDetails": {"netPrice": 95.5 if i % 3 else 12.25, "grossPrice": 100 if i == 1 else None},
        "lineVatInformation": {"vatCategoryCode": "S", "vatRate": rate},
        "referencedPurchaseOrderLine": "10" if i == 1 else None,
        "buyerAccountingReference": "KST-4711" if i == 1 else None,
        "note": "Leistung vor Ort erbracht" if i == 1 else None,
    }
    if i == 1:
        line["invoiceLinePeriod"] = {"startDate": "2024-02-01", "endDate": "2024-02-29"}
        line["invoiceLineAllowances"] = [{"amount": 10.0, "reason": "Rabatt", "reasonCode": "95"}]
    if i == 3:
        line["invoiceLineCharges"] = [{"amount": 5.0, "reason": "Express-Zuschlag", "reasonCode": "FC"}]
    return _prune(line)


def _prune(v):
    if isinstance(v, dict):
        return {k: _prune(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_prune(x) for x in v]
    return v


BASE = {
    "invoice": {
        "invoiceNumber": "RE-2024-0815",
        "issueDate": "2024-03-01",
        "invoiceTypeCode": "380",
        "currencyCode": "EUR",
        "buyerReference": "04011000-12345-03",
        "projectReference": "PRJ-2024-17",
        "contractReference": "V-2023-88",
        "purchaseOrderReference": "PO-99812",
        "salesOrderReference": "AB-2024-311",
        "paymentTerms": "Zahlbar innerhalb von 14 Tagen ohne Abzug. 2 % Skonto bei Zahlung binnen 7 Tagen.",
        "invoiceNote": "Vielen Dank für Ihren Auftrag & die gute Zusammenarbeit <Team Nord>.",
        "invoicingPeriod": {"startDate": "2024-02-01", "endDate": "2024-02-29"},
        "seller": {
            "name": "Muster Consulting GmbH",
            "tradingName": "Muster & Partner",
            "legalRegistrationIdentifier": "HRB 12345",
            "vatIdentifier": "DE123456789",
            "taxRegistrationIdentifier": "30/123/45678",
            "electronicAddress": "rechnung@muster-consulting.de",
            "electronicAddressSchemeId": "EM",
            "postalAddress": {"addressLine1": "Hauptstraße 1", "addressLine2": "Gebäude B", "city": "Berlin",
                              "postcode": "10115", "countryCode": "DE"},
            "contact": {"contactPoint": "Max Mustermann", "telephone": "+49 30 123456",
                        "email": "max.mustermann@muster-consulting.de"},
        },
        "buyer": {
            "name": "Beispiel Handels AG",
            "identifier": "K-2024-77",
            "vatIdentifier": "DE987654321",
            "electronicAddress": "einkauf@beispiel-handel.de",
            "electronicAddressSchemeId": "EM",
            "postalAddress": {"addressLine1": "Marktplatz 5", "city": "Hamburg", "postcode": "20095",
                              "countryCode": "DE"},
            "contact": {"contactPoint": "Erika Beispiel", "telephone": "+49 40 987654", "email": "erika@beispiel-handel.de"},
        },
        "deliveryInformation": {
            "partyName": "Beispiel Handels AG, Lager Süd",
            "actualDeliveryDate": "2024-02-28",
            "address": {"addressLine1": "Industriestraße 12", "city": "Hamburg", "postcode": "21079",
                        "countryCode": "DE"},
        },
        "paymentInstructions": {
            "meansCode": "58",
            "meansText": "SEPA-Überweisung",
            "remittanceInformation": "RE-2024-0815",
            "creditTransfer": {"accountIdentifier": "DE02120300000000202051", "accountName": "Muster Consulting GmbH",
                               "serviceProviderIdentifier": "BYLADEM1001"},
        },
        "documentTotals": {},
        "vatBreakdowns": [{"vatCategoryCode": "S", "vatCategoryRate": 19}, {"vatCategoryCode": "S", "vatCategoryRate": 7}],
        "documentLevelAllowances": [{"amount": 20.0, "vatCategoryCode": "S", "vatRate": 19, "reason": "Treuerabatt",
                                     "reasonCode": "95"}],
        "documentLevelCharges": [{"amount": 15.0, "vatCategoryCode": "S", "vatRate": 19, "reason": "Versandkosten",
                                  "reasonCode": "FC"}],
        "additionalSupportingDocuments": [
            {"reference": "Stundennachweis-02-2024", "description": "Stundennachweis Februar",
             "externalLocation": "https://portal.muster-consulting.de/belege/2024/02"},
        ],
        "invoiceLines": [],
    },
    "config": {"syntax": "CII"},
}


def invoice_request(lines: int = 10, profile: str | None = None, language: str | None = None) -> dict:
    req = copy.deepcopy(BASE)
    req["invoice"]["invoiceLines"] = [_line(i) for i in range(1, lines + 1)]
    if profile is not None:
        req["config"]["profile"] = profile
    if language is not None:
        req["config"]["metadataLanguage"] = language
    return req


def test_sample_has_the_requested_number_of_lines():
    req = invoice_request(lines=300, profile="BASIC", language="de")
    assert len(req["invoice"]["invoiceLines"]) == 300
    assert req["config"] == {"syntax": "CII", "profile": "BASIC", "metadataLanguage": "de"}
