"""Unit tests of single official rules from the corpus, run with the installed packs' stylesheets.

- VEFA testSets (CEN `test/*-unit-UBL`, `test/cii`): each `<test>` holds a small, deliberately incomplete
  document; only the rules it names are checked: `success` = must not fire, `error`/`fatal` = must fire as
  ERROR (flag fatal), `warning` = must fire as WARNING. Stylesheets: the en16931 1.3.16 pack.
- XML-Mutate files (xrechnung-schematron-tests, KoSIT `cen-unit-test`/`unexpected`/`instances`): each
  `<?xmute ...?>` processing instruction is a test that mutates the element after it (identity, remove, empty,
  code, whitespace); the rules named `prefix:RULE` must fire / must not fire in the named stylesheet
  (xrcii/xrubl = XRechnung 2.5.0, cencii/cenubl = CEN 1.3.15 as compiled by KoSIT; both from the xrechnung
  pack). Cases marked `known_deviation` document a known wrong CEN behaviour: they must still deviate.
"""
from __future__ import annotations

import copy
import json
import re

import pytest
from lxml import etree

from conftest import CORPUS
from pipeline import saxon
from pipeline.check import engine, packs

VEFA_NS = "http://difi.no/xsd/vefa/validator/1.0"


def _load(source):
    return json.loads((CORPUS / source / "expected.json").read_text("utf-8"))["files"]


def _fired(xml_bytes: bytes, stylesheet) -> dict[str, set[str]]:
    """Rule id -> severities it fired with, for one stylesheet on one document."""
    sdoc = saxon.parse(xml_bytes)
    out: dict[str, set[str]] = {}
    for issue in engine.schematron_issues(sdoc, stylesheet):
        assert issue.code != engine.RULE_ENGINE_ERROR, issue.message
        out.setdefault(issue.code, set()).add(issue.severity)
    return out


# ---------------------------------------------------------------- VEFA testSets

VEFA = [pytest.param(e, id=f"en16931-cen/{e['path']}")
        for e in _load("en16931-cen") if (e.get("expected") or {}).get("format") == "vefa-testSet"]


def _vefa_documents(path):
    tree = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))
    for test in tree.getroot().iterfind(f"{{{VEFA_NS}}}test"):
        doc = next(el for el in test if isinstance(el.tag, str) and el.tag != f"{{{VEFA_NS}}}assert")
        yield etree.tostring(copy.deepcopy(doc), encoding="utf-8")


@pytest.mark.parametrize("entry", VEFA)
def test_vefa_testset(entry):
    pack = packs.latest_active("en16931")
    syntax = "CII" if entry["expected"]["configuration"].endswith("cii") else "UBL-Invoice"
    stylesheet = pack.rules_for(syntax).stylesheets[0]
    documents = list(_vefa_documents(CORPUS / "en16931-cen" / entry["path"]))
    tests = entry["expected"]["tests"]
    assert len(documents) == len(tests)
    failures = []
    for data, t in zip(documents, tests):
        fired = _fired(data, stylesheet)
        for rule in t["success"]:
            if rule in fired:
                failures.append((t["index"], "should not fire", rule, fired[rule]))
        for rule in t["error"] + t["fatal"]:
            if "ERROR" not in fired.get(rule, ()):
                failures.append((t["index"], "should fire as ERROR", rule, fired.get(rule)))
        for rule in t["warning"]:
            if "WARNING" not in fired.get(rule, ()):
                failures.append((t["index"], "should fire as WARNING", rule, fired.get(rule)))
    assert not failures


# ---------------------------------------------------------------- XML-Mutate

_PI_ATTR = re.compile(r'([\w-]+)\s*=\s*"([^"]*)"')


def _pi_attrs(pi) -> dict[str, str]:
    return dict(_PI_ATTR.findall(pi.text or ""))


def _target(pi):
    """The element an xmute instruction applies to: its next sibling element."""
    node = pi.getnext()
    while node is not None and not isinstance(node.tag, str):
        node = node.getnext()
    return node


def mutate(tree, index: int, value: str | None = None) -> bytes:
    """Apply the `index`-th xmute instruction of `tree` (XML-Mutate semantics) and return the variant
    without any xmute instructions."""
    variant = copy.deepcopy(tree)
    pis = [pi for pi in variant.iter(etree.PI) if pi.target == "xmute"]
    pi = pis[index]
    attrs = _pi_attrs(pi)
    target = _target(pi)
    assert target is not None, f"xmute {attrs.get('id')} has no element to mutate"
    mutator, attribute = attrs["mutator"], attrs.get("attribute")
    if mutator == "identity":
        pass
    elif mutator == "remove":
        if attribute:
            target.attrib.pop(attribute, None)
        else:
            target.getparent().remove(target)
    elif mutator == "empty":
        if attribute:
            target.set(attribute, "")
        else:
            for child in list(target):
                target.remove(child)
            target.text = None
    elif mutator == "code":
        if attribute:
            target.set(attribute, value)
        else:
            for child in list(target):
                target.remove(child)
            target.text = value
    elif mutator == "whitespace":
        if attribute:
            target.set(attribute, " ")
        else:
            target.text = " " + (target.text or "") + " "
    else:
        raise AssertionError(f"unknown mutator {mutator}")
    for p in pis:
        parent = p.getparent()
        if parent is not None:
            # keep the text that followed the instruction
            if p.tail:
                prev = p.getprevious()
                if prev is not None:
                    prev.tail = (prev.tail or "") + p.tail
                else:
                    parent.text = (parent.text or "") + p.tail
            parent.remove(p)
    return etree.tostring(variant, encoding="utf-8", xml_declaration=True)


def _prefix_stylesheets():
    pack = packs.latest_active("xrechnung")
    return {
        "xrcii": pack.root / "cii/XRechnung-CII-validation.xsl",
        "xrubl": pack.root / "ubl/XRechnung-UBL-validation.xsl",
        "cencii": pack.root / "resources/cii/16b/xsl/EN16931-CII-validation.xsl",
        "cenubl": pack.root / "resources/ubl/2.1/xsl/EN16931-UBL-validation.xsl",
    }


MUTATE = [pytest.param(source, e, id=f"{source}/{e['path']}")
          for source in ("xrechnung-schematron-tests", "kosit-validator-configuration-tests")
          for e in _load(source) if (e.get("expected") or {}).get("format") == "xml-mutate"]


@pytest.mark.parametrize("source, entry", MUTATE)
def test_xml_mutate(source, entry):
    stylesheets = _prefix_stylesheets()
    tree = etree.parse(str(CORPUS / source / entry["path"]),
                       etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=False))
    pis = [pi for pi in tree.iter(etree.PI) if pi.target == "xmute"]
    cases = entry["expected"]["cases"]
    assert [_pi_attrs(pi).get("id") for pi in pis] == [c["id"] for c in cases]
    failures = []
    for index, case in enumerate(cases):
        for value in case["values"] or [None]:
            variant = mutate(tree, index, value)
            checks = {}
            for rule in case["expect_fired"] + case["expect_not_fired"]:
                prefix = rule["schematron"]
                if prefix not in checks:
                    checks[prefix] = _fired(variant, stylesheets[prefix])
            met = all(r["rule"] in checks[r["schematron"]] for r in case["expect_fired"]) and \
                not any(r["rule"] in checks[r["schematron"]] for r in case["expect_not_fired"])
            if met == bool(case.get("known_deviation")):
                failures.append((case["id"], value, "known deviation no longer deviates" if met else "expectation not met",
                                 {p: sorted(f) for p, f in checks.items()}))
    assert not failures


def test_units_are_covered():
    assert len(VEFA) == 140 and len(MUTATE) > 175
