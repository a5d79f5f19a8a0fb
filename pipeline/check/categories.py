"""The class of a finding as German tax law sees it: the Federal Ministry of Finance's letter of 15 October 2025 on
the mandatory e-invoice (BMF-Schreiben vom 15.10.2025, BStBl 2025 I S. 1806, amending the letter of 15.10.2024 and
the UStAE) sorts defects of an e-invoice in three classes, and the class decides the consequence:

- format error (Formatfehler): the file does not meet the permitted syntax and its technical specifications, so
  it is no e-invoice but an "other invoice" (sonstige Rechnung), whatever the kind of the format error;
- business-rule error (Geschäftsregelfehler): the file breaks the business rules valid for its format (technical
  rules on the logical dependencies of its information: a mandatory field empty, amounts that contradict each
  other); relevant for VAT only where it makes a mandatory item of §§ 14, 14a UStG wrong or missing;
- content error (Inhaltsfehler): a mandatory item of §§ 14, 14a UStG is wrong or incomplete, e.g. a wrong tax rate
  or VAT identification number: no proper invoice for the input VAT deduction.

What we map, and why: well-formedness and XSD findings and a ZUGFeRD PDF whose invoice cannot be extracted are
format errors; the business rules of the official packs (EN 16931 `BR-...`, XRechnung `BR-DE-...`, the
extension's `BR-DEX-...`, Peppol's) are business-rule errors; our content checks (`CHECK-...`: wrong VAT id,
IBAN, dates) judge values, so they are content errors. The letter does not say where the syntax-binding rules of
the Schematron packs (`UBL-CR-...`, `UBL-SR-...`, `CII-SR-...`, `UBL-DT-...`, `CII-DT-...`; they restrict what
a syntax may carry, between format and business rule), the Factur-X profile rules (`FX-SCH-...`, both kinds
mixed), the PDF/A-3 and XMP container checks, and our own findings about running the rules belong: those are
`undetermined` (the letter leaves their class open), never a guess.

The sentence on what the worst class means follows the errors only: warnings are recommendations of the rules (a
content finding counts when `strict` makes it an error). The letter's consequences are German VAT law's: for an
invoice whose seller and buyer are both outside Germany by what it states (address countries, VAT identifier
prefixes: `xmlinput.party_countries`), a UK-to-Sweden Peppol invoice or a French one, the sentence names the
class, says whose class it is and leaves the German consequence out; with no error it says so without the letter.
"""
from __future__ import annotations

FORMAT = "format"
BUSINESS_RULE = "business-rule"
CONTENT = "content"
UNDETERMINED = "undetermined"
CATEGORIES = (FORMAT, BUSINESS_RULE, CONTENT, UNDETERMINED)

# A ZUGFeRD / Factur-X PDF whose invoice XML cannot be extracted carries no e-invoice at all.
_FORMAT_CODES = frozenset({"XML-MALFORMED", "XML-EMPTY", "XML-DTD-FORBIDDEN", "XML-UNKNOWN-ROOT",
                           "FX_NO_EMBEDDED_INVOICE", "FX_EMBEDDED_FILE_BROKEN", "FX_NOT_CII", "PDF_STRUCTURE_BROKEN"})
_SYNTAX_BINDING = ("UBL-CR-", "UBL-SR-", "UBL-DT-", "CII-SR-", "CII-DT-")


def category_of(code: str) -> str:
    """format | business-rule | content | undetermined for a finding's code."""
    if code in _FORMAT_CODES or code.startswith("XSD-"):
        return FORMAT
    if code.startswith("CHECK-"):
        return CONTENT
    if code.startswith(_SYNTAX_BINDING):
        return UNDETERMINED
    if code.startswith(("BR-", "PEPPOL-")):
        return BUSINESS_RULE
    return UNDETERMINED


# The consequence for the receiver, most serious first: a format error makes the file no e-invoice; a content error
# touches a mandatory item where it is one of §§ 14, 14a UStG; a business-rule error counts only where it does.
_RANK = (FORMAT, CONTENT, BUSINESS_RULE, UNDETERMINED)

MEANING = {
    "en": {
        FORMAT: "Format error: the file does not meet the syntax of an e-invoice, so under the BMF letter of "
                "15 October 2025 it is not an e-invoice but an other invoice, and where an e-invoice is required "
                "the receiver holds no proper invoice for the input VAT deduction.",
        CONTENT: "Content error: a value the invoice states looks wrong (see the CHECK findings); where it is a "
                 "mandatory item of sections 14, 14a UStG (e.g. a VAT identification number), the BMF letter of "
                 "15 October 2025 says the invoice is not a proper one for the input VAT deduction.",
        BUSINESS_RULE: "Business-rule error: the e-invoice breaks a business rule of its format; under the BMF letter "
                       "of 15 October 2025 this matters for VAT only where a mandatory item of sections 14, 14a UStG "
                       "is wrong or missing, so the receiver should check the rules listed.",
        UNDETERMINED: "The findings are of rules whose class the BMF letter of 15 October 2025 leaves open (syntax "
                      "binding, Factur-X profile or PDF container rules): their consequence for VAT is not stated.",
        None: "No error: nothing the BMF letter of 15 October 2025 classes as a format, business-rule or content "
              "error was found; warnings are recommendations of the rules.",
    },
    "de": {
        FORMAT: "Formatfehler: Die Datei entspricht nicht der Syntax einer E-Rechnung; nach dem BMF-Schreiben vom "
                "15. Oktober 2025 ist sie keine E-Rechnung, sondern eine sonstige Rechnung, und wo eine E-Rechnung "
                "vorgeschrieben ist, hat der Empfänger keine ordnungsgemäße Rechnung für den Vorsteuerabzug.",
        CONTENT: "Inhaltsfehler: Eine Angabe der Rechnung scheint falsch (siehe die CHECK-Befunde); ist sie eine "
                 "Pflichtangabe nach §§ 14, 14a UStG (z. B. die USt-IdNr.), ist die Rechnung nach dem BMF-Schreiben "
                 "vom 15. Oktober 2025 keine ordnungsgemäße Rechnung für den Vorsteuerabzug.",
        BUSINESS_RULE: "Geschäftsregelfehler: Die E-Rechnung verstößt gegen eine Geschäftsregel ihres Formats; nach "
                       "dem BMF-Schreiben vom 15. Oktober 2025 ist das umsatzsteuerlich nur beachtlich, wenn eine "
                       "Pflichtangabe nach §§ 14, 14a UStG fehlt oder falsch ist; der Empfänger prüfe die genannten "
                       "Regeln.",
        UNDETERMINED: "Die Befunde betreffen Regeln, deren Klasse das BMF-Schreiben vom 15. Oktober 2025 offenlässt "
                      "(Syntaxbindung, Factur-X-Profil oder PDF-Container): ihre umsatzsteuerliche Folge ist nicht "
                      "bestimmt.",
        None: "Kein Fehler: Nichts, was das BMF-Schreiben vom 15. Oktober 2025 als Format-, Geschäftsregel- oder "
              "Inhaltsfehler einordnet, wurde gefunden; Warnungen sind Empfehlungen der Regeln.",
    },
}

# Outside German VAT law: the class alone, and whose class it is; no error, without the letter (it has no consequence
# to state of an invoice German VAT law does not govern).
ABROAD = {
    "en": ({FORMAT: "Format error: the file does not meet the syntax of an e-invoice.",
            CONTENT: "Content error: a value the invoice states looks wrong (see the CHECK findings).",
            BUSINESS_RULE: "Business-rule error: the e-invoice breaks a business rule of its format.",
            None: "No error: the rules found no format, business-rule or content error; warnings are "
                  "recommendations of the rules."},
           "The class is one of the German BMF letter of 15 October 2025, whose consequences apply under German VAT "
           "law; neither seller nor buyer is in Germany, so the VAT law of their countries decides."),
    "de": ({FORMAT: "Formatfehler: Die Datei entspricht nicht der Syntax einer E-Rechnung.",
            CONTENT: "Inhaltsfehler: Eine Angabe der Rechnung scheint falsch (siehe die CHECK-Befunde).",
            BUSINESS_RULE: "Geschäftsregelfehler: Die E-Rechnung verstößt gegen eine Geschäftsregel ihres Formats.",
            None: "Kein Fehler: Die Regeln fanden keinen Format-, Geschäftsregel- oder Inhaltsfehler; Warnungen sind "
                  "Empfehlungen der Regeln."},
           "Die Klasse ist eine des BMF-Schreibens vom 15. Oktober 2025, dessen Folgen nach deutschem "
           "Umsatzsteuerrecht gelten; weder Verkäufer noch Käufer sind in Deutschland, es entscheidet das "
           "Umsatzsteuerrecht ihrer Länder."),
}

LABELS = {"en": {FORMAT: "format", BUSINESS_RULE: "business rule", CONTENT: "content", UNDETERMINED: "open"},
          "de": {FORMAT: "Format", BUSINESS_RULE: "Geschäftsregel", CONTENT: "Inhalt", UNDETERMINED: "offen"}}


def worst_category(issues) -> str | None:
    """The most serious class among the errors; None when there is none. Warnings (the official rules'
    recommendations, and the content checks unless `strict` makes them errors) are no class of the letter: a
    sentence under a valid verdict never speaks of an error."""
    found = {category_of(i.code) for i in issues if i.severity == "ERROR"}
    return next((c for c in _RANK if c in found), None)


def under_german_law(countries: set[str]) -> bool | None:
    """Whether the letter's consequences apply: seller or buyer in Germany (None: nothing stated, not known)."""
    return ("DE" in countries) if countries else None


def _sentence(worst: str | None, language: str, german_law: bool | None) -> str:
    if german_law is False and worst in ABROAD[language][0]:
        heads, whose = ABROAD[language]
        return heads[worst] + (" " + whose if worst else "")
    return MEANING[language][worst]


def meaning(issues, language: str = "en", german_law: bool | None = None) -> str:
    """One sentence: what the report's worst class means for the receiver (`german_law` False: the class only)."""
    return _sentence(worst_category(issues), language if language in MEANING else "en", german_law)


def meanings(issues, german_law: bool | None = None) -> dict[str, str]:
    """That sentence in every language we write it in ({"en": ..., "de": ...}): the JSON report's summary carries
    both, whatever language a report for people is in."""
    worst = worst_category(issues)
    return {language: _sentence(worst, language, german_law) for language in MEANING}
