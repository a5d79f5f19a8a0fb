"""The term table of France's lifecycle status messages (CDV): every JSON field of a status request with the term of
the CDV semantic model (MDT-n data, MDG-n groups, as FNFE-MPE's BR-FR-CDV rules and the official examples name
them), its French, English and German name and its place in the CDAR D22B message.

One table for the 400 entries of the model (`businessTerm`), the 422 mapping (rule id -> term -> JSON field), the
OpenAPI descriptions, the readable page's labels and the report for people. JSON path patterns use `[]` for array
items (`status.details[].reasonCode`); `term_for` takes concrete paths too. Fields whose place has no MDT number in
the published rules or examples carry none (`term` None) rather than a guessed one.

French names: as FNFE's official examples name the terms in their comments beside the elements ("MDT-113 (Code
motif rejet)"), else as the BR-FR-CDV rule texts name them ("Le code de statut de facture (MDT-115)", "le partenaire
commercial émetteur (MDG-9)"), else ours: MDG-16 and MDG-23 worded as MDG-9, MDG-43, MDT-116, MDT-126, the scheme
attributes and the addresses of parties the model gives none. Where the rules word a term otherwise than the examples,
the examples' name stands (the comment above TERMS lists where). English and German: ours, faithful to the French.
tests/test_fr_cdar_term_names.py reads the examples' comments and the rule texts against this table.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_EXD = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:ExchangedDocument"
_CTX = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:ExchangedDocumentContext"
_ACK = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument"
_RRD = f"{_ACK}/ram:ReferenceReferencedDocument"
_DST = f"{_RRD}/ram:SpecifiedDocumentStatus"
_CHR = f"{_DST}/ram:SpecifiedDocumentCharacteristic"


@dataclass(frozen=True)
class Term:
    json_path: str       # pattern, `[]` for array items
    term: str | None     # MDT-n / MDG-n, None where the published model gives the place no number
    fr: str              # name in French (the CDV model's wording)
    en: str              # name in English
    cdar: str            # XPath in the CDAR message

    def name(self, language: str = "en") -> str:
        if language == "de":
            return GERMAN.get(self.json_path, self.en)
        return self.fr if language == "fr" else self.en


def _party(json: str, group: str, terms: tuple, names: tuple, what_fr: str, what_en: str, cdar: str) -> list[Term]:
    """A party of the message (sender MDG-9, issuer MDG-16, recipient MDG-23): (id, name, role, address) terms and
    their French names (the examples' for each party's id; the address outside the model, term None, ours)."""
    global_id, name, role, address = terms
    id_fr, name_fr, role_fr, address_fr = names
    return [
        Term(json, group, f"Partenaire commercial {what_fr}", f"{what_en} trading party", cdar),
        Term(f"{json}.role", role, role_fr, f"{what_en} role code", f"{cdar}/ram:RoleCode"),
        Term(f"{json}.id", global_id, id_fr, f"{what_en} identifier", f"{cdar}/ram:GlobalID"),
        Term(f"{json}.idScheme", global_id, f"Schéma de l'identifiant ({what_fr})", f"{what_en} identifier scheme",
             f"{cdar}/ram:GlobalID/@schemeID"),
        Term(f"{json}.name", name, name_fr, f"{what_en} name", f"{cdar}/ram:Name"),
        Term(f"{json}.electronicAddress", address, address_fr, f"{what_en} electronic address",
             f"{cdar}/ram:URIUniversalCommunication/ram:URIID"),
        Term(f"{json}.electronicAddressScheme", address, f"Schéma de l'adresse électronique ({what_fr})",
             f"{what_en} electronic address scheme", f"{cdar}/ram:URIUniversalCommunication/ram:URIID/@schemeID"),
    ]


# Where the BR-FR-CDV texts word a term otherwise than the examples (the examples' name stands): MDT-4 "L'identifiant
# du document", MDT-21/40 "le rôle du partenaire commercial émetteur", MDT-59 "... destinataire", MDT-38
# "l'identifiant", MDT-73 "l'adresse électronique du destinataire", MDT-77 "le code de type de document", MDT-87
# "l'identifiant de la facture référencée", MDT-91 "le code de type de document", MDT-105 "le code de condition de
# traitement" / "le code de statut de facture", MDT-113 "le code motif de statut", MDT-129 "l'identifiant du vendeur
# émetteur de la facture (en direct ou pour son compte)". MDT-124-2: the examples write it unaccented ("Numero
# incremental de detail de statut", once "Numéro incremental"), the rules "numéro incrémental de détail de statut":
# the same words, spelt as the rules spell them.
_ADDRESS = "Adresse électronique"

TERMS: list[Term] = [
    Term("message", None, "Message de cycle de vie", "Lifecycle status message", _EXD),
    Term("message.id", "MDT-4", "Id document", "Message identifier", f"{_EXD}/ram:ID"),
    Term("message.name", "MDT-5", "Nom document", "Message name", f"{_EXD}/ram:Name"),
    Term("message.issueDateTime", "MDT-8", "Date-heure de création du CDV", "Message creation date and time",
         f"{_EXD}/ram:IssueDateTime/udt:DateTimeString"),
    Term("message.businessProcess", "MDT-2", "Type de processus métier (cadre de facturation)",
         "Business process type (billing frame)",
         f"{_CTX}/ram:BusinessProcessSpecifiedDocumentContextParameter/ram:ID"),
    Term("message.guidelineId", "MDT-3", "Type de profil (e-invoicing, e-reporting, facture etc..)",
         "Profile type (e-invoicing, e-reporting, invoice, etc.)",
         f"{_CTX}/ram:GuidelineSpecifiedDocumentContextParameter/ram:ID"),
    *_party("message.sender", "MDG-9", ("MDT-19", "MDT-20", "MDT-21", None),
            ("Id émetteur (global)", "Raison sociale", "Code rôle", f"{_ADDRESS} (émetteur)"), "émetteur", "Sender",
            f"{_EXD}/ram:SenderTradeParty"),
    *_party("message.issuer", "MDG-16", ("MDT-38", "MDT-39", "MDT-40", None),
            ("ID émetteur document (global)", "Raison sociale", "Code rôle", f"{_ADDRESS} (créateur du document)"),
            "créateur du document", "Issuer", f"{_EXD}/ram:IssuerTradeParty"),
    *_party("message.recipients[]", "MDG-23", ("MDT-57", "MDT-58", "MDT-59", "MDT-73"),
            ("ID destinataire (global)", "Raison sociale", "Code rôle", f"{_ADDRESS} (réseau CEF)"), "destinataire",
            "Recipient", f"{_EXD}/ram:RecipientTradeParty"),
    Term("status", None, "Statut", "Status", _ACK),
    Term("status.code", "MDT-105", "Code statut traitement", "Status code",
         f"{_RRD}/ram:ProcessConditionCode"),
    Term("status.name", "MDT-106", "Libellé statut traitement", "Status name", f"{_RRD}/ram:ProcessCondition"),
    Term("status.dateTime", "MDT-78", "Date-heure de dépôt du statut CDV", "Status submission date and time",
         f"{_ACK}/ram:IssueDateTime/udt:DateTimeString"),
    Term("status.typeCode", "MDT-77", "Code type document", "Document type code", f"{_ACK}/ram:TypeCode"),
    Term("status.documentStatusCode", "MDT-88", "Code statut", "Document status code", f"{_RRD}/ram:StatusCode"),
    Term("status.details[]", "MDG-37", "Détail de statut", "Status detail", _DST),
    Term("status.details[].reasonCode", "MDT-113", "Code motif rejet", "Rejection reason code",
         f"{_DST}/ram:ReasonCode"),
    Term("status.details[].reason", "MDT-114", "Libellé motif rejet", "Rejection reason", f"{_DST}/ram:Reason"),
    # A detail's own status (BR-FR-CDV-CL-06_MDT-115; BR-FR-CDV-15's text names MDT-105 "or MDT-115"): its code
    # decides which status's reason list judges the detail's reason (BR-FR-CDV-CL-09). Its name is CL-06's ("Le code
    # de statut de facture (MDT-115)", the words CL-06 gives MDT-105 too). MDT-116, its label: neither the rules nor
    # the examples write it, but the model numbers a detail's elements in the D22B schema's order between its
    # published numbers (MDT-115 ProcessConditionCode, then five elements up to MDT-121 RequestedActionCode,
    # ProcessCondition the first), as MDT-126 for the note's Content after MDT-124 and the inserted 124-2
    # (tests/test_fr_cdar_more_terms.py walks it).
    Term("status.details[].statusCode", "MDT-115", "Code de statut de facture", "Invoice status code",
         f"{_DST}/ram:ProcessConditionCode"),
    Term("status.details[].statusName", "MDT-116", "Libellé de statut de facture", "Invoice status name",
         f"{_DST}/ram:ProcessCondition"),
    Term("status.details[].actionCode", "MDT-121", "Code action attendue", "Requested action code",
         f"{_DST}/ram:RequestedActionCode"),
    Term("status.details[].action", "MDT-122", "Action attendue", "Requested action", f"{_DST}/ram:RequestedAction"),
    Term("status.details[].sequence", "MDT-124-2", "Numéro incrémental de détail de statut",
         "Status detail sequence number", f"{_DST}/ram:SequenceNumeric"),
    Term("status.details[].note", "MDT-126", "Commentaire", "Note", f"{_DST}/ram:IncludedNote/ram:Content"),
    Term("status.details[].characteristics[]", "MDG-43", "Caractéristique du document", "Document characteristic",
         _CHR),
    Term("status.details[].characteristics[].id", "MDT-206", "ID de la donnée du document",
         "Identifier of the data", f"{_CHR}/ram:ID"),
    Term("status.details[].characteristics[].typeCode", "MDT-207", "Code du type de donnée", "Data type code",
         f"{_CHR}/ram:TypeCode"),
    Term("status.details[].characteristics[].changed", "MDT-209", "Indicateur", "Indicator (value changed)",
         f"{_CHR}/ram:ValueChangedIndicator/udt:IndicatorString"),
    Term("status.details[].characteristics[].name", "MDT-211", "Nom de la Donnée", "Name of the data",
         f"{_CHR}/ram:Name"),
    Term("status.details[].characteristics[].location", "MDT-213", "Localisation de la donnée dans l'XML",
         "Location of the data in the invoice XML", f"{_CHR}/ram:Location"),
    Term("status.details[].characteristics[].amount", "MDT-215", "Montant (par exemple Encaissé)",
         "Amount (e.g. payment received)", f"{_CHR}/ram:ValueAmount"),
    Term("status.details[].characteristics[].currencyCode", "MDT-215", "Devise du montant", "Currency of the amount",
         f"{_CHR}/ram:ValueAmount/@currencyID"),
    Term("status.details[].characteristics[].date", "MDT-219", "Date-heure", "Date and time",
         f"{_CHR}/ram:ValueDateTime/udt:DateTimeString"),
    Term("status.details[].characteristics[].percent", "MDT-224", "Pourcentage (par exemple TVA pour un Encaissée)",
         "Percentage (e.g. VAT for a payment received)", f"{_CHR}/ram:ValuePercent"),
    Term("invoice", None, "Facture référencée", "The invoice", _RRD),
    Term("invoice.number", "MDT-87", "ID objet (BT-1 d'une facture)", "Object ID (BT-1 of an invoice)",
         f"{_RRD}/ram:IssuerAssignedID"),
    Term("invoice.issueDate", "MDT-100", "Date-heure (Date de facture BT-2)", "Date and time (invoice date BT-2)",
         f"{_RRD}/ram:FormattedIssueDateTime/qdt:DateTimeString"),
    Term("invoice.typeCode", "MDT-91", "Code type de l'objet (BT-3 de la facture)",
         "Object type code (BT-3 of the invoice)", f"{_RRD}/ram:TypeCode"),
    Term("invoice.receiptDateTime", "MDT-95", "Date-heure de réception de l'objet (pour une facture : date statut "
         "Déposée / Rejetée pour l'Emetteur ; date statut Reçue / Rejetée pour le Destinataire)",
         "Receipt date and time of the object (for an invoice: date of the status Submitted / Rejected for the issuer;"
         " of the status Received / Rejected for the recipient)",
         f"{_RRD}/ram:ReceiptDateTime/udt:DateTimeString"),
    Term("invoice.referenceTypeCode", "MDT-97", "Code type référence", "Reference type code",
         f"{_RRD}/ram:ReferenceTypeCode"),
    Term("invoice.sellerSiren", "MDT-129", "Id émetteur document référencé (global)",
         "Referenced document issuer identifier (global)", f"{_RRD}/ram:IssuerTradeParty/ram:GlobalID"),
    Term("invoice.buyerSiren", None, "SIREN de l'acheteur (rôle BY, MDT-158)", "Buyer's SIREN (role BY, MDT-158)",
         f"{_RRD}/ram:RecipientTradeParty/ram:GlobalID"),
]


def _party_de(json: str, what: str) -> dict[str, str]:
    """The German names of a party's terms (as `_party`)."""
    return {json: f"Handelspartner ({what})", f"{json}.role": f"Rollencode ({what})",
            f"{json}.id": f"Kennung ({what})", f"{json}.idScheme": f"Schema der Kennung ({what})",
            f"{json}.name": f"Name ({what})", f"{json}.electronicAddress": f"Elektronische Adresse ({what})",
            f"{json}.electronicAddressScheme": f"Schema der elektronischen Adresse ({what})"}


# German names of the terms: ours, not official (the CDV model is French; the readable page keeps each term's MDT
# number beside the name, the messages' own texts as sent).
GERMAN = {
    "message": "Statusmeldung zum Lebenszyklus", "message.id": "Kennung der Meldung",
    "message.name": "Name der Meldung", "message.issueDateTime": "Erstellungszeitpunkt der Meldung",
    "message.businessProcess": "Art des Geschäftsprozesses (Abrechnungsrahmen)",
    "message.guidelineId": "Profiltyp (E-Invoicing, E-Reporting, Rechnung usw.)",
    **_party_de("message.sender", "Absender"), **_party_de("message.issuer", "Ersteller"),
    **_party_de("message.recipients[]", "Empfänger"),
    "status": "Status", "status.code": "Statuscode", "status.name": "Statusname",
    "status.dateTime": "Zeitpunkt der Einreichung des Status", "status.typeCode": "Code der Dokumentart",
    "status.documentStatusCode": "Code des Dokumentstatus", "status.details[]": "Statusdetail",
    "status.details[].reasonCode": "Code des Ablehnungsgrunds", "status.details[].reason": "Ablehnungsgrund",
    "status.details[].statusCode": "Code des Rechnungsstatus",
    "status.details[].statusName": "Name des Rechnungsstatus",
    "status.details[].actionCode": "Code der erwarteten Aktion", "status.details[].action": "Erwartete Aktion",
    "status.details[].sequence": "Laufende Nummer des Statusdetails", "status.details[].note": "Bemerkung",
    "status.details[].characteristics[]": "Angabe zum Dokument",
    "status.details[].characteristics[].id": "Kennung der Angabe",
    "status.details[].characteristics[].typeCode": "Code der Angabenart",
    "status.details[].characteristics[].changed": "Kennzeichen (Wert geändert)",
    "status.details[].characteristics[].name": "Name der Angabe",
    "status.details[].characteristics[].location": "Fundstelle der Angabe im Rechnungs-XML",
    "status.details[].characteristics[].amount": "Betrag (z. B. Zahlung eingegangen)",
    "status.details[].characteristics[].currencyCode": "Währung des Betrags",
    "status.details[].characteristics[].date": "Datum und Uhrzeit",
    "status.details[].characteristics[].percent": "Prozentsatz (z. B. Umsatzsteuer bei Zahlung eingegangen)",
    "invoice": "Die Rechnung", "invoice.number": "Objekt-ID (BT-1 einer Rechnung)",
    "invoice.issueDate": "Datum und Uhrzeit (Rechnungsdatum BT-2)",
    "invoice.typeCode": "Code der Objektart (BT-3 der Rechnung)",
    "invoice.receiptDateTime": "Eingangszeitpunkt des Objekts (bei einer Rechnung: Datum des Status Eingereicht / "
                               "Zurückgewiesen für den Aussteller; des Status Empfangen / Zurückgewiesen für den "
                               "Empfänger)",
    "invoice.referenceTypeCode": "Code der Referenzart",
    "invoice.sellerSiren": "Kennung des Ausstellers des referenzierten Dokuments (global)",
    "invoice.buyerSiren": "SIREN des Käufers (Rolle BY, MDT-158)",
}
BY_PATH = {t.json_path: t for t in TERMS}
# Terms the rules name that are no JSON field of their own: the place they judge -> the field a 422 points at.
RULE_FIELDS = {"MDG-3": "message.guidelineId", "MDG-4": "message.issueDateTime", "MDG-35": "invoice.issueDate",
               "MDT-132": "invoice.sellerSiren", "MDT-158": "invoice.buyerSiren"}
# Their names where the rule texts give one ("Le rôle du partenaire commercial émetteur (MDT-132)"): a report labels
# the rule with its own term's name, not with that of the field its 422 points at (MDT-132 is the referenced
# invoice's issuer role, not MDT-129 its id). MDG-3 ("le paramètre de contexte MDG-3") keeps MDT-3's.
RULE_NAMES = {
    "MDG-4": ("Date d’émission du document", "Message issue date", "Ausstellungsdatum der Meldung"),
    "MDG-35": ("Date d’émission formatée de la facture référencée", "Formatted issue date of the referenced invoice",
               "Formatiertes Ausstellungsdatum der referenzierten Rechnung"),
    "MDT-132": ("Rôle du partenaire commercial émetteur", "Role of the issuing trading party",
                "Rolle des ausstellenden Handelspartners"),
    "MDT-158": ("Rôle du partenaire commercial destinataire", "Role of the receiving trading party",
                "Rolle des empfangenden Handelspartners"),
}
_INDEX = re.compile(r"\[\d+\]")
_RULE_TERM = re.compile(r"(MD[GT]-\d+(?:-\d+)?)")


def pattern_of(path: str) -> str:
    """`status.details[2].reasonCode` -> `status.details[].reasonCode`."""
    return _INDEX.sub("[]", path)


def term_for(path: str | None) -> Term | None:
    """The term of a field; a list itself (`message.recipients`, `status.details`) is named by its items' group
    (MDG-23, MDG-37), so that a 400 about an empty or missing list names its term too."""
    if not path:
        return None
    pattern = pattern_of(path)
    return BY_PATH.get(pattern) or BY_PATH.get(pattern + "[]")


def business_term(path: str | None) -> str | None:
    term = term_for(path)
    return term.term if term else None


def term_of_rule(rule_id: str) -> str | None:
    """The MDT / MDG term a BR-FR-CDV rule id names (`BR-FR-CDV-14_MDT-207` -> MDT-207), else None."""
    found = _RULE_TERM.search(rule_id or "")
    return found.group(1) if found else None


def field_for_rule(rule_id: str) -> tuple[str | None, str | None]:
    """(JSON path pattern, term) a rule points at: the first field carrying its term; (None, term) when no field
    does; (None, None) for a rule that names no term."""
    term = term_of_rule(rule_id)
    if term is None:
        return None, None
    if term in RULE_FIELDS:
        return RULE_FIELDS[term], term
    return next((t.json_path for t in TERMS if t.term == term), None), term


def rule_label(rule_id: str, language: str = "en") -> str | None:
    """"MDT-207 Data type code" (in `language`, en, fr or de) of the term a rule is about, else None."""
    field, term = field_for_rule(rule_id)
    if term is None:
        return None
    if term in RULE_NAMES:
        fr, en, de = RULE_NAMES[term]
        return f"{term} {de if language == 'de' else fr if language == 'fr' else en}"
    row = BY_PATH.get(field) if field else None
    return f"{term} {row.name(language)}" if row else term
