"""The validation report (service spec 2.10), shared by every validator (XML rule packs, PDF/A-3, Factur-X).

Severity mapping from Schematron flags: fatal/error -> ERROR; warning/information -> WARNING.
Warnings never make a document invalid. The verdict (`pipeline.check.verdict`): invalid with an error, else
indeterminate when something was not judged (`not_judged`), else valid; `rules` says what judged the document
(`pipeline.check.applied`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from pipeline.check import verdict as verdicts
from pipeline.check.categories import category_of, meanings, worst_category
from pipeline.invoice import cdar_terms
from pipeline.invoice.terms import field_for_rule


ERROR = "ERROR"
WARNING = "WARNING"

_FLAG_SEVERITY = {"fatal": ERROR, "error": ERROR, "warning": WARNING, "information": WARNING, "info": WARNING}


# Lone surrogates: what a damaged PDF's undecodable names and strings can turn into; neither JSON nor the report
# page's UTF-8 can carry them, so a finding holds U+FFFD in their place from the start.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str | None) -> str | None:
    return _SURROGATE.sub("\ufffd", value) if value else value


# The ids of business terms as the official rule texts write them: EN 16931 terms and groups (BT-24, BT-29-1, BG-4),
# Factur-X's EXTENDED ones (BT-X-12, BG-X-42), the XRechnung extension's (BT-DEX-001, BG-DEX-09), France's
# extension (EXT-FR-FE-12, EXT-FR-FE-BG-1) and the terms of its lifecycle status messages (MDT-105, MDT-124-2, MDG-37).
_TERM_ID = re.compile(r"\b(?:B[TG]-(?:X-|DEX-)?\d+(?:-\d+)?|EXT-FR-FE-(?:BG-)?\d+|MD[TG]-\d+(?:-\d+)?)\b")

# A rule text's straight-quoted parts: where the rules quote the document's values ("<value-of select='.'/>", as
# France's BR-FR-CDV rules do), never a term the rule names (no published text of the installed packs, Factur-X's
# or FNFE's names an id between straight double quotes).
_QUOTED = re.compile(r'"[^"]*"')

# The codes of our own findings (reading, XSD, content, PDF and container checks, running the rules): their texts
# quote the document's values, so their terms come from what the finding knows, not from the text.
_OURS = ("CHECK-", "XML-", "XSD-", "PDF", "FX_", "XMP_", "XRECHNUNG-NO-SCENARIO", "XRECHNUNG_LEGACY_VERSION",
         "RULE-ENGINE-ERROR", "SYNTAX-NOT-COVERED")
# Those of our own findings that are about a term: the specification identifier (BT-24), which decides the rules,
# the scenario or the profile.
_OWN_TERMS = {"XRECHNUNG-NO-SCENARIO": ("BT-24",), "XRECHNUNG_LEGACY_VERSION": ("BT-24",),
              "FX_UNKNOWN_PROFILE": ("BT-24",), "XMP_FX_LEVEL_MISMATCH": ("BT-24",)}
# Content checks (pipeline.check.content): the term a check compares its value with, beside the term it judges
# (the finding's `business_term`): a due date (BT-9) with the issue date (BT-2), a mime code (BT-125-1) with the
# attached document (BT-125).
_CHECK_ALSO = {"CHECK-DUE-DATE": ("BT-2",), "CHECK-ATTACHMENT-MIME": ("BT-125",)}


def terms_named(text: str | None) -> list[str]:
    """The business-term ids an official rule's text names, in order, each once (not those of values it quotes)."""
    return list(dict.fromkeys(_TERM_ID.findall(_QUOTED.sub(" ", text or ""))))


def severity_of_flag(flag: str | None) -> str:
    """Schematron flag -> report severity. A missing flag counts as an error (ISO Schematron default)."""
    return _FLAG_SEVERITY.get((flag or "error").strip().lower(), ERROR)


@dataclass
class Location:
    """Where a finding is: in an XML document its `xpath` (and line, column); in a PDF the object it concerns
    (`pdfObject`, e.g. `obj 12 0` or a PDF/A validator's path), never in `xpath`."""
    xpath: str | None = None
    line: int | None = None
    column: int | None = None
    pdfObject: str | None = None

    def __post_init__(self):
        self.xpath, self.pdfObject = _text(self.xpath), _text(self.pdfObject)

    def to_dict(self) -> dict:
        if self.pdfObject is not None and self.xpath is None and self.line is None:
            return {"pdfObject": self.pdfObject}  # a PDF finding: no xpath, line or column to state
        d = {"xpath": self.xpath, "line": self.line, "column": self.column}
        if self.pdfObject is not None:
            d["pdfObject"] = self.pdfObject
        return d


@dataclass
class Issue:
    severity: str
    code: str
    message: str
    location: Location | None = None
    # the German this service wrote for its own findings (content, input and PDF checks), for pages in German that
    # draw a report from the JSON (a job's documents); the official rules' texts are as published: None
    message_de: str | None = field(default=None, kw_only=True)

    def __post_init__(self):
        self.code, self.message = _text(self.code), _text(self.message)

    @property
    def business_terms(self) -> list[str]:
        """The ids of the business terms (BT, BG, BT-X, BT-DEX, EXT-FR-FE, MDT, MDG) the finding is about, in order,
        each once: for a content check the term it judges (`business_term` of `pipeline.check.content.Finding`) and
        the one it compares it with; for an official rule the ids its text names (the rules write "... (BT-24)"),
        after the MDT / MDG term a French status message's rule id names; for our other findings `_OWN_TERMS`; for
        a finding that names none (a code-list rule, an XSD finding) the term the business-term table binds at its
        place, as the report for people labels it (`pipeline.invoice.terms.field_for_rule`)."""
        if self.code.startswith("CHECK-"):
            judged = getattr(self, "business_term", None)
            return list(dict.fromkeys(((judged,) if judged else ()) + _CHECK_ALSO.get(self.code, ())))
        ours = self.code.startswith(_OURS)
        if ours:
            found = list(_OWN_TERMS.get(self.code, ()))
        else:
            # a French status message's rule names its MDT / MDG term in its id (BR-FR-CDV-14_MDT-207), as the
            # report for people labels it (`cdar_terms.rule_label`)
            named = cdar_terms.term_of_rule(self.code)
            found = list(dict.fromkeys(([named] if named else []) + terms_named(self.message)))
        if found:
            return found
        bt = _term_at(self.code, self.location.xpath if self.location else None, "" if ours else self.message)
        return [bt] if bt else []

    @property
    def category(self) -> str:
        """format | business-rule | content | undetermined: the class of the BMF letter of 15.10.2025
        (`pipeline.check.categories`)."""
        return category_of(self.code)

    def to_dict(self) -> dict:
        d = {"severity": self.severity, "code": self.code, "category": self.category, "message": self.message}
        if self.message_de:
            d["messageDe"] = _text(self.message_de)  # (may be set after __post_init__: a PDF's undecodable name)
        if self.location is not None:
            d["location"] = self.location.to_dict()
        terms = self.business_terms
        if terms:
            d["businessTerms"] = terms  # (an extension of the service specification's Issue)
        return d


_POSITION = re.compile(r"\[\d+\]")


def _term_at(code: str, xpath: str | None, message: str) -> str | None:
    """The term a finding at `xpath` is about by the business-term tables (the rule's terms, else the place's)."""
    # the place's element names decide, not its positions: a rule firing on each of 1,000 lines is looked up once
    return _term_at_place(code, _POSITION.sub("", xpath) if xpath else None, message)


@lru_cache(maxsize=4096)
def _term_at_place(code: str, xpath: str | None, message: str) -> str | None:
    return field_for_rule(code, xpath, message=message)[1]


@dataclass
class Report:
    version: str | None
    syntax: str | None
    issues: list[Issue] = field(default_factory=list)
    request_id: str | None = None
    german_law: bool | None = None  # seller or buyer in Germany (categories.under_german_law); None: not known
    rules: list = field(default_factory=list)       # pipeline.check.applied.Rules, in the order they ran
    not_judged: list = field(default_factory=list)  # pipeline.check.verdict.NotJudged
    # The summary's sentences by worst class ({class | None: {"en", "de"}}) for a document that is no invoice, so
    # that the BMF letter's consequences for an e-invoice are not stated of it (a status message: `check.cdar`)
    sentences: dict | None = None

    @property
    def errors(self) -> int:
        return sum(1 for i in self.issues if i.severity == ERROR)

    @property
    def warnings(self) -> int:
        return sum(1 for i in self.issues if i.severity == WARNING)

    @property
    def verdict(self) -> str:
        """valid | invalid | indeterminate (`pipeline.check.verdict`)."""
        return verdicts.verdict(self.errors, self.not_judged)

    @property
    def valid(self) -> bool:
        return self.verdict == verdicts.VALID

    @property
    def worst_category(self) -> str | None:
        """The BMF class of the report: `indeterminate` when the document was not judged, else the worst class
        among its errors (`pipeline.check.categories`)."""
        if self.verdict == verdicts.INDETERMINATE:
            return verdicts.CATEGORY
        return worst_category(self.issues)

    def judged_by(self, spec: str) -> str:
        """For people: the `spec` rules of `version` that judged the document (`en16931 1.3.16`), else the rules that
        ran instead (`rules`), else `no rules` (it claims rules this service does not have)."""
        if self.version is not None:
            return f"{spec} {self.version}"
        return "; ".join(r.label for r in self.rules) or "no rules"

    def meanings(self) -> dict[str, str]:
        """What the report's class means for the receiver, in English and German (`german_law` False: the class
        only, `pipeline.check.categories`)."""
        if self.verdict == verdicts.INDETERMINATE:
            return verdicts.meanings(self.german_law)
        worst = worst_category(self.issues)
        if self.sentences is not None and worst in self.sentences:
            return dict(self.sentences[worst])
        return meanings(self.issues, self.german_law)

    def meaning(self, language: str = "en") -> str:
        found = self.meanings()
        return found.get(language, found["en"])

    def meanings_beneath(self, language: str) -> list[tuple[str, str]]:
        """(language, sentence) a report for people in `language` shows beneath its own: an English one the German
        sentence, in the BMF letter's own terms; a German one nothing, since no English stands in a German page."""
        if language == "de":
            return []
        return [(other, text) for other, text in self.meanings().items() if other != language]

    def to_dict(self) -> dict:
        """The report as JSON; `syntax` (CII or UBL) is absent when no invoice syntax was found (an unreadable
        document, a PDF without an embedded invoice), never null. `verdict`, `notJudged` and `rules` are
        extensions of the service specification."""
        d = {"valid": self.valid, "verdict": self.verdict, "version": self.version}
        if self.syntax is not None:
            d["syntax"] = self.syntax
        d.update(summary={"errors": self.errors, "warnings": self.warnings,
                          "worstCategory": self.worst_category, "meaning": self.meanings()},
                 issues=[i.to_dict() for i in self.issues],
                 notJudged=[n.to_dict() for n in self.not_judged],
                 rules=[r.to_dict() for r in self.rules], requestId=self.request_id)
        return d
