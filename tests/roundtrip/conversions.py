"""Valid invoices converted to the other syntax (issue 35): what each conversion ends as, judged by the official rules
run on their own (`roundtrip.official`) and by the independent reader of business terms. Shared by
tests/test_conversions.py (the target) and bench/conversions.py (counts per folder).

- valid: our validation finds the source valid EN 16931 (the en16931 pack; a CII naming a Factur-X profile: that
  profile's rules) or valid on the CIUS its BT-24 claims (tests/test_corpus_validation.py and test_rules_optimised.py
  hold our engine to the official rules on these documents).
- attempts: to the other syntax with nothing else (`{"to": X}`); a UBL target also under `peppol`.
- outcomes:
    same     converted; the official rules of the target alone find the document valid, and the reader reads the
             source's business terms from it (what `changed` says was written otherwise aside)
    outside  refused (CONVERSION_LOSS, SOURCE_NOT_CONVERTIBLE): every entry names a source node that official rules
             run alone on the source flag as no part of EN 16931 (a failed assert located at the node or above it
             whose test or message names the node or an element between): the CEN syntax binding rules (CII-SR-*,
             CII-DT-*, UBL-CR-*, UBL-SR-*, UBL-DT-*) or, in a CII, the Factur-X EN16931 profile's ("not used in the given context");
             or a further occurrence of a group that the target syntax's XSD allows once (BG-3 in CII)
    cius     a peppol or xrechnung target refused with rule ids that the official rules also fail on the source:
             the CEN rules on the source, or the CIUS's on the source itself where it claims the CIUS, else on its
             content written in the target syntax as valid EN 16931 (convert under en16931) and labelled for the CIUS
    asymmetric  refused (VALIDATION_FAILED) with rule ids that the official rules of the target fail on the
             document the conversion wrote, which reads back with the source's business terms, while the rules of
             the source's syntax pass the source: the CEN rules of the two syntaxes disagree on that content (e.g.
             BR-E-01 counts a VAT breakdown "E" without an "E" line in UBL, not in CII). Not ours to fix; counted
             apart, and as a miss for the target
    other    anything else: a miss
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from lxml import etree

from pipeline.check.report import ERROR
from pipeline.errors import ApiError
from pipeline.flows.convert import convert, fillers_for, request_for, target_model
from pipeline.flows.parse import parse, source_spec, validate_source
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice import peppol as peppol_ids
from pipeline.invoice.specs import XRECHNUNG_ID
from roundtrip import official
from pipeline.write.transform import transform_to_tree
from roundtrip.reader import diff_lines
from roundtrip.realworld import OTHER, _terms, conversion_diff

SAME, OUTSIDE, CIUS, ASYMMETRIC, OTHER_OUTCOME = "same", "outside", "cius", "asymmetric", "other"
SYNTAX_RULES = ("CII-SR-", "CII-DT-", "UBL-CR-", "UBL-SR-", "UBL-DT-")
MISSES = (ASYMMETRIC, OTHER_OUTCOME)  # what the issue's target counts
_NODE = re.compile(r"(/(?:rsm:CrossIndustryInvoice|\w+:Invoice|\w+:CreditNote|Invoice|CreditNote)[^\s,()]*)")


@dataclass
class Attempt:
    name: str                  # the file, below ../shared
    to: str                    # CII | UBL
    spec: str | None           # None: as the source says; peppol
    outcome: str = OTHER_OUTCOME
    detail: str = ""           # why (the refusal's code and rules, the terms that differ, ...)
    changed: list[dict] = field(default_factory=list)


def is_valid(parsed) -> bool:
    """Valid on the CIUS it claims, or valid EN 16931: the EN 16931 rules (a Factur-X profile's where its BT-24 names
    one) ran and found no error. A report that says indeterminate only because the document claims more than the
    en16931 endpoint covers (XRechnung, Peppol, an older XRechnung release) still ran the CEN rules."""
    source = parsed.source
    claimed = validate_source(source, content_checks=False)
    if claimed.valid:
        return True
    if source.profile is not None or source_spec(source) == "en16931":
        return False
    judged = validate_xml(source.xml, "en16931", tree=source.rules_tree(), doc=source.doc)
    return bool(judged.rules) and not any(i.severity == ERROR for i in judged.issues)


def attempts_for(name: str, data: bytes) -> list[Attempt]:
    """Every attempt of one valid XML source ([] when it is no valid invoice)."""
    try:
        parsed = parse(data)
    except ApiError:
        return []
    if parsed.source.pdf is not None or not is_valid(parsed):
        return []
    to = OTHER[parsed.source.syntax]
    specs = (None, "peppol") if to == "UBL" else (None,)
    return [attempt(name, data, parsed, to, spec) for spec in specs]


def attempt(name: str, data: bytes, parsed, to: str, spec: str | None) -> Attempt:
    out = Attempt(name, to, spec)
    target_spec = spec or ("en16931" if source_spec(parsed.source) == "peppol" else source_spec(parsed.source))
    try:
        conversion = convert(data, to, spec)
    except ApiError as err:
        out.detail = f"{err.error_code}: " + ", ".join(dict.fromkeys(e.code for e in err.errors))
        if err.error_code in ("CONVERSION_LOSS", "SOURCE_NOT_CONVERTIBLE"):
            uncovered = _not_outside(parsed.source.xml, err, to)
            out.outcome = OUTSIDE if not uncovered else OTHER_OUTCOME
            out.detail += "" if not uncovered else f"; not flagged as outside EN 16931: {uncovered[:3]}"
        elif err.error_code in ("SOURCE_INVALID", "VALIDATION_FAILED"):
            missing = (_not_failed_on_source(data, parsed, to, target_spec, err)
                       if target_spec in ("peppol", "xrechnung") else {e.code for e in err.errors})
            if not missing:
                out.outcome = CIUS
            elif err.error_code == "VALIDATION_FAILED" and not _not_failed_in_target_syntax(parsed, to, target_spec,
                                                                                          missing):
                out.outcome = ASYMMETRIC
            else:
                out.detail += f"; the official rules pass the source on {sorted(missing)}"
        return out
    out.changed = conversion.changed
    judged = official.judge(conversion.document, target_spec)
    if judged is None or not judged.valid:
        out.detail = f"the official {target_spec} rules refuse the output: " + (
            "no scenario" if judged is None else f"xsd {judged.xsd_valid}, {sorted(judged.errors)}")
        return out
    diff = conversion_diff(_terms(parsed.source.xml), conversion)
    out.outcome, out.detail = (OTHER_OUTCOME, "; ".join(diff[:5])) if diff else (SAME, "")
    return out


def _not_outside(source_xml: bytes, err: ApiError, to: str) -> list[str]:
    """The refusal's entries whose source node is not shown to be outside what EN 16931's target syntax carries:
    flagged by the CEN syntax binding rules, or by a CEN business rule the source fails (content its own rules
    allow and EN 16931 forbids: Factur-X EXTENDED's exemption reason on a standard rate, BR-S-10), or in a CII by
    the Factur-X EN16931 profile's rules (EN 16931's CII and nothing more: "not used in the given context"), or a
    further occurrence of a group the target syntax's XSD allows once."""
    flagged = [(_context(f), f.test) for f in official.cen(source_xml).findings
               if f.rule.startswith(SYNTAX_RULES) or (f.rule.startswith("BR-") and f.error)]
    if b"CrossIndustryInvoice" in source_xml[:4096]:
        flagged += [(official.svrl_steps(f.location), f.text) for f in official.facturx_en16931(source_xml).findings
                    if "not used in the given context" in f.text or "should not be present" in f.text]
    in_hierarchy = _hierarchy_lines(source_xml)
    uncovered = []
    for entry in err.errors:
        node = _NODE.search(entry.message)
        steps = official.readable_steps(node.group(1)) if node else ()
        if steps and (any(_covers(context, says, steps) for context, says in flagged)
                      or _once_in_target(entry, steps, to) or steps[:3] in in_hierarchy):
            continue
        uncovered.append(entry.message[:160])
    return uncovered


def _context(finding) -> tuple:
    """The steps a finding stands on; a rule on an element that tests its siblings (BR-S-10 on the category code:
    `not(../ram:ExemptionReason)`) stands on their parent."""
    steps = official.svrl_steps(finding.location)
    return steps[:-1] if "../" in finding.test else steps


# A line's place in Factur-X EXTENDED's line hierarchy: the elements of ram:AssociatedDocumentLineDocument that say it
_HIERARCHY = ("ParentLineID", "LineStatusReasonCode")


def _hierarchy_lines(source_xml: bytes) -> set[tuple]:
    """The steps of the CII line items that have a place in a line hierarchy that EN 16931's CII has none for (the
    Factur-X EN16931 profile's XSD declares neither element): each value of such a line is outside EN 16931 (a
    sub-line, group or information line), none of the official rules flags them (CII-SR-036 / -038 test the line
    item, not its AssociatedDocumentLineDocument)."""
    root = etree.fromstring(source_xml, official.PARSER)
    if not root.tag.endswith("}CrossIndustryInvoice") or any(
            official.declared_in_schema(name, official.facturx_en16931_xsd()) for name in _HIERARCHY):
        return set()
    items = root.findall("{*}SupplyChainTradeTransaction/{*}IncludedSupplyChainTradeLineItem")
    return {(("CrossIndustryInvoice", 1), ("SupplyChainTradeTransaction", 1), ("IncludedSupplyChainTradeLineItem", n))
            for n, item in enumerate(items, 1)
            if any(item.find(f"{{*}}AssociatedDocumentLineDocument/{{*}}{name}") is not None for name in _HIERARCHY)}


# A further occurrence of a group whose first the model carries: the group's element in the target syntax (a loss
# entry names the group's terms, BT-25 / BT-26 of BG-3).
_GROUPS = {(term, "CII"): "InvoiceReferencedDocument" for term in ("BG-3", "BT-25", "BT-26")}


def _once_in_target(entry, steps: tuple, to: str) -> bool:
    element = _GROUPS.get((entry.businessTerm, to))
    if element is not None and any(n > 1 for _, n in steps):
        return official.single_in_schema(element, official.CEN / "cii" / "schema")
    # a further occurrence of an element that EN 16931's CII and nothing more (the Factur-X EN16931 profile's XSD)
    # allows once: a second allowance or charge on a line's gross price (BT-147 is one; CII-SR-119 tests the first)
    return steps[:1] == (("CrossIndustryInvoice", 1),) and any(
        n > 1 and official.single_in_schema(name, official.facturx_en16931_xsd()) for name, n in steps[1:])


def _covers(context: tuple, says: str, steps: tuple) -> bool:
    """A rule failing at `context` whose test (or message) names the node, the context's own element (a rule that
    flags the element it stands on) or an element between them."""
    if not context or steps[:len(context)] != context:
        return False
    names = {name.lstrip("@") for name, _ in steps[len(context) - 1:]}
    return any(re.search(rf"[:@]{re.escape(name)}\b", says) for name in names)


def _not_failed_on_source(data: bytes, parsed, to: str, spec: str, err: ApiError) -> set[str]:
    """The rule ids of a CIUS refusal that the official rules do not fail on the source's content: neither the CEN
    rules on the source nor the CIUS's rules on the source itself (where it claims the CIUS) or on its content
    written in the target syntax as valid EN 16931 and labelled for the CIUS."""
    named = {e.code for e in err.errors} - official.cen(parsed.source.xml).errors
    if not named:
        return named
    if source_spec(parsed.source) == spec:
        document = parsed.source.xml  # the source claims the CIUS: the rules judge it as it is
    else:
        try:
            document = labelled(convert(data, to, "en16931").document, spec)
        except ApiError:
            return named
    judged = official.judge(document, spec)
    return named if judged is None else named - judged.errors


def _not_failed_in_target_syntax(parsed, to: str, spec: str, named: set[str]) -> set[str]:
    """The rule ids of a refusal that the official rules of the target do not fail on the document the conversion
    wrote (before its validation) from the source's business terms, read back identical: what is left is ours."""
    request, endpoint = request_for(parsed, to, spec, None, None)
    model = target_model(parsed, request, endpoint)
    control = model.invoice.processControl
    written = transform_to_tree(parsed.written, to, endpoint, control.specificationIdentifier if control else None,
                                fillers_for(parsed, to)[0]).xml
    source, target = _terms(parsed.source.xml), _terms(written)
    for key in ("processControl.specificationIdentifier", "processControl.businessProcessType"):
        if key not in source or key == "processControl.specificationIdentifier":  # the target's, said in `changed`
            source.pop(key, None), target.pop(key, None)
    if diff_lines(source, target):
        return named
    judged = official.judge(written, endpoint)
    return named if judged is None else named - judged.errors


def labelled(xml: bytes, spec: str) -> bytes:
    """A document with the BT-24 of the CIUS `spec`, and in UBL for Peppol the BT-23 a conversion writes where the
    source has none (Peppol's billing process; a BT-23 the source states is content and stays)."""
    root = etree.fromstring(xml, official.PARSER)
    if root.tag.endswith("CrossIndustryInvoice"):
        root.find("{*}ExchangedDocumentContext/{*}GuidelineSpecifiedDocumentContextParameter/{*}ID").text = (
            XRECHNUNG_ID if spec == "xrechnung" else peppol_ids.BILLING_ID)
        return etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    customization = root.find("{*}CustomizationID")
    customization.text = XRECHNUNG_ID if spec == "xrechnung" else peppol_ids.BILLING_ID
    if spec == "peppol" and root.find("{*}ProfileID") is None:
        profile = etree.Element(customization.tag.replace("CustomizationID", "ProfileID"))
        profile.text = peppol_ids.BILLING_PROCESS
        customization.addnext(profile)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8")


def xml_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.xml") if p.is_file())


def folder_of(name: str) -> str:
    """The folder an outcome is counted under: the first three steps below ../shared."""
    return "/".join(name.split("/")[:-1][:3]) or "."

