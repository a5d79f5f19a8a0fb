"""Every XML document of ../shared/corpus through the engine, checked against its expected.json.

What is compared (per document; the test id is the file):
- what the source states (XRechnung testsuite: valid, with the KoSIT scenario named);
- `observed` results of the official stylesheets: for en16931, the rule ids that fired per flag under CEN
  1.3.16 (fatal -> ERROR, warning/information -> WARNING; an XSLT exception -> RULE-ENGINE-ERROR) and the XSD
  verdict; for xrechnung, the KoSIT-configuration simulation (scenario, rule ids per level after customLevel,
  XSD verdict, accept/reject);
- documents that are not invoices we know (not well-formed, ZUGFeRD 1.0, other roots) are rejected, not crashed on;
- every official-rule finding is located (xpath, line, column).
VEFA testSets and XML-Mutate files are unit tests of single rules: see test_corpus_validation_units.py.
"""
from __future__ import annotations

import json

import pytest

from conftest import CORPUS
from pipeline.check import engine, xmlinput
from pipeline.flows import validate_xml as validate

SOURCES = ["xrechnung-testsuite", "en16931-cen", "mustangproject", "horstoeko-zugferd",
           "kosit-validator-configuration-tests"]
NOT_RULES = (engine.XSD_PREFIX, "XML-")


def _entries():
    for source in SOURCES:
        for entry in json.loads((CORPUS / source / "expected.json").read_text("utf-8"))["files"]:
            exp = entry.get("expected") or {}
            if not entry["path"].endswith(".xml") or exp.get("format") in ("vefa-testSet", "xml-mutate"):
                continue
            yield pytest.param(source, entry, id=f"{source}/{entry['path']}")


ENTRIES = list(_entries())


def _rule_codes(report, severity):
    return {i.code for i in report.issues if i.severity == severity and not i.code.startswith(NOT_RULES)}


def _has_xsd_errors(report):
    return any(i.code.startswith(engine.XSD_PREFIX) for i in report.issues)


def _assert_located(report):
    """Every official-rule finding points at its node: the SVRL xpath resolved to a line and column."""
    for issue in report.issues:
        if not issue.code.startswith(NOT_RULES) and issue.code != engine.RULE_ENGINE_ERROR:
            loc = issue.location
            assert loc and loc.xpath and loc.line and loc.column, issue.to_dict()


def _check_cen_observed(data, syntax, observed):
    key = f"en16931-1.3.16-{syntax.lower()}"
    if key not in observed:
        return
    fired = observed[key]
    report = validate.validate_xml(data, "en16931")
    xsd = next(v for k, v in observed.items() if k.startswith("xsd ") and "facturx" not in k)
    assert _has_xsd_errors(report) == (not xsd["valid"]), [i.to_dict() for i in report.issues][:3]
    if "exception" in fired:
        stopped = [i for i in report.issues if i.code == engine.RULE_ENGINE_ERROR]
        assert stopped and not report.valid
        assert " ".join(fired["exception"].split())[:60] in stopped[0].message
        return
    assert _rule_codes(report, "ERROR") == set(fired.get("fatal", []) + fired.get("error", [])
                                               + fired.get("unflagged", []))
    assert _rule_codes(report, "WARNING") == set(fired.get("warning", []) + fired.get("information", []))
    _assert_located(report)


def _check_kosit_simulation(data, sim):
    out = validate.validate(data, "xrechnung")
    report = out.report
    assert out.scenario == sim["scenario"]
    if sim["scenario"] is None:
        assert [i.code for i in report.issues] == [engine.NO_SCENARIO] and not report.valid
        return
    xsd_step = next(s for s in sim["steps"] if s["step"] == "xsd")
    rule_steps = [s for s in sim["steps"] if s["step"] == "schematron"]
    assert _has_xsd_errors(report) == (not xsd_step["valid"])
    assert _rule_codes(report, "ERROR") == {r for s in rule_steps for r in s["error"]}
    assert _rule_codes(report, "WARNING") == {r for s in rule_steps for r in s["warning"] + s["information"]}
    assert report.valid == (sim["recommendation"] == "accept")
    _assert_located(report)


@pytest.mark.parametrize("source, entry", ENTRIES)
def test_document(source, entry):
    data = (CORPUS / source / entry["path"]).read_bytes()
    doc = entry.get("document") or {}
    expected = entry.get("expected") or {}

    if doc.get("well_formed") is False or doc.get("syntax") not in ("CII", "UBL"):
        # not an invoice we know: rejected under both specs with the parse / root finding
        for spec in ("xrechnung", "en16931"):
            report = validate.validate_xml(data, spec)
            assert not report.valid and report.syntax is None
            code = report.issues[0].code
            assert code == (xmlinput.XML_MALFORMED if doc.get("well_formed") is False else xmlinput.XML_UNKNOWN_ROOT)
        return

    if source == "xrechnung-testsuite":  # what the source states
        out = validate.validate(data, "xrechnung")
        assert out.report.valid is expected["valid"] is True, [i.to_dict() for i in out.report.issues
                                                                 if i.severity == "ERROR"]
        assert out.scenario == expected["kosit_scenario"]
        assert out.report.syntax == doc["syntax"] and out.report.version == "3.0.2"

    _check_cen_observed(data, doc["syntax"], doc.get("observed") or {})
    sim = doc.get("kosit_xrechnung_3.0.2_config_simulation") or (
        entry.get("observed") if "recommendation" in (entry.get("observed") or {}) else None)
    if sim is not None:
        _check_kosit_simulation(data, sim)
    else:  # no recorded outcome: the engine still gives a complete report
        report = validate.validate_xml(data, "xrechnung")
        assert report.syntax == doc["syntax"] and report.version == "3.0.2"


def test_corpus_is_covered():
    sources = {p.values[0] for p in ENTRIES}
    assert sources == set(SOURCES)
    assert len(ENTRIES) > 150


# Mustang's JUnit verdicts where they are about what this engine checks: documents that name plain EN 16931
# or XRechnung 3.0 (other Factur-X profiles, XRechnung 1.x/2.x and ZUGFeRD 1.0 follow Mustang's own semantics).
def _mustang_statements():
    for entry in json.loads((CORPUS / "mustangproject" / "expected.json").read_text("utf-8"))["files"]:
        said = (entry.get("expected") or {}).get("mustang_validator_expectation") or {}
        verdict = said.get("overall") or said.get("xml")
        gid = (entry.get("document") or {}).get("guideline_id") or ""
        if entry["path"].endswith(".xml") and verdict in ("valid", "invalid") and (
                gid == "urn:cen.eu:en16931:2017" or "urn:xeinkauf.de:kosit:xrechnung_3.0" in gid):
            spec = "xrechnung" if "xrechnung_3.0" in gid else "en16931"
            yield pytest.param(entry["path"], spec, verdict, said.get("rules", []), id=f"mustangproject/{entry['path']}")


MUSTANG = list(_mustang_statements())


@pytest.mark.parametrize("path, spec, verdict, rules_named", MUSTANG)
def test_mustang_verdict(path, spec, verdict, rules_named):
    report = validate.validate_xml((CORPUS / "mustangproject" / path).read_bytes(), spec)
    assert report.valid == (verdict == "valid"), [i.to_dict() for i in report.issues if i.severity == "ERROR"]
    assert set(rules_named) <= _rule_codes(report, "ERROR")


def test_mustang_statements_are_covered():
    assert len(MUSTANG) >= 5
