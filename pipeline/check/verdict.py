"""The verdict of a validation report: valid, invalid or indeterminate.

An extension of the service specification, whose `valid` stays the boolean it is, false for indeterminate: a client
that reads only `valid` fails closed.

- invalid: the rules that ran found an error. Errors found on rules we did run stand, whatever else could not be
  judged.
- indeterminate: no error, but something the document needs judged was not (`NotJudged`): it claims rules this
  service does not have (another EN 16931 edition, an XRechnung or Peppol version, a Factur-X / ZUGFeRD profile or
  version, ZUGFeRD 1.0), or a specification the endpoint's rules do not cover, or a required check could not run
  (a PDF whose PDF/A check did not complete). A report never calls such a document valid, and never says more of it
  than what was checked.
- valid: no error, and everything judged.

Under the BMF letter of 15 October 2025 a document we could not judge is neither shown to be an e-invoice nor shown
to have a format error: its class in the summary (`worstCategory`) is `indeterminate`, and the summary sentence says
what that means for the receiver.
"""
from __future__ import annotations

from dataclasses import dataclass

VALID, INVALID, INDETERMINATE = "valid", "invalid", "indeterminate"
VERDICTS = (VALID, INVALID, INDETERMINATE)

# Why a document was not judged. The claims (`pipeline.check.claims`):
RULES_NOT_INSTALLED = "RULES-NOT-INSTALLED"  # it claims rules this service does not have
CLAIM_NOT_COVERED = "CLAIM-NOT-COVERED"      # it claims a specification this endpoint's rules do not cover
# A required check that could not run keeps the code of the check (PDFA_CHECK_TIMEOUT, PDFA_4_NOT_CHECKED, ...).


@dataclass(frozen=True)
class NotJudged:
    """Something the report could not judge, and why. `claim`: what the document claims (its specification
    identifier, BT-24; a ZUGFeRD 1.0 root; a PDF/A part) where a claim is the reason. `message_de`: the message in
    German, for the reports for people in German (the API's `message` is English)."""
    code: str
    message: str
    claim: str | None = None
    message_de: str | None = None

    def to_dict(self) -> dict:
        out = {"code": self.code, "message": self.message}
        if self.claim is not None:
            out["claim"] = self.claim
        if self.message_de:
            out["messageDe"] = self.message_de
        return out


def verdict(errors: int, not_judged) -> str:
    """invalid with an error; else indeterminate when anything was not judged; else valid."""
    if errors:
        return INVALID
    return INDETERMINATE if not_judged else VALID


# The class of an indeterminate report (summary.worstCategory) and what it means for the receiver.
CATEGORY = INDETERMINATE
MEANING = {
    "en": "Indeterminate: the document claims rules this service does not have, or a specification this endpoint "
          "does not judge, or a required check could not run (see 'not judged'), and the rules that did run found "
          "no error. Under the BMF letter of 15 October 2025 it is thus neither shown to be a proper e-invoice nor "
          "shown to have a format error: the receiver should not accept it on this report, but have it checked on "
          "the rules it names or ask the sender for a format the receiver accepts.",
    "de": "Nicht beurteilbar: Das Dokument beruft sich auf Regeln, die dieser Dienst nicht hat, oder auf eine "
          "Spezifikation, die dieser Endpunkt nicht prüft, oder eine nötige Prüfung konnte nicht laufen (siehe "
          "„nicht beurteilt“), und die Regeln, die liefen, fanden keinen Fehler. Nach dem BMF-Schreiben vom "
          "15. Oktober 2025 ist damit weder gezeigt, dass es eine ordnungsgemäße E-Rechnung ist, noch dass ein "
          "Formatfehler vorliegt: Der Empfänger sollte es auf diesen Bericht hin nicht annehmen, sondern es nach den "
          "genannten Regeln prüfen lassen oder den Absender um ein Format bitten, das er annimmt.",
}
# Outside German VAT law (neither seller nor buyer in Germany, `categories.under_german_law`): without the letter.
MEANING_ABROAD = {
    "en": "Indeterminate: the document claims rules this service does not have, or a specification this endpoint "
          "does not judge, or a required check could not run (see 'not judged'), and the rules that did run found "
          "no error: the receiver should not accept it on this report, but have it checked on the rules it names.",
    "de": "Nicht beurteilbar: Das Dokument beruft sich auf Regeln, die dieser Dienst nicht hat, oder auf eine "
          "Spezifikation, die dieser Endpunkt nicht prüft, oder eine nötige Prüfung konnte nicht laufen (siehe "
          "„nicht beurteilt“), und die Regeln, die liefen, fanden keinen Fehler: Der Empfänger sollte es auf diesen "
          "Bericht hin nicht annehmen, sondern es nach den genannten Regeln prüfen lassen.",
}


def meanings(german_law: bool | None = None) -> dict[str, str]:
    """The sentence of an indeterminate report in English and German; the BMF letter's reading where German VAT
    law may apply (seller or buyer in Germany, or not known)."""
    return dict(MEANING_ABROAD if german_law is False else MEANING)


LABELS = {"en": {VALID: "Valid", INVALID: "Invalid", INDETERMINATE: "Indeterminate", "class": "indeterminate",
                 "not_judged": "Not judged", "rules": "Rules applied", "none_ran": "none",
                 "optimised": "optimised copy"},
          "de": {VALID: "Gültig", INVALID: "Ungültig", INDETERMINATE: "Nicht beurteilbar", "class": "nicht beurteilbar",
                 "not_judged": "Nicht beurteilt", "rules": "Angewandte Regeln", "none_ran": "keine",
                 "optimised": "optimierte Kopie"}}
