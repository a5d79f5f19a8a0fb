"""The validation report (service spec 2.10), shared by every validator (XML rule packs, PDF/A-3, Factur-X).

Severity mapping from Schematron flags: fatal/error -> ERROR; warning/information -> WARNING.
Warnings never make a document invalid. The verdict (`pipeline.check.verdict`): invalid with an error, else
indeterminate when something was not judged (`not_judged`), else valid; `rules` says what judged the document
(`pipeline.check.applied`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.check import verdict as verdicts
from pipeline.check.categories import category_of, meanings, worst_category


ERROR = "ERROR"
WARNING = "WARNING"

_FLAG_SEVERITY = {"fatal": ERROR, "error": ERROR, "warning": WARNING, "information": WARNING, "info": WARNING}


# Lone surrogates: what a damaged PDF's undecodable names and strings can turn into; neither JSON nor the report
# page's UTF-8 can carry them, so a finding holds U+FFFD in their place from the start.
_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(value: str | None) -> str | None:
    return _SURROGATE.sub("\ufffd", value) if value else value


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
        return d


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
