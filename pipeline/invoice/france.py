"""What the French reform's rules (FNFE-MPE BR-FR Flux 2, release 1.4.0) require of an invoice request, checked on
the request before any generation: each missing or refused value is a 400 entry naming its JSON field and
business term, with the BR-FR rule in the message. The rules themselves judge the generated document afterwards
(422 when they refuse it); this catches what a French seller must send at the field it belongs to.

The code lists are those of the BR-FR Schematron (custom:is-valid-... functions of BR-FR-Flux2-Schematron-CII).
"""
from __future__ import annotations

import re
from decimal import Decimal

from stdnum.fr import siren as stdnum_siren, siret as stdnum_siret

from pipeline.errors import ErrorDetail

# BR-FR-08: billing frames (cadre de facturation, BT-23): B goods, S services, M both; 1 an invoice, 2 one already
# paid, 4 the final invoice after a down payment, 5 a subcontractor's, 6 a co-contractor's, 7 one whose VAT was
# e-reported already (AFNOR XP Z12-012; 3 and 8/9 as the rules treat them).
BILLING_FRAMES = ("B1", "S1", "M1", "B2", "S2", "M2", "S3", "B4", "S4", "M4", "S5", "S6", "B7", "S7", "B8", "S8",
                  "M8", "B9", "S9", "M9")
SELF_BILLING_FRAMES = ("B9", "S9", "M9")
# Frames 8 and 9 (invoices grouping several sellers' sub-invoices) need line data of EXTENDED-CTC-FR (line
# sub-type EXT-FR-FE-163, parent lines, ...: BR-FR-MV-01..14, BR-FR-BD-02), which EN 16931 invoices cannot carry.
MULTI_VENDOR_FRAMES = ("B8", "S8", "M8", *SELF_BILLING_FRAMES)
# BR-FR-04: document types (BT-3); BR-FR-BD-13: those of a self-billed invoice (frames S9, B9, M9).
DOCUMENT_TYPES = ("380", "389", "393", "501", "386", "500", "384", "471", "472", "473", "261", "262", "381", "396",
                  "502", "503")
SELF_BILLED_TYPES = ("389", "261", "501", "500", "502", "471", "473")
# BR-FR-05: the legal mentions every invoice carries as notes (BT-22 with subject code BT-21).
PAYMENT_NOTES = {"PMT": "the fixed recovery-cost indemnity (indemnité forfaitaire pour frais de recouvrement)",
                 "PMD": "the late-payment penalties (pénalités de retard)",
                 "AAB": "the early-payment discount or its absence (escompte)"}
# BR-FR-20 / BR-FR-31: the BAR note (processing of the invoice), one value.
BAR_VALUES = ("B2B", "B2BINT", "B2C", "B2CINT", "OUTOFSCOPE", "ARCHIVEONLY")
# BR-FR-15 / BR-FR-16: VAT categories and the French VAT rates (mainland, Corsica, overseas departments).
VAT_CATEGORIES = ("S", "E", "AE", "K", "G", "O", "Z")
VAT_RATES = tuple(Decimal(r) for r in ("0", "10", "13", "20", "8.5", "19.6", "2.1", "5.5", "7", "20.6", "1.05",
                                       "0.9", "1.75", "9.2", "9.6"))
# BR-FR-17: qualification codes of supporting documents (BT-123).
ATTACHMENT_CODES = ("RIB", "LISIBLE", "FEUILLE_DE_STYLE", "PJA", "BORDEREAU_SUIVI", "DOCUMENT_ANNEXE",
                    "BON_LIVRAISON", "BON_COMMANDE", "BORDEREAU_SUIVI_VALIDATION", "ETAT_ACOMPTE",
                    "FACTURE_PAIEMENT_DIRECT", "RECAPITULATIF_COTRAITANCE")
SIREN_SCHEME, SIRET_SCHEME, SIREN_ADDRESS_SCHEME = "0002", "0009", "0225"
# 0-9 only: Python's \d takes any script's digits, and a SIREN in full-width or Arabic-Indic digits names no company
SIREN_DIGITS = re.compile(r"\d{9}", re.ASCII)
SIRET_DIGITS = re.compile(r"\d{14}", re.ASCII)
# what an identifier of each French scheme looks like, for the messages that name one
FORMATS = {SIREN_SCHEME: (SIREN_DIGITS, "a SIREN (scheme 0002) has nine digits 0-9"),
           SIRET_SCHEME: (SIRET_DIGITS, "a SIRET (scheme 0009) has fourteen digits 0-9")}
_ADDRESS = re.compile(r"[A-Za-z0-9+\-_.]+")  # BR-FR-23: an electronic address of scheme 0225
_CHECKED = {SIREN_SCHEME: ("SIREN", stdnum_siren), SIRET_SCHEME: ("SIRET", stdnum_siret)}


def identifier_problem(scheme, value) -> str | None:
    """What is wrong with an identifier of a French scheme (SIREN 0002, SIRET 0009), or None: its length, or its
    check digit (INSEE gives every SIREN and SIRET a Luhn key, La Poste's establishments theirs: python-stdnum). The
    rules check the length at most, so a mistyped digit would reach the platform, which finds no such company."""
    scheme, value = _text(scheme), _text(value)
    pattern, what = FORMATS.get(scheme, (None, ""))
    if pattern is None or not value:
        return None
    if not pattern.fullmatch(value):
        return what
    name, module = _CHECKED[scheme]
    return None if module.is_valid(value) else (f"{value} is no {name}: its check digit (Luhn key) is wrong, no "
                                                 "company has this number (the rules check its length only)")


def address_problem(scheme, address) -> str | None:
    """What is wrong with an electronic address of the directory's scheme 0225 (SIREN-based), or None: BR-FR-23
    allows letters, digits and - _ . + only, so no address of another form is in the directory."""
    if _text(scheme) != SIREN_ADDRESS_SCHEME or not _text(address) or _ADDRESS.fullmatch(_text(address)):
        return None
    return (f"is no address of the directory (scheme {SIREN_ADDRESS_SCHEME}): letters, digits and - _ . + only "
            "(BR-FR-23), nothing could route a message to it")


def _notes(inv) -> list[tuple[str, object, object]]:
    """(field path of the note's subject code, subject code, text) of every note (BG-1)."""
    found = [("invoice.invoiceNoteSubjectCode", inv.invoiceNoteSubjectCode, inv.invoiceNote)]
    found += [(f"invoice.additionalInvoiceNotes[{i}].invoiceNoteSubjectCode", n.invoiceNoteSubjectCode, n.invoiceNote)
              for i, n in enumerate(inv.additionalInvoiceNotes or ())]
    return [(f, str(code).strip().upper(), text) for f, code, text in found if code]


def _text(value) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def request_errors(req, detail) -> list[ErrorDetail]:
    """Every BR-FR requirement the request misses, as `detail(code, field, message, rejected)` entries (the
    model's `detail`, which adds the field's business term)."""
    inv = req.invoice
    errors = []

    def need(ok: bool, field: str, message: str, rejected=None, code: str = "REQUIRED") -> None:
        if not ok:
            errors.append(detail(code, field, message, rejected))

    type_code = _text(inv.invoiceTypeCode)
    control = inv.processControl
    frame = _text(control.businessProcessType if control else None)
    need(bool(frame), "invoice.processControl.businessProcessType",
         f"the billing frame (cadre de facturation) is required on the French rules (BR-FR-08): one of "
         f"{', '.join(BILLING_FRAMES)}")
    need(not frame or frame in BILLING_FRAMES, "invoice.processControl.businessProcessType",
         f"is not a French billing frame (BR-FR-08); one of {', '.join(BILLING_FRAMES)}", frame, "INVALID_VALUE")
    need(frame not in MULTI_VENDOR_FRAMES, "invoice.processControl.businessProcessType",
         f"the billing frame {frame} groups several sellers' sub-invoices, which needs EXTENDED-CTC-FR line data "
         "(EXT-FR-FE-163 line sub-types, BR-FR-MV-01, BR-FR-BD-02) that this service does not generate; a "
         "self-billed invoice of one seller takes a self-billed document type (e.g. 389) with frame B1, S1 or M1",
         frame, "UNSUPPORTED_VALUE")
    self_billed = type_code in SELF_BILLED_TYPES
    need(type_code in DOCUMENT_TYPES, "invoice.invoiceTypeCode",
         f"is not a document type the French rules accept (BR-FR-04); one of {', '.join(DOCUMENT_TYPES)}",
         type_code, "INVALID_VALUE")

    notes = _notes(inv)
    codes = [code for _, code, _ in notes]
    for code, what in PAYMENT_NOTES.items():
        need(code in codes, "invoice.additionalInvoiceNotes",
             f"a note with subject code {code} (BT-21) stating {what} is required on the French rules (BR-FR-05)")
    for field, code, _ in notes:
        need(codes.count(code) == 1 or code not in (*PAYMENT_NOTES, "BAR", "TXD"), field,
             f"the subject code {code} may be used by one note only (BR-FR-06)", code, "INVALID_VALUE")
    bar = [(field, _text(text)) for field, code, text in notes if code == "BAR"]
    for field, value in bar:
        need(value in BAR_VALUES, field.replace("invoiceNoteSubjectCode", "invoiceNote"),
             f"the BAR note states how the invoice is processed (BR-FR-20): one of {', '.join(BAR_VALUES)}", value,
             "INVALID_VALUE")
    b2b = any(value == "B2B" for _, value in bar)

    seller, buyer = inv.seller, inv.buyer
    siren = _text(seller.legalRegistrationIdentifier)
    need(bool(SIREN_DIGITS.fullmatch(siren)), "invoice.seller.legalRegistrationIdentifier",
         "the seller's SIREN (9 digits) is required on the French rules (BR-FR-10)", siren or None)
    # a SIREN of the right length whose check digit is wrong: the seller's always, the buyer's where it is one
    for name, party in (("seller", seller), ("buyer", buyer)):
        value = _text(party.legalRegistrationIdentifier)
        is_siren = name == "seller" or b2b or _text(party.legalRegistrationIdentifierSchemeId) == SIREN_SCHEME
        problem = identifier_problem(SIREN_SCHEME, value) if is_siren and SIREN_DIGITS.fullmatch(value) else None
        need(problem is None, f"invoice.{name}.legalRegistrationIdentifier", str(problem), value, "INVALID_VALUE")
    need(_text(seller.legalRegistrationIdentifierSchemeId) == SIREN_SCHEME,
         "invoice.seller.legalRegistrationIdentifierSchemeId",
         f"the seller's SIREN is identified by scheme {SIREN_SCHEME} (BR-FR-10)",
         seller.legalRegistrationIdentifierSchemeId)
    parties = [("seller", seller), ("buyer", buyer)]
    for name, party in parties:
        identifiers = [(f"invoice.{name}.identifier", party.identifier, party.identifierSchemeId)]
        identifiers += [(f"invoice.{name}.additionalIdentifiers[{i}].identifier", a.identifier, a.identifierSchemeId)
                        for i, a in enumerate(getattr(party, "additionalIdentifiers", None) or ())]
        own_siren = _text(party.legalRegistrationIdentifier)
        for field, value, scheme in identifiers:
            if value is None:
                continue
            need(bool(scheme), field + "SchemeId",
                 "an identifier needs its scheme on the French rules (BR-FR-CO-10): SIRET is 0009", None)
            if _text(scheme) == SIRET_SCHEME:
                need(bool(SIRET_DIGITS.fullmatch(_text(value))) and _text(value).startswith(own_siren), field,
                     f"a SIRET (scheme {SIRET_SCHEME}) has 14 digits and starts with the {name}'s SIREN (BR-FR-09)",
                     value, "INVALID_VALUE")
                problem = identifier_problem(scheme, value) if SIRET_DIGITS.fullmatch(_text(value)) else None
                need(problem is None, field, str(problem), value, "INVALID_VALUE")
    for name, party, rule in (("seller", seller, "BR-FR-13"), ("buyer", buyer, "BR-FR-12")):
        address, scheme = _text(party.electronicAddress), _text(party.electronicAddressSchemeId)
        need(bool(address), f"invoice.{name}.electronicAddress",
             f"the {name}'s electronic address is required on the French rules ({rule})")
        need(not address or bool(scheme), f"invoice.{name}.electronicAddressSchemeId",
             f"the {name}'s electronic address needs its scheme, e.g. {SIREN_ADDRESS_SCHEME} (SIREN-based)")
        need(not address or bool(_ADDRESS.fullmatch(address)), f"invoice.{name}.electronicAddress",
             "letters, digits and - _ . + only (BR-FR-23)", address, "INVALID_VALUE")
    if b2b:
        buyer_siren = _text(buyer.legalRegistrationIdentifier)
        need(bool(SIREN_DIGITS.fullmatch(buyer_siren)), "invoice.buyer.legalRegistrationIdentifier",
             "the buyer's SIREN (9 digits) is required for B2B processing (BAR note B2B, BR-FR-11)",
             buyer_siren or None)
        name, party, own = ("seller", seller, siren) if self_billed else ("buyer", buyer, buyer_siren)
        rule = "BR-FR-22" if self_billed else "BR-FR-21"
        need(_text(party.electronicAddress).startswith(own) and _text(party.electronicAddressSchemeId) ==
             SIREN_ADDRESS_SCHEME, f"invoice.{name}.electronicAddress",
             f"for B2B processing the {name}'s electronic address starts with its SIREN and has scheme "
             f"{SIREN_ADDRESS_SCHEME} ({rule})", party.electronicAddress, "INVALID_VALUE")

    # (field path of the category, category, field path of the rate, rate) wherever a VAT rate is stated
    taxed = [(f"invoice.vatBreakdowns[{i}].vatCategoryCode", b.vatCategoryCode,
              f"invoice.vatBreakdowns[{i}].vatCategoryRate", b.vatCategoryRate) for i, b in enumerate(inv.vatBreakdowns)]
    taxed += [(f"invoice.invoiceLines[{i}].lineVatInformation.vatCategoryCode", line.lineVatInformation.vatCategoryCode,
               f"invoice.invoiceLines[{i}].lineVatInformation.vatRate", line.lineVatInformation.vatRate)
              for i, line in enumerate(inv.invoiceLines) if line.lineVatInformation is not None]
    for kind in ("documentLevelAllowances", "documentLevelCharges"):
        taxed += [(f"invoice.{kind}[{i}].vatCategoryCode", a.vatCategoryCode, f"invoice.{kind}[{i}].vatRate",
                   a.vatRate) for i, a in enumerate(getattr(inv, kind) or ()) if a.vatCategoryCode is not None]
    for category_field, category, rate_field, rate in taxed:
        need(_text(category) in VAT_CATEGORIES, category_field,
             f"is not a VAT category of the French rules (BR-FR-15); one of {', '.join(VAT_CATEGORIES)}", category,
             "INVALID_VALUE")
        need(rate is None or Decimal(rate) in VAT_RATES, rate_field,
             f"is not a French VAT rate (BR-FR-16); one of {', '.join(str(r) for r in VAT_RATES)}", rate,
             "INVALID_VALUE")
    for i, doc in enumerate(inv.additionalSupportingDocuments or ()):
        need(_text(doc.description) in ATTACHMENT_CODES, f"invoice.additionalSupportingDocuments[{i}].description",
             "qualifies the supporting document with a code of the French rules (BR-FR-17): one of "
             f"{', '.join(ATTACHMENT_CODES)}", doc.description, "INVALID_VALUE")
    return errors
