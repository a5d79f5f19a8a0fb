"""Product path: validate a ZUGFeRD / Factur-X PDF.

    read the PDF (bounded) -> PDF/A-3 -> Factur-X XMP -> embedded invoice file -> its XML on the rules its guideline
    id names, as the same invoice sent as XML (`pipeline.check.judging`: a Factur-X profile's XSD + Schematron, the
    EN 16931 or XRechnung pack) -> report
    (-> with `content_checks`: the checks the official rules miss on the embedded invoice, as for XML)

On the French rules (`french`: the fr-ctc pack) the embedded invoice is judged as the same invoice sent as XML to
the French endpoint: the French chain (`pipeline.check.fr_ctc`), so that XML and PDF get the same rules and findings.
"""
from __future__ import annotations

from pipeline.check import categories, claims, fr_ctc, packs, xmlinput
from pipeline.check.applied import Checked
from pipeline.check.profiles import ZUGFERD1_VERSION
from pipeline.check.report import Report
from pipeline.check.verdict import CLAIM_NOT_COVERED, RULES_NOT_INSTALLED
from pipeline.flows.validate_xml import content_issues
from pipeline.invoice.specs import RULES_VERSION
from pipeline.pdf import checks


def _embedded(xml: bytes | None) -> xmlinput.ParsedXml | None:
    """The embedded invoice read safely; None when there is none or it cannot be read (its rules have said why)."""
    try:
        return xmlinput.load(xml) if xml is not None else None
    except xmlinput.XmlInputError:
        return None


def _br_fr_alone(result, doc: xmlinput.ParsedXml | None, pack: packs.Pack) -> Checked:
    """BR-FR Flux 2 on an embedded CII that got no judgement (its rules could not run: a Saxon parse error); one
    that did was judged by the French chain already (`checks.inspect(french=)`), one without BT-24 too."""
    if doc is None or doc.syntax != "CII" or result.zugferd1 or result.judged is not None:
        return Checked()
    return fr_ctc.br_fr_checked(doc, pack)


def validate_pdf(data: bytes, request_id: str | None = None, content_checks: bool = False,
                 strict: bool = False, french: packs.Pack | None = None) -> Report:
    """A ZUGFeRD / Factur-X PDF -> report (service spec 2.10). Not a PDF -> ApiError 400 INVALID_PDF.
    `content_checks` adds the checks the official rules miss on the embedded invoice (WARNINGs; ERRORs with
    `strict`); the XRechnung ones when its BT-24 names XRechnung. The report's `rules`: the PDF's checks, then the
    invoice's rules; `notJudged`: checks that could not run and claims not judged (the verdict is then never
    valid)."""
    try:
        result = checks.inspect(data, french=french)
    except checks.NotAPdf as exc:
        raise checks.not_a_pdf(exc) from exc
    judged = result.judged or Checked()
    # the Factur-X release whose container checks ran, with the profile only where the rules its invoice claims
    # judged it ("Factur-X 1.09 XRECHNUNG" stood beside an XRechnung 1.2 invoice no XRechnung rules ran on)
    claimed = result.profile is not None and judged.rules and not any(
        n.code in (RULES_NOT_INSTALLED, CLAIM_NOT_COVERED) for n in judged.not_judged)
    version = ZUGFERD1_VERSION if result.zugferd1 else RULES_VERSION + (f" {result.profile.name}" if claimed else "")
    doc = _embedded(result.xml)
    extra = Checked()
    if french is not None:
        extra = _br_fr_alone(result, doc, french)
        if any(r.pack == french.spec for r in [*judged.rules, *extra.rules]):
            version = french.version  # the FNFE release that judged it: what a request may send back as `version`
    issues = list(result.issues) + extra.issues
    if content_checks and doc is not None:
        issues += content_issues(doc, strict=strict)
    # the XMP's own claim of a Factur-X / ZUGFeRD version, by fx:Version or by ZUGFeRD 1.0's namespace (a ZUGFeRD
    # 1.0 invoice is not judged beyond its XSD anyway)
    xmp = None if result.zugferd1 else claims.of_xmp(result.fx, result.fx_namespace)
    german_law = categories.under_german_law(xmlinput.party_countries(doc)) if doc is not None else None
    return Report(version, "CII" if result.xml is not None else None, issues, request_id, german_law,
                  rules=[checks.container_rules(result), *judged.rules, *extra.rules],
                  not_judged=[*result.not_judged, *([xmp] if xmp else []), *judged.not_judged,
                              *extra.not_judged])
