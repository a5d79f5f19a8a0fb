"""Every XML document of ../shared/corpus through the engine, checked against its expected.json.

What is compared (per document; the test id is the file):
- what the source states (XRechnung testsuite: valid, with the KoSIT scenario named);
- `observed` results of the official stylesheets: for en16931, the rule ids that fired per flag under CEN
  1.3.16 (fatal -> ERROR, warning/information -> WARNING; an XSLT exception -> RULE-ENGINE-ERROR) and the XSD
  verdict; for the Factur-X profiles, the same of the profile's XSD and Schematron; for xrechnung, the
  KoSIT-configuration simulation (scenario, rule ids per level after customLevel, XSD verdict, accept/reject);
- the verdict each endpoint gives (issue 37): the one those official results give where the endpoint judges what
  the document claims (BT-24); where it does not, or this service lacks the claimed rules, never `valid`: the
  EN 16931 rules' errors make it `invalid` where it builds on EN 16931:2017, else `indeterminate`, naming the
  claim; a document of another kind (not well-formed, other roots) is rejected, not crashed on;
- every official-rule finding is located (xpath, line, column).
VEFA testSets and XML-Mutate files are unit tests of single rules: see test_corpus_validation_units.py.
"""
from __future__ import annotations

import json

import pytest

from conftest import CORPUS
from pipeline.check import engine, packs, xmlinput
from pipeline.flows import validate_xml as validate

SOURCES = ["xrechnung-testsuite", "en16931-cen", "mustangproject", "horstoeko-zugferd",
           "kosit-validator-configuration-tests"]
NOT_RULES = (engine.XSD_PREFIX, "XML-")
EN16931_2017 = "urn:cen.eu:en16931:2017"
# Factur-X / ZUGFeRD 2 profile ids (a restatement of the FNFE / FeRD chain for this test): id -> observed key
FACTURX = {"urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:extended": "extended",
           "urn:cen.eu:en16931:2017#conformant#urn:zugferd.de:2p0:extended": "extended",
           "urn:cen.eu:en16931:2017#compliant#urn:factur-x.eu:1p0:basic": "basic",
           "urn:factur-x.eu:1p0:minimum": "minimum", "urn:factur-x.eu:1p0:basicwl": "basicwl"}


def _entries():
    for source in SOURCES:
        for entry in json.loads((CORPUS / source / "expected.json").read_text("utf-8"))["files"]:
            exp = entry.get("expected") or {}
            if not entry["path"].endswith(".xml") or exp.get("format") in ("vefa-testSet", "xml-mutate"):
                continue
            yield pytest.param(source, entry, id=f"{source}/{entry['path']}")


ENTRIES = list(_entries())


def _rule_codes(issues, severity):
    return {i.code for i in issues if i.severity == severity and not i.code.startswith(NOT_RULES)}


def _has_xsd_errors(issues):
    return any(i.code.startswith(engine.XSD_PREFIX) for i in issues)


def _assert_located(issues):
    """Every official-rule finding points at its node: the SVRL xpath resolved to a line and column."""
    for issue in issues:
        if not issue.code.startswith(NOT_RULES) and issue.code != engine.RULE_ENGINE_ERROR:
            loc = issue.location
            assert loc and loc.xpath and loc.line and loc.column, issue.to_dict()


def _fired_errors(fired: dict) -> set:
    """The error rule ids observed; a stylesheet that stopped with a dynamic error is RULE-ENGINE-ERROR."""
    ids = fired.get("fatal", []) + fired.get("error", []) + fired.get("unflagged", [])
    return {i or "SCHEMATRON" for i in ids} | ({engine.RULE_ENGINE_ERROR} if "exception" in fired else set())


def _cen_verdict(observed: dict, syntax: str) -> str | None:
    """valid / invalid as the CEN 1.3.16 files alone judged it (None: not observed)."""
    fired = observed.get(f"en16931-1.3.16-{syntax.lower()}")
    if fired is None:
        return None
    xsd = next(v for k, v in observed.items() if k.startswith("xsd ") and "facturx" not in k)
    return "invalid" if "exception" in fired or _fired_errors(fired) or not xsd["valid"] else "valid"


def _check_cen_observed(doc, data, syntax, observed):
    """The engine on the en16931 pack reproduces the CEN files' findings."""
    key = f"en16931-1.3.16-{syntax.lower()}"
    if key not in observed:
        return
    fired = observed[key]
    parsed = xmlinput.load(data)
    issues = engine.pack_checked(parsed, packs.get_pack("en16931", "1.3.16"), engine.saxon_document(parsed)).issues
    xsd = next(v for k, v in observed.items() if k.startswith("xsd ") and "facturx" not in k)
    assert _has_xsd_errors(issues) == (not xsd["valid"]), [i.to_dict() for i in issues][:3]
    if "exception" in fired:
        stopped = [i for i in issues if i.code == engine.RULE_ENGINE_ERROR]
        assert stopped
        assert " ".join(fired["exception"].split())[:60] in stopped[0].message
        return
    assert _rule_codes(issues, "ERROR") == _fired_errors(fired)
    assert _rule_codes(issues, "WARNING") == set(fired.get("warning", []) + fired.get("information", []))
    _assert_located(issues)


def _not_judged_as_claimed(report, gid):
    """Never valid; the reason names the claim; the EN 16931:2017 rules ran where the claim builds on them."""
    assert report.verdict != "valid" and not report.valid
    assert [n.claim for n in report.not_judged] == [gid], report.not_judged
    ran = [r.pack for r in report.rules]
    assert ran == (["en16931"] if gid.startswith(EN16931_2017) else []), ran


def _check_en16931_endpoint(data, doc, observed):
    """The verdict at /en16931/validate: the CEN files' where it claims EN 16931, the profile files' where it
    names a Factur-X profile, else invalid on the CEN rules' errors, indeterminate without."""
    gid, syntax = doc.get("guideline_id") or "", doc["syntax"]
    report = validate.validate_xml(data, "en16931")
    cen = _cen_verdict(observed, syntax)
    if gid in (EN16931_2017, ""):
        assert report.verdict == cen and not report.not_judged
    elif gid in FACTURX and syntax == "CII":
        name = FACTURX[gid]
        fired = observed[f"facturx-1.09-{name}"]
        profile = "invalid" if _fired_errors(fired) or not observed[f"xsd facturx-1.09-{name}"]["valid"] else "valid"
        expected = "invalid" if "invalid" in (profile, cen if name == "basic" else "valid") else "valid"
        assert report.verdict == expected and [r.profile for r in report.rules][0] == name.upper().replace("WL", " WL")
        if name != "basic":  # the profile's rules alone: their ids
            assert _rule_codes(report.issues, "ERROR") == _fired_errors(fired)
    else:
        _not_judged_as_claimed(report, gid)
        assert report.verdict == ("invalid" if gid.startswith(EN16931_2017) and cen == "invalid" else "indeterminate")


def _check_kosit_simulation(data, sim, doc, observed):
    out = validate.validate(data, "xrechnung")
    report = out.report
    assert out.scenario == sim["scenario"]
    if sim["scenario"] is None:
        gid = doc.get("guideline_id")
        if not gid:  # claims nothing: KoSIT's rejection
            assert [i.code for i in report.issues] == [engine.NO_SCENARIO] and report.verdict == "invalid"
            return
        # claims what XRechnung's configuration does not cover: not judged as that, held to EN 16931:2017
        _not_judged_as_claimed(report, gid)
        cen = _cen_verdict(observed, doc["syntax"])
        assert report.verdict == ("invalid" if gid.startswith(EN16931_2017) and cen == "invalid" else "indeterminate")
        return
    xsd_step = next(s for s in sim["steps"] if s["step"] == "xsd")
    rule_steps = [s for s in sim["steps"] if s["step"] == "schematron"]
    assert _has_xsd_errors(report.issues) == (not xsd_step["valid"])
    assert _rule_codes(report.issues, "ERROR") == {r for s in rule_steps for r in s["error"]}
    assert _rule_codes(report.issues, "WARNING") == {r for s in rule_steps for r in s["warning"] + s["information"]}
    assert report.valid == (sim["recommendation"] == "accept")
    assert [r.scenario for r in report.rules] == [sim["scenario"]]
    _assert_located(report.issues)


@pytest.mark.parametrize("source, entry", ENTRIES)
def test_document(source, entry):
    data = (CORPUS / source / entry["path"]).read_bytes()
    doc = entry.get("document") or {}
    expected = entry.get("expected") or {}

    if doc.get("syntax") == "ZUGFeRD-1.0":
        # rules this service does not have: its XSD, never valid (invalid on XSD errors, else indeterminate)
        for spec in ("xrechnung", "en16931"):
            report = validate.validate_xml(data, spec)
            assert [r.pack for r in report.rules] == ["zugferd-1.0"] and not report.valid
            assert [n.code for n in report.not_judged] == ["RULES-NOT-INSTALLED"]
            assert report.verdict == ("invalid" if _has_xsd_errors(report.issues) else "indeterminate")
        return
    if doc.get("well_formed") is False or doc.get("syntax") not in ("CII", "UBL"):
        # not an invoice we know: rejected under both specs with the parse / root finding
        for spec in ("xrechnung", "en16931"):
            report = validate.validate_xml(data, spec)
            assert not report.valid and report.syntax is None and report.verdict == "invalid"
            code = report.issues[0].code
            assert code == (xmlinput.XML_MALFORMED if doc.get("well_formed") is False else xmlinput.XML_UNKNOWN_ROOT)
        return

    if source == "xrechnung-testsuite":  # what the source states
        out = validate.validate(data, "xrechnung")
        assert out.report.valid is expected["valid"] is True, [i.to_dict() for i in out.report.issues
                                                                 if i.severity == "ERROR"]
        assert out.scenario == expected["kosit_scenario"]
        assert out.report.syntax == doc["syntax"] and out.report.version == "3.0.2"

    observed = doc.get("observed") or {}
    _check_cen_observed(doc, data, doc["syntax"], observed)
    if f"en16931-1.3.16-{doc['syntax'].lower()}" in observed:
        _check_en16931_endpoint(data, doc, observed)
    sim = doc.get("kosit_xrechnung_3.0.2_config_simulation") or (
        entry.get("observed") if "recommendation" in (entry.get("observed") or {}) else None)
    if sim is not None:
        _check_kosit_simulation(data, sim, doc, observed)
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
    assert set(rules_named) <= _rule_codes(report.issues, "ERROR")


def test_mustang_statements_are_covered():
    assert len(MUSTANG) >= 5
