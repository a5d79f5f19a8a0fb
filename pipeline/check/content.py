"""Checks the official rules miss: the numbers and codes inside an invoice.

An IBAN with a typo passes every official rule, and the payment bounces. These checks look at the content of the
canonical invoice (docs/canonical.md: one element per business term), so they are written once for CII, UBL and
ZUGFeRD, received or generated:

    CHECK-IBAN               BT-84 (BT-91) with a SEPA means code (58, 59), or of an IBAN's form whatever the
                             means code: country, length per country, mod-97
    CHECK-BIC                BT-86: ISO 9362 form, and its country that of the IBAN beside it
    CHECK-CREDITOR-ID        BT-90: SEPA creditor identifier (AT-02) check digits
    CHECK-VAT-ID             BT-31, BT-48, BT-63: EU VAT identifier form and check digits of its country
    CHECK-LEITWEG-ID         XRechnung: BT-10 of Leitweg-ID form (and BT-49 with scheme 0204): check digits
    CHECK-SIREN-SIRET        identifiers of scheme 0002 (SIREN) or 0009 (SIRET) of the parties: Luhn key
    CHECK-DUE-DATE           BT-9 not before the issue date BT-2
    CHECK-LINE-ID-DUPLICATE  BT-126 unique among the lines
    CHECK-ATTACHMENT-MIME    BT-125-1 names what BT-125 holds (content sniffed from its first bytes)

The numbers are checked with python-stdnum (IBAN register, BIC, AT-02, the VAT id of every EU country, Leitweg-ID,
SIREN / SIRET through pipeline.invoice.france), not with checksums of our own. Findings are WARNINGs, so they never
change the official verdict; `strict` makes them ERRORs. `check` takes the canonical root and a function that
locates a canonical element (a `Location`), so the caller decides what a place is: the source node and its line for
a received document, the JSON field for a generation request.
"""
from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Iterable

from lxml import etree
from stdnum import bic, iban, numdb
from stdnum.de import leitweg
from stdnum.eu import at_02, vat as eu_vat
from stdnum.exceptions import InvalidChecksum, InvalidComponent, InvalidLength, ValidationError

from pipeline.check.report import ERROR, WARNING, Issue, Location
from pipeline.invoice import france
from pipeline.invoice.terms import ARRAY_ITEMS, CANONICAL_NS, TERMS, term_name

IBAN = "CHECK-IBAN"
BIC = "CHECK-BIC"
CREDITOR_ID = "CHECK-CREDITOR-ID"
VAT_ID = "CHECK-VAT-ID"
LEITWEG_ID = "CHECK-LEITWEG-ID"
SIREN_SIRET = "CHECK-SIREN-SIRET"
DUE_DATE = "CHECK-DUE-DATE"
LINE_ID_DUPLICATE = "CHECK-LINE-ID-DUPLICATE"
ATTACHMENT_MIME = "CHECK-ATTACHMENT-MIME"
PREFIX = "CHECK-"

# code -> (what it checks, why it matters): the README table and the OpenAPI description say the same.
CHECKS: dict[str, tuple[str, str]] = {
    IBAN: ("BT-84 payment account (and BT-91 debited account) when BT-81 is a SEPA means code (58 credit transfer, "
           "59 direct debit) or the account has an IBAN's form (two letters, two digits, letters and digits; e.g. "
           "under means code 30): a country that issues IBANs, the length of that country's IBANs, the BBAN form and "
           "the ISO 7064 mod 97-10 check digits.",
           "An IBAN with a typo passes every EN 16931 rule; the transfer bounces or, worse, reaches another "
           "account. EN 16931 and Factur-X check nothing of it; XRechnung's BR-DE-19/20 warn on the form and "
           "mod 97, not on the country's length or BBAN form."),
    BIC: ("BT-86 payment service provider identifier next to an IBAN or with a SEPA means code: the ISO 9362 "
          "form (4 letters bank, country, 2 location, optional 3 branch) and a country equal to the IBAN's.",
          "A wrong BIC routes a transfer to the wrong bank or gets it rejected, outside SEPA in particular."),
    CREDITOR_ID: ("BT-90 bank assigned creditor identifier: the SEPA creditor identifier (AT-02) check digits.",
                  "A direct debit under a wrong creditor id is refused by the debtor's bank."),
    VAT_ID: ("BT-31 seller, BT-48 buyer and BT-63 tax representative VAT identifiers with an EU prefix (EL for "
             "Greece, XI for Northern Ireland): the length, form and check digits of that country's VAT numbers.",
             "The official rules look at the prefix only. A wrong VAT id costs the buyer the input VAT deduction "
             "and voids an intra-community or reverse-charge exemption."),
    LEITWEG_ID: ("XRechnung: BT-10 buyer reference when it has the form of a German Leitweg-ID (coarse address "
                 "with a known state code, optional fine address, two check digits), and BT-49 with scheme 0204: "
                 "the Leitweg-ID mod 97-10 check digits.",
                 "Public buyers route invoices by the Leitweg-ID; with a wrong one the invoice is rejected or "
                 "never reaches the office that pays it."),
    SIREN_SIRET: ("BT-29 seller, BT-46 buyer and BT-60 payee identifiers, BT-30, BT-47 and BT-61 legal registration "
                  "identifiers and BT-34, BT-49 electronic addresses whose scheme is 0002 (SIREN, France's company "
                  "register SIRENE; fourteen digits there are an establishment's SIRET) or 0009 (SIRET), when they "
                  "are digits: nine (fourteen) of them and the Luhn key INSEE gives every SIREN and SIRET (La "
                  "Poste's establishments theirs).",
                  "France's register and e-invoicing platforms find a company or establishment by this number: a "
                  "mistyped digit names another one or none, and the invoice is rejected or not delivered. The "
                  "official rules (BR-FR included) check its length at most."),
    DUE_DATE: ("BT-9 payment due date not before the BT-2 issue date.",
               "A due date before the invoice exists is a typo in most cases, and dunning and discounts run on it."),
    LINE_ID_DUPLICATE: ("BT-126 invoice line identifiers unique within the invoice.",
                        "Credit notes, disputes and the buyer's matching refer to lines by their id; two lines "
                        "with one id cannot be told apart."),
    ATTACHMENT_MIME: ("BT-125-1 attached document mime code against the content of BT-125 (base64 that decodes, "
                      "and the first bytes of a PDF, PNG, JPEG, XLSX, ODS, CSV or XML file).",
                      "A viewer opens the attachment by its declared type: a mislabelled file cannot be opened, "
                      "and the supporting document is lost to the receiver."),
}

_C = f"{{{CANONICAL_NS}}}"
SEPA_CREDIT_TRANSFER = {"58"}
SEPA_DIRECT_DEBIT = {"59"}
LEITWEG_SCHEME = "0204"   # EAS code of the Leitweg-ID as an electronic address
_IBAN_FORM = re.compile(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}")
_BBAN_PART = re.compile(r"(\d+)!")
_MASKED = re.compile(r"[X*]{3,}")   # "DE12 3456 XXXX XXXX 7890": shown in part on purpose
_LEITWEG_FORM = re.compile(r"[0-9]{2,12}(-[0-9A-Z]{0,30})?-[0-9]{2}")
_LEITWEG_STATES = {f"{n:02d}" for n in range(1, 17)} | {"99"}   # Leitweg-ID spec 2.2.1: 01-16 (Länder), 99 (Bund)
# BIC countries that use the IBANs of another country (French overseas departments and territories, Crown
# dependencies); a BIC of these countries next to an IBAN of the other is consistent.
_SAME_IBAN_COUNTRY = {"GF": "FR", "GP": "FR", "MQ": "FR", "RE": "FR", "YT": "FR", "PM": "FR", "BL": "FR",
                      "MF": "FR", "NC": "FR", "PF": "FR", "WF": "FR", "TF": "FR",
                      "JE": "GB", "GG": "GB", "IM": "GB"}
_EU_VAT_PREFIXES = {cc.upper() for cc in eu_vat.MEMBER_STATES} - {"GR"} | {"EL"}   # Greece uses EL (BR-CO-09)


@dataclass
class Finding(Issue):
    """An Issue with the business term and the value it is about (the generation flow names both in its 400); its
    message in German (`message_de`) for the report for people in German (the API's `message` is English)."""
    business_term: str | None = None
    value: str | None = None


class Said(str):
    """An English text (what the API says) that carries its German (`.de`, for the reports for people)."""
    de: str

    def __new__(cls, en: str, de: str):
        said = super().__new__(cls, en)
        said.de = de
        return said


def _de(text: str) -> str:
    return getattr(text, "de", text)


Locate = Callable[[etree._Element], "Location | None"]


# ---- the business terms of canonical elements -------------------------------------------------------------------

@lru_cache(maxsize=1)
def _terms_by_canonical() -> dict[str, tuple[str, str, str]]:
    """Canonical path without prefixes (`/invoice/seller/vatIdentifier`) -> (BT id, name, German name)."""
    return {t.canonical.replace("c:", ""): (t.bt, t.name, term_name(t, "de")) for t in TERMS if t.bt}


def _canonical_path(element) -> str:
    steps = []
    while element is not None:
        steps.append(etree.QName(element).localname)
        element = element.getparent()
    return "/" + "/".join(reversed(steps))


def term_of(element) -> tuple[str | None, str]:
    """(BT id, name) of a canonical element, by the business-term table."""
    bt, name, _ = _terms_by_canonical().get(_canonical_path(element), (None, etree.QName(element).localname, ""))
    return bt, name


def _shown(value: str, limit: int = 60) -> str:
    value = " ".join(value.split())
    return value if len(value) <= limit else value[:limit] + "..."


class _Collector:
    def __init__(self, locate: Locate, strict: bool):
        self.locate, self.severity, self.found = locate, ERROR if strict else WARNING, []

    def add(self, code: str, element, problem: str, why: str, value: str | None = None) -> None:
        """`problem` and `why`: English, or Said (English with German)."""
        local = etree.QName(element).localname
        bt, name, name_de = _terms_by_canonical().get(_canonical_path(element), (None, local, local))
        value = (element.text or "").strip() if value is None else value
        what, what_de = (f"{bt} {name}", f"{bt} {name_de}") if bt else (name, name_de)
        message = f"{what} '{_shown(value)}' {problem}. {why}"
        message_de = f"{what_de} '{_shown(value)}' {_de(problem)}. {_de(why)}"
        self.found.append(Finding(self.severity, code, message, self.locate(element), bt, value,
                                  message_de=message_de))


def _text(element) -> str:
    return (element.text or "").strip() if element is not None else ""


def _find(parent, *path: str):
    return parent.find("/".join(_C + step for step in path)) if parent is not None else None


def _findall(parent, *path: str) -> list:
    return parent.findall("/".join(_C + step for step in path)) if parent is not None else []


# ---- IBAN and BIC --------------------------------------------------------------------------------------------

def is_masked(value: str) -> bool:
    """An account number shown in part on purpose (a run of X or * after the country and check digits)."""
    return bool(_MASKED.search(iban.compact(value)[4:]))


def iban_problem(value: str) -> str | None:
    """What is wrong with an IBAN, or None. Country, length and BBAN form from stdnum's IBAN register; check digits
    ISO 7064 mod 97-10 (stdnum.iban). National check digits inside the BBAN are not judged."""
    number = iban.compact(value)
    if is_masked(number):
        return Said("is masked: the payer cannot transfer to an account number they cannot read in full",
                    "ist maskiert: auf eine Kontonummer, die man nicht ganz lesen kann, lässt sich nicht überweisen")
    if not _IBAN_FORM.fullmatch(number):
        return Said("is no IBAN: two letters (the country), two check digits and up to 30 letters or digits are "
                    "expected", "ist keine IBAN: erwartet werden zwei Buchstaben (das Land), zwei Prüfziffern und bis "
                    "zu 30 Buchstaben oder Ziffern")
    info = numdb.get("iban").info(number)[0][1]
    if not info or "bban" not in info:
        return Said(f"is no IBAN: {number[:2]} is no country that issues IBANs",
                    f"ist keine IBAN: {number[:2]} ist kein Land, das IBANs vergibt")
    expected = 4 + sum(int(n) for n in _BBAN_PART.findall(info["bban"]))
    if len(number) != expected:
        return Said(f"has {len(number)} characters, but IBANs of {info.get('country', number[:2])} ({number[:2]}) "
                    f"have {expected}: a character is missing or one too many",
                    f"hat {len(number)} Zeichen, IBANs aus {number[:2]} haben aber {expected}: ein Zeichen fehlt "
                    "oder ist zu viel")
    try:
        iban.validate(number, check_country=False)
    except InvalidChecksum:
        return Said("fails the IBAN check digits (mod 97): a character is mistyped or two are swapped",
                    "hat falsche IBAN-Prüfziffern (mod 97): ein Zeichen ist vertippt oder zwei sind vertauscht")
    except ValidationError:
        return Said(f"does not have the form of an IBAN of {info.get('country', number[:2])} (letters where the "
                    "bank code or account number has digits, or the reverse)",
                    f"hat nicht die Form einer IBAN aus {number[:2]} (Buchstaben, wo Bankleitzahl oder Kontonummer "
                    "Ziffern haben, oder umgekehrt)")
    return None


def bic_problem(value: str) -> str | None:
    """What is wrong with a BIC (ISO 9362, stdnum.bic), or None."""
    try:
        bic.validate(value)
    except InvalidLength:
        return Said("is no BIC: a BIC has 8 or 11 characters (bank 4 letters, country 2, location 2, branch 3)",
                    "ist keine BIC: eine BIC hat 8 oder 11 Zeichen (Bank 4 Buchstaben, Land 2, Ort 2, Filiale 3)")
    except InvalidComponent:
        return Said(f"is no BIC: its country code {bic.compact(value)[4:6]} is no ISO 3166 country",
                    f"ist keine BIC: ihr Ländercode {bic.compact(value)[4:6]} ist kein Land nach ISO 3166")
    except ValidationError:
        return Said("is no BIC: 4 letters (bank), 2 letters (country), 2 letters or digits (location), optional 3 "
                    "(branch)", "ist keine BIC: 4 Buchstaben (Bank), 2 Buchstaben (Land), 2 Buchstaben oder Ziffern "
                    "(Ort), optional 3 (Filiale)")
    return None


def _check_account(out: _Collector, account, provider, means: str) -> None:
    """One BG-17 credit transfer (or the BT-91 of a direct debit): its IBAN and the BIC beside it. The debited
    account of a direct debit is often shown masked on purpose (the bank debits the mandate's account): not judged
    then."""
    sepa = means in SEPA_CREDIT_TRANSFER or means in SEPA_DIRECT_DEBIT
    number = _text(account)
    if means in SEPA_DIRECT_DEBIT and is_masked(number):
        return
    # any account written like an IBAN is one, whatever the means code (30 "credit transfer" is the common German
    # code); an account number of another form is judged only where the means code needs an IBAN
    shaped = bool(number) and bool(_IBAN_FORM.fullmatch(iban.compact(number))) and not is_masked(number)
    if account is not None and number and (sepa or shaped):
        problem = iban_problem(number)
        if problem and sepa:
            kind, kind_de = (("SEPA credit transfer", "SEPA-Überweisung") if means in SEPA_CREDIT_TRANSFER
                             else ("SEPA direct debit", "SEPA-Lastschrift"))
            out.add(IBAN, account, problem, Said(
                f"The payment means is {means} ({kind}), which needs a valid IBAN: the payment would bounce or "
                "reach another account.", f"Die Zahlungsart ist {means} ({kind_de}), die eine gültige IBAN braucht: "
                "die Zahlung käme zurück oder erreichte ein anderes Konto."))
        elif problem:
            out.add(IBAN, account, problem, Said(
                "The account is written as an IBAN (country, check digits, account): as it stands the payment would "
                "bounce or reach another account.", "Das Konto ist als IBAN geschrieben (Land, Prüfziffern, Konto): "
                "so käme die Zahlung zurück oder erreichte ein anderes Konto."))
    code = _text(provider)
    if provider is None or not code:
        return
    compact = iban.compact(number)
    is_iban = bool(number) and iban.is_valid(compact, check_country=False)
    if not (sepa or is_iban):
        return   # outside SEPA, BT-86 may be a national clearing code (e.g. SE:BANKGIRO)
    problem = bic_problem(code)
    if problem:
        out.add(BIC, provider, problem, Said("A transfer to a wrong BIC is rejected or routed to another bank.",
                                             "Eine Überweisung an eine falsche BIC wird abgelehnt oder an eine "
                                             "andere Bank geleitet."))
        return
    bic_country, iban_country = bic.compact(code)[4:6], compact[:2]
    if is_iban and _SAME_IBAN_COUNTRY.get(bic_country, bic_country) != _SAME_IBAN_COUNTRY.get(iban_country,
                                                                                             iban_country):
        out.add(BIC, provider, Said(f"is a bank in {bic_country}, but the IBAN {compact[:4]}... beside it is of "
                                    f"{iban_country}", f"ist eine Bank in {bic_country}, die IBAN {compact[:4]}... "
                                    f"daneben aber aus {iban_country}"),
                Said("One of the two is wrong: a BIC names the bank that keeps the account.",
                     "Eine der beiden ist falsch: die BIC nennt die Bank, die das Konto führt."))


_CREDITOR_WHY = Said("The debtor's bank refuses a direct debit under a wrong creditor identifier.",
                     "Die Bank des Zahlers lehnt eine Lastschrift unter einer falschen Gläubiger-ID ab.")


def _check_payment(out: _Collector, root) -> None:
    instructions = _find(root, "paymentInstructions")
    if instructions is None:
        return
    means = _text(_find(instructions, "meansCode"))
    for transfer in [_find(instructions, "creditTransfer"), *_findall(instructions, "additionalCreditTransfer")]:
        if transfer is not None:
            _check_account(out, _find(transfer, "accountIdentifier"), _find(transfer, "serviceProviderIdentifier"),
                           means)
    debit = _find(instructions, "directDebit")
    if debit is None:
        return
    if means in SEPA_DIRECT_DEBIT:
        _check_account(out, _find(debit, "debtorAccountIdentifier"), None, means)
    creditor = _find(debit, "creditorIdentifier")
    if _text(creditor):
        try:
            at_02.validate(_text(creditor))
        except InvalidChecksum:
            out.add(CREDITOR_ID, creditor, Said("fails the check digits of a SEPA creditor identifier (mod 97)",
                                                "hat falsche Prüfziffern einer SEPA-Gläubiger-ID (mod 97)"), _CREDITOR_WHY)
        except ValidationError:
            out.add(CREDITOR_ID, creditor, Said(
                "is no SEPA creditor identifier (country, 2 check digits, 3 characters business code, national "
                "identifier)", "ist keine SEPA-Gläubiger-ID (Land, 2 Prüfziffern, 3 Zeichen Geschäftsbereich, "
                "nationale Kennung)"), _CREDITOR_WHY)


# ---- VAT identifiers ---------------------------------------------------------------------------------------------

def vat_problem(value: str) -> str | None:
    """What is wrong with an EU VAT identifier (stdnum.eu.vat: the rules of the country its prefix names), or None.
    Identifiers without an EU prefix are not judged here (BR-CO-09 requires a prefix)."""
    prefix = value.strip()[:2].upper()
    if prefix not in _EU_VAT_PREFIXES:
        return None
    try:
        eu_vat.validate(value)
    except InvalidChecksum:
        return Said(f"fails the check digits of {prefix} VAT identifiers: a digit is mistyped or two are swapped",
                    f"hat falsche Prüfziffern für Umsatzsteuer-IDs aus {prefix}: eine Ziffer ist vertippt oder "
                    "zwei sind vertauscht")
    except InvalidLength:
        return Said(f"has the wrong number of characters for {prefix} VAT identifiers",
                    f"hat die falsche Zeichenzahl für Umsatzsteuer-IDs aus {prefix}")
    except ValidationError:
        return Said(f"does not have the form of {prefix} VAT identifiers",
                    f"hat nicht die Form einer Umsatzsteuer-ID aus {prefix}")
    return None


def _check_vat_ids(out: _Collector, root) -> None:
    for party in ("seller", "buyer", "sellerTaxRepresentativeParty"):
        element = _find(root, party, "vatIdentifier")
        if _text(element):
            problem = vat_problem(_text(element))
            if problem:
                out.add(VAT_ID, element, problem, Said(
                    # (a consequence of the EU VAT Directive's invoice contents, art. 226, not of one member
                    # state's law: said for any seller and buyer, and hedged, as the buyer's law decides)
                    "Under EU VAT law an invoice with a wrong VAT identifier can cost the buyer its input VAT "
                    "deduction, and a VAT exemption (intra-community, reverse charge) needs a valid one.",
                    "Nach dem Umsatzsteuerrecht der EU kann eine Rechnung mit falscher Umsatzsteuer-ID den Käufer den "
                    "Vorsteuerabzug kosten, und eine Steuerbefreiung (innergemeinschaftlich, Reverse Charge) braucht "
                    "eine gültige."))


# ---- Leitweg-ID ----------------------------------------------------------------------------------------------

def leitweg_problem(value: str, known: bool = False) -> str | None:
    """What is wrong with a Leitweg-ID (stdnum.de.leitweg), or None. Unless `known` (the document says it is one:
    BT-49 scheme 0204), a value without the Leitweg-ID form is a buyer reference of another kind: not judged."""
    number = leitweg.compact(value)
    looks_like = _LEITWEG_FORM.fullmatch(number) and number[:2] in _LEITWEG_STATES
    if not (known or looks_like):
        return None
    try:
        leitweg.validate(number)
    except InvalidChecksum:
        return Said("fails the Leitweg-ID check digits (mod 97-10, the last two digits): a digit is mistyped",
                    "hat falsche Prüfziffern der Leitweg-ID (mod 97-10, die letzten zwei Ziffern): eine Ziffer ist "
                    "vertippt")
    except InvalidComponent:
        return Said(f"starts with {number[:2]}, which is no Leitweg-ID state code (01-16, 99)",
                    f"beginnt mit {number[:2]}, das ist keine Länderkennung einer Leitweg-ID (01-16, 99)")
    except ValidationError:
        return Said("does not have the form of a Leitweg-ID (coarse address of 2-12 digits, optional fine address, "
                    "two check digits, separated by '-')", "hat nicht die Form einer Leitweg-ID (Grobadressierung "
                    "aus 2-12 Ziffern, optional Feinadressierung, zwei Prüfziffern, getrennt durch '-')")
    return None


def _check_leitweg(out: _Collector, root) -> None:
    why = Said("Public buyers route XRechnung invoices by the Leitweg-ID; with a wrong one the invoice is rejected.",
               "Öffentliche Auftraggeber leiten XRechnungen über die Leitweg-ID weiter; mit einer falschen wird die "
               "Rechnung abgewiesen.")
    reference = _find(root, "buyerReference")
    if _text(reference):
        problem = leitweg_problem(_text(reference))
        if problem:
            out.add(LEITWEG_ID, reference, problem, why)
    address = _find(root, "buyer", "electronicAddress")
    if _text(address) and _text(_find(root, "buyer", "electronicAddressSchemeId")) == LEITWEG_SCHEME:
        problem = leitweg_problem(_text(address), known=True)
        if problem:
            out.add(LEITWEG_ID, address, problem, Said("Scheme 0204 says it is a Leitweg-ID. " + why,
                                                       "Schema 0204 sagt, dass es eine Leitweg-ID ist. " + why.de))


# ---- SIREN and SIRET ------------------------------------------------------------------------------------------

def french_id_problem(scheme: str, value: str) -> str | None:
    """What is wrong with a number of scheme 0002 (SIRENE: a company's SIREN, or an establishment's SIRET) or 0009
    (SIRET), or None. The Luhn key is france.identifier_problem's verdict (python-stdnum). Spaces and dots between
    the digits are let pass, as in a VAT id; a value with other characters (a placeholder such as `FR23342`, an
    e-mail address) is no number of the register at all and is left to the rules that require one (BR-FR-10 ...)."""
    scheme, number = scheme.strip(), re.sub(r"[ .]", "", value.strip())
    if scheme not in france.FORMATS or not number.isascii() or not number.isdigit():
        return None
    if scheme == france.SIREN_SCHEME and france.SIRET_DIGITS.fullmatch(number):
        scheme = france.SIRET_SCHEME   # ICD 0002 is the SIRENE register, which numbers establishments too
    if france.identifier_problem(scheme, number) is None:
        return None
    if not france.FORMATS[scheme][0].fullmatch(number):
        return (Said(f"has {len(number)} digits, but a SIRET (scheme 0009) has fourteen: a digit is missing or one "
                     "too many", f"hat {len(number)} Ziffern, eine SIRET (Schema 0009) hat aber vierzehn: eine Ziffer "
                     "fehlt oder ist zu viel")
                if scheme == france.SIRET_SCHEME else
                Said(f"has {len(number)} digits, but a SIREN (scheme 0002) has nine (an establishment's SIRET "
                     "fourteen): a digit is missing or one too many", f"hat {len(number)} Ziffern, eine SIREN "
                     "(Schema 0002) hat aber neun (die SIRET einer Niederlassung vierzehn): eine Ziffer fehlt oder "
                     "ist zu viel"))
    name, holder, holder_de = (("SIRET", "establishment", "keine Niederlassung") if scheme == france.SIRET_SCHEME
                               else ("SIREN", "company", "kein Unternehmen"))
    return Said(f"fails the check digit (Luhn key) of a {name}: a digit is mistyped or two are swapped, and no "
                f"{holder} has this number", f"hat eine falsche Prüfziffer (Luhn-Schlüssel) einer {name}: eine "
                f"Ziffer ist vertippt oder zwei sind vertauscht, und {holder_de} hat diese Nummer")


_FRENCH_ID_WHY = Said(CHECKS[SIREN_SIRET][1], "Das Register und die E-Rechnungsplattformen Frankreichs finden ein "
                      "Unternehmen oder eine Niederlassung über diese Nummer: eine vertippte Ziffer nennt ein anderes "
                      "oder keines, und die Rechnung wird abgewiesen oder nicht zugestellt. Die offiziellen Regeln "
                      "(auch BR-FR) prüfen höchstens ihre Länge.")
# (value, its scheme) of each party: the identifiers that may be SIRENs or SIRETs
_FRENCH_IDS = (("identifier", "identifierSchemeId"),
               ("legalRegistrationIdentifier", "legalRegistrationIdentifierSchemeId"),
               ("electronicAddress", "electronicAddressSchemeId"))


def _check_french_ids(out: _Collector, root) -> None:
    for party in ("seller", "buyer", "payee"):
        holders = [_find(root, party), *_findall(root, party, "additionalIdentifier")]
        for holder in holders:
            for name, scheme in _FRENCH_IDS:
                element = _find(holder, name)
                problem = french_id_problem(_text(_find(holder, scheme)), _text(element)) if _text(element) else None
                if problem:
                    out.add(SIREN_SIRET, element, problem, _FRENCH_ID_WHY)


# ---- dates and lines -----------------------------------------------------------------------------------------

def _date(element) -> dt.date | None:
    try:
        return dt.date.fromisoformat(_text(element)[:10])
    except ValueError:
        return None


def _check_due_date(out: _Collector, root) -> None:
    due, issued = _find(root, "paymentDueDate"), _find(root, "issueDate")
    if due is None or issued is None:
        return
    due_date, issue_date = _date(due), _date(issued)
    if due_date and issue_date and due_date < issue_date:
        days = (issue_date - due_date).days
        out.add(DUE_DATE, due, Said(f"is {days} day{'' if days == 1 else 's'} before the issue date {issue_date}",
                                    f"liegt {days} Tag{'' if days == 1 else 'e'} vor dem Rechnungsdatum {issue_date}"),
                Said("A payment cannot fall due before the invoice exists; the date is probably mistyped, and payment "
                     "runs, discounts and dunning use it.", "Eine Zahlung kann nicht fällig werden, bevor die "
                     "Rechnung existiert; das Datum ist wohl vertippt, und Zahlläufe, Skonto und Mahnwesen nutzen "
                     "es."))


def _check_line_ids(out: _Collector, root) -> None:
    first: dict[str, int] = {}
    for number, line in enumerate(_findall(root, "invoiceLine"), 1):
        element = _find(line, "lineIdentifier")
        key = _text(element)
        if not key:
            continue
        if key in first:
            out.add(LINE_ID_DUPLICATE, element, Said(f"of line {number} is also the id of line {first[key]}",
                                                     f"der Position {number} ist auch die Kennung der Position "
                                                     f"{first[key]}"),
                    Said("Credit notes, disputes and the buyer's matching refer to lines by their id.",
                         "Gutschriften, Reklamationen und der Abgleich des Käufers verweisen über die Kennung auf "
                         "Positionen."))
        else:
            first[key] = number


# ---- attachments ---------------------------------------------------------------------------------------------

_ODS = b"application/vnd.oasis.opendocument.spreadsheet"
_SNIFFED = {  # declared mime code -> the kinds of content that fit it
    "application/pdf": {"pdf"},
    "image/png": {"png"},
    "image/jpeg": {"jpeg"},
    "image/jpg": {"jpeg"},
    "text/csv": {"text"},
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {"xlsx"},
    _ODS.decode(): {"ods"},
    "application/xml": {"xml"},
    "text/xml": {"xml"},
}
_KIND_TEXT = {"pdf": "a PDF document", "png": "a PNG image", "jpeg": "a JPEG image", "xlsx": "an XLSX workbook",
              "ods": "an OpenDocument spreadsheet", "zip": "a ZIP archive", "xml": "an XML document",
              "gif": "a GIF image", "tiff": "a TIFF image", "text": "text", "binary": "binary data of no known type"}
_KIND_TEXT_DE = {"pdf": "ein PDF-Dokument", "png": "ein PNG-Bild", "jpeg": "ein JPEG-Bild",
                 "xlsx": "eine XLSX-Arbeitsmappe", "ods": "eine OpenDocument-Tabelle", "zip": "ein ZIP-Archiv",
                 "xml": "ein XML-Dokument", "gif": "ein GIF-Bild", "tiff": "ein TIFF-Bild", "text": "Text",
                 "binary": "Binärdaten unbekannter Art"}


def sniff(data: bytes) -> str:
    """The kind of a file by its first bytes: pdf, png, jpeg, gif, tiff, ods, xlsx, zip, xml, text or binary."""
    head = data[:4096]
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return "tiff"
    if head.startswith(b"PK\x03\x04"):
        if _ODS in head[:200]:
            return "ods"
        return "xlsx" if b"xl/" in data[:1 << 16] or b"[Content_Types].xml" in data[:1 << 16] else "zip"
    if b"\x00" in head:
        return "binary"
    for codec in ("utf-8-sig", "cp1252"):
        try:
            text = head.decode(codec)
        except UnicodeDecodeError:
            continue
        return "xml" if text.lstrip().startswith("<") else "text"
    return "binary"


_BASE64_LETTERS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_HEAD = 4096   # what sniff() reads of a file, but for a ZIP's directory (up to 64 KiB)


def attachment_head(text: str, size: int) -> bytes | None:
    """At least the first `size` bytes of the base64 `text` (all of them when it is short), or None when `text` is
    not valid base64: the verdict of base64.b64decode(validate=True) on the whole, whitespace removed, without
    decoding the whole (an attachment may be megabytes; a2b_base64 takes ~2.5 ms per MB). The alphabet is checked
    on all of it; only the last quad and what follows it can break the padding, so only they are decoded."""
    compact = "".join(text.split())
    if not compact.isascii():
        return None
    raw = compact.encode("ascii")
    rest = raw.translate(None, _BASE64_LETTERS)   # [A-Za-z0-9+/]*={0,2} in C, 3-4 x faster than re
    if rest not in (b"", b"=", b"==") or not raw.endswith(rest):
        return None
    last, cut = len(raw) - len(raw) % 4 - 4, 4 * -(-size // 3)
    try:
        if last <= cut:
            return base64.b64decode(raw, validate=True)
        base64.b64decode(raw[last:], validate=True)   # the quads before it are letters only: they decode
    except (binascii.Error, ValueError):
        return None
    return binascii.a2b_base64(raw[:cut])


def _attached_kind(text: str) -> str | None:
    """sniff() of a base64 attachment, decoding only what it reads; None: no valid base64; "" nothing in it."""
    data = attachment_head(text, _HEAD)
    if not data:
        return None if data is None else ""
    kind = sniff(data)
    if kind == "zip" and len(data) < 1 << 16:   # an XLSX may name its parts further in
        kind = sniff(attachment_head(text, 1 << 16))
    return kind


def _check_attachments(out: _Collector, root, texts) -> None:
    why = Said("A viewer opens an attachment by its declared type: a mislabelled file cannot be opened.",
               "Ein Betrachter öffnet einen Anhang nach seinem angegebenen Typ: eine falsch bezeichnete Datei lässt "
               "sich nicht öffnen.")
    for document in _findall(root, "additionalSupportingDocument"):
        content, mime = _find(document, "attachedDocument"), _find(document, "attachedDocumentMimeType")
        declared = _text(mime).lower()
        text = texts[content] if content in texts else (content.text if content is not None else None)
        if not (text or "").strip() or declared not in _SNIFFED:
            continue   # nothing attached, or a mime code the rules judge (BR-CL-24) and we cannot
        kind = _attached_kind(text)
        if kind is None:
            out.add(ATTACHMENT_MIME, mime, Said("is declared, but the attached document (BT-125) is no valid base64",
                                                "ist angegeben, das Anhangsdokument (BT-125) ist aber kein gültiges "
                                                "Base64"),
                    Said("The receiver cannot decode the file at all.",
                         "Der Empfänger kann die Datei gar nicht dekodieren."))
        elif kind and kind not in _SNIFFED[declared]:
            out.add(ATTACHMENT_MIME, mime, Said(f"is declared, but the attached document (BT-125) is {_KIND_TEXT[kind]}",
                                                f"ist angegeben, das Anhangsdokument (BT-125) ist aber "
                                                f"{_KIND_TEXT_DE[kind]}"), why)


# ---- all of them ---------------------------------------------------------------------------------------------

def check(root, locate: Locate, xrechnung: bool = False, strict: bool = False,
          texts: dict | None = None) -> list[Finding]:
    """The content findings of a canonical invoice (`root`: its `invoice` element). `locate(element)` says where a
    canonical element is (None: nowhere to point at); `xrechnung` adds the Leitweg-ID check; `strict` makes the
    findings ERRORs (WARNINGs otherwise); `texts`: the text of canonical elements kept out of the tree (an
    attachment's base64 left in the received document, pipeline.check.content_source)."""
    out = _Collector(locate, strict)
    _check_payment(out, root)
    _check_vat_ids(out, root)
    _check_french_ids(out, root)
    if xrechnung:
        _check_leitweg(out, root)
    _check_due_date(out, root)
    _check_line_ids(out, root)
    _check_attachments(out, root, texts or {})
    return out.found


def is_content_issue(issue: Issue) -> bool:
    return issue.code.startswith(PREFIX)


def json_field(element) -> str:
    """The JSON field path of a canonical element of a generation request (docs/canonical.md: same names, repeated
    singular items = the array's items): `invoice/invoiceLine[2]/lineIdentifier` -> `invoice.invoiceLines[1]
    .lineIdentifier`."""
    arrays = {item: name for name, item in ARRAY_ITEMS.items()}
    steps: list[str] = []
    while element is not None:
        name = etree.QName(element).localname
        if name in arrays and element.getparent() is not None:
            index = sum(1 for s in element.itersiblings(preceding=True) if s.tag == element.tag)
            steps.append(f"{arrays[name]}[{index}]")
        else:
            steps.append(name)
        element = element.getparent()
    return ".".join(reversed(steps))


def fields(findings: Iterable[Finding]) -> list[str]:
    """`CODE field (BT)` of each finding whose location names a JSON field (generation)."""
    return [f"{f.code} {f.location.xpath}" + (f" ({f.business_term})" if f.business_term else "")
            for f in findings if f.location is not None and f.location.xpath]
