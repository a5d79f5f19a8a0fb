"""Pydantic models of the JSON the service sends (and the validation request part), for the OpenAPI document.

The objects themselves are built by `pipeline.check.report.Report.to_dict` and `pipeline.errors.ApiError.to_dict`;
tests/test_openapi.py validates real outputs of both against these models (extra fields forbidden), so the
description cannot drift from the code.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import STATUS_TEXT


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


GERMAN = ("Extension. The message in German, where this service wrote the finding (its content, input and PDF "
          "checks) or added to it (a convert's refusal: an official rule's text as published, with where it is in "
          "the source in German); absent for the findings of the official rules alone, whose texts are published "
          "in one language.")


class ErrorDetail(_Strict):
    code: str = Field(description="What is wrong with this entry's field (e.g. `REQUIRED`, a rule id such as "
                                  "`BR-CO-16`), or the code of ours that refines the response's `errorCode` "
                                  "(pipeline.errors.REFINES, listed in each response's `x-refinements`).")
    field: str | None = Field(None, description="JSON path of the offending input, e.g. `invoice.seller.name`.")
    businessTerm: str | None = Field(None, description="EN 16931 business term id, e.g. `BT-27`.")
    rejectedValue: Any = Field(None, description="The value that was rejected, as sent: the same JSON type on every "
                                                 "status (a number stays a number, written digit for digit), texts "
                                                 "cut after 200 characters, objects and lists over 500 left out "
                                                 "(null).")
    message: str
    messageDe: str | None = Field(None, description=GERMAN,
                                  json_schema_extra=lambda schema: schema.pop("default", None))


class ErrorResponse(_Strict):
    requestId: str | None
    status: Literal[tuple(sorted(set(STATUS_TEXT.values())))] = Field(  # type: ignore[valid-type]
        description="Reason class of the HTTP status: " + ", ".join(f"`{v}` ({k})" for k, v in sorted(STATUS_TEXT.items())))
    errorCode: str
    message: str
    errors: list[ErrorDetail]


BUSINESS_TERMS = ("Extension. The business terms the finding is about, each once: for an official rule the ids its "
                  "text names, in that order (`BT-115`, `BG-23`; Factur-X `BT-X-...`, the XRechnung extension's "
                  "`BT-DEX-...`, France's `EXT-FR-FE-...`, a French status message's `MDT-...` and `MDG-...`, the "
                  "one its rule id names first); for the content checks (`CHECK-...`) the term checked, then the "
                  "one it is compared with; for a finding whose text names none (a code-list rule, an XSD finding) "
                  "the term at its place. Absent when there is none (e.g. a PDF container finding).")


class Location(_Strict):
    xpath: str | None = Field(None, description="XML documents: where the finding is (the document's own "
                                                "prefixes, or Saxon's `*:Name[namespace-uri()=...]` steps).")
    line: int | None = None
    column: int | None = None
    pdfObject: str | None = Field(None, description="Extension (the service specification's Location has xpath, "
                                                    "line and column): PDF findings of /zugferd/validate name the "
                                                    "PDF object concerned (`obj 12 0`, or the PDF/A validator's "
                                                    "object path) here instead of an xpath. Absent for XML findings.")


class Issue(_Strict):
    severity: Literal["ERROR", "WARNING"]
    code: str
    category: Literal["format", "business-rule", "content", "undetermined"] = Field(
        description="Extension. The finding's class after the BMF letter of 15 October 2025 on e-invoices: format "
                          "(not an e-invoice at all), business-rule (relevant for VAT only where a mandatory item is "
                          "affected), content (a mandatory item wrong), undetermined (the letter leaves it open).")
    message: str
    messageDe: str | None = Field(None, description=GERMAN,
                                  json_schema_extra=lambda schema: schema.pop("default", None))
    location: Location | None = None
    businessTerms: list[str] | None = Field(None, description=BUSINESS_TERMS,
                                            json_schema_extra=lambda schema: schema.pop("default", None))


class Meaning(_Strict):
    en: str
    de: str


class ValidationSummary(_Strict):
    errors: int
    warnings: int
    worstCategory: Literal["format", "business-rule", "content", "undetermined", "indeterminate"] | None = Field(
        description="Extension. The most serious class (BMF letter of 15 October 2025) among the errors and the "
                    "content findings, ranked by their consequence: format, content, business-rule, undetermined; "
                    "null when there is none (warnings of the official rules are recommendations, of no class). "
                    "`indeterminate` when the verdict is: the document was not judged on what it claims, so it is "
                    "shown to be neither a proper e-invoice nor a format error.")
    meaning: Meaning = Field(description="Extension. One sentence on what `worstCategory` means for the receiver, "
                                         "in English (`en`) and German (`de`); the reports for people show it too.")


class NotJudged(_Strict):
    code: str = Field(description="`RULES-NOT-INSTALLED` (the document claims rules this service does not have: "
                                  "another EN 16931 edition, an XRechnung or Peppol BIS version, a Factur-X / "
                                  "ZUGFeRD profile or version, ZUGFeRD 1.0, a CIUS it does not know), "
                                  "`CLAIM-NOT-COVERED` (a specification this endpoint's rules do not cover; the "
                                  "message names the endpoint that does), or the code of a required check that "
                                  "could not run (`PDFA_CHECK_TIMEOUT`, `PDFA_4_NOT_CHECKED`, `PDF_TOO_COMPLEX`, "
                                  "`PDF_STREAM_TOO_LARGE`, `FX_XML_TOO_LARGE`).")
    message: str
    claim: str | None = Field(None, description="What the document claims, where that is the reason: its "
                                                "specification identifier (BT-24), or `PDF/A-4`.",
                              json_schema_extra=lambda schema: schema.pop("default", None))
    messageDe: str | None = Field(None, description=GERMAN,
                                  json_schema_extra=lambda schema: schema.pop("default", None))


class RuleStep(_Strict):
    step: Literal["xsd", "schematron", "scenarios", "pdfa", "xmp", "embedded-file"] = Field(
        description="`scenarios`: a KoSIT validator configuration's scenario selection (its scenarios.xml), the "
                    "only step of one that matched no scenario for the document (XRECHNUNG-NO-SCENARIO).")
    name: str = Field(description="The official file, relative to its pack (or the check's name).")
    optimised: bool | None = Field(None, description="Schematron steps: true when the optimised copy of the "
                                                     "official stylesheet ran (proven to give the same findings), "
                                                     "false when the original did.",
                                   json_schema_extra=lambda schema: schema.pop("default", None))


class RulesApplied(_Strict):
    pack: str = Field(description="A rule pack (`en16931`, `xrechnung`, `peppol`, `fr-ctc`), `factur-x` (the "
                                  "Factur-X profile rules), `zugferd-1.0` (its XSD) or `pdf` (the PDF/A-3 and "
                                  "Factur-X container checks).")
    version: str
    profile: str | None = Field(None, description="The Factur-X profile whose rules ran.",
                                json_schema_extra=lambda schema: schema.pop("default", None))
    scenario: str | None = Field(None, description="The KoSIT scenario of an XRechnung pack.",
                                 json_schema_extra=lambda schema: schema.pop("default", None))
    variant: str | None = Field(None, description="A pack's variant (Peppol `self-billing`).",
                                json_schema_extra=lambda schema: schema.pop("default", None))
    steps: list[RuleStep]


class XRechnungValidationResponse(_Strict):
    valid: bool = Field(description="Whether the document passed: true only when `verdict` is `valid` (false for "
                                    "`indeterminate`, so that a client reading `valid` alone fails closed).")
    verdict: Literal["valid", "invalid", "indeterminate"] = Field(
        description="Extension. `invalid`: the rules that ran found an error. `indeterminate`: no error, but the "
                    "document claims rules this service does not have or this endpoint does not judge, or a "
                    "required check could not run (`notJudged` says which). `valid`: no error, everything judged.")
    version: str | None = Field(description="The version of the endpoint's rule pack that judged the document (a "
                                            "Factur-X profile's rules: `Factur-X 1.09 EXTENDED`); null when none "
                                            "of its rules ran (`rules` lists what ran instead).")
    syntax: Literal["CII", "UBL"] = Field(None, description="The syntax of the validated invoice: CII or UBL. Absent "
                                                            "(never null) when the document is no readable CII or "
                                                            "UBL invoice, or a PDF carries none (the service "
                                                            "specification does not say; `valid` is then false).",
                                          json_schema_extra=lambda schema: schema.pop("default", None))
    summary: ValidationSummary
    issues: list[Issue]
    notJudged: list[NotJudged] = Field(description="Extension. What could not be judged, and why (empty when "
                                                   "everything was).")
    rules: list[RulesApplied] = Field(description="Extension. What judged the document, in the order it ran: each "
                                                  "rule set with its version, what was chosen inside it and its "
                                                  "steps (XSD, Schematron stylesheets).")
    requestId: str | None


class _RequestPart(BaseModel):
    """A `request` part: its keys are exactly these (any other is a 400 UNKNOWN_FIELD, `upload.parse_request_part`),
    so the document says `additionalProperties: false` and a client or a fuzzer sends no others."""
    model_config = ConfigDict(extra="forbid")


class XRechnungValidationRequest(_RequestPart):
    version: str | None = Field(None, description="Validation package version; omitted or null: the latest "
                                                  "active package matching the detected syntax.")
    # null is taken as false (`upload.strict_flag`), so the document allows it
    strict: bool | None = Field(False, description="Extension. The checks the official rules miss (codes `CHECK-...`, "
                                            "listed in the API description) are WARNINGs by default and never "
                                            "change `valid`; true reports them as ERRORs, so a finding makes the "
                                            "document invalid.")
    metadataLanguage: Literal["en", "de"] | None = Field(None, description="Extension. Language of the report for "
                                                                           "people (Accept: text/html or "
                                                                           "application/pdf): en (default) or de, as "
                                                                           "config.metadataLanguage.")


# The request part of /status/parse and /status/timeline; /status/render's adds the page's `language`, which the
# JSON answers have none of: sent to them it is a 400 UNKNOWN_FIELD, not silently ignored.
class StatusReadRequest(_RequestPart):
    validate_: bool = Field(False, alias="validate", description="Add the fr-cdar chain's verdict (parse: the "
                                                                 "report; timeline and render: per message).")


class StatusRenderRequest(StatusReadRequest):
    # null is taken as the default (`flows.options.choice`), so the document allows it
    language: Literal["en", "fr", "de"] | None = Field(
        "en", description="render: the page's language (labels; the messages' own texts are shown as sent).")


# ---- the reading side ---------------------------------------------------------------------------------------

class UnmappedValue(_Strict):
    xpath: str = Field(description="Where the value is in the source (the document's own prefixes).")
    line: int | None = None
    column: int | None = None
    value: str
    businessTerm: str | None = Field(None, description="The business term the syntax binding gives this place, "
                                                       "where it has one (e.g. a second occurrence the model "
                                                       "cannot carry).")
    technical: bool = Field(False, description="No content: syntax plumbing (an identifier or code-list qualifier "
                                               "without a business term, UBL's version, a tax scheme's id) or a "
                                               "filler a syntax requires where EN 16931 has no term (CII's project "
                                               "name, UBL's card network id, the mimeCode / filename of an empty "
                                               "attachment). A conversion never counts it as a loss.")


class ChangedValue(_Strict):
    businessTerm: str
    source: str | None = Field(description="The value as the source states it (null: the source has none).")
    written: str = Field(description="What the target writes instead.")
    reason: str


class ParsedSource(_Strict):
    syntax: Literal["CII", "UBL"]
    specificationIdentifier: str | None = Field(description="BT-24 as the source states it.")
    profile: str | None = Field(description="The Factur-X / ZUGFeRD profile BT-24 names (CII only).")
    embeddedFileName: str | None = Field(description="The invoice file of a ZUGFeRD / Factur-X PDF.")


class ParsedConfig(_Strict):
    spec: Literal["xrechnung", "en16931", "zugferd", "peppol"] = Field(
        description="The generation endpoint that writes the invoice again (peppol: a Peppol BIS UBL document).")
    syntax: Literal["CII", "UBL"]
    profile: str | None = None
    calculationMode: Literal["MANUAL"]


class ParseResponse(_Strict):
    invoice: dict[str, Any] = Field(description="`InvoiceRequest.invoice`: post `{invoice, config}` unchanged to the "
                                                "generation endpoint of `config.spec` to write the document again.")
    config: ParsedConfig
    source: ParsedSource
    unmapped: list[UnmappedValue] = Field(description="Every source value no field carries (nothing is dropped "
                                                      "silently).")
    unmappedTruncated: bool | None = None
    complete: bool = Field(description="false: the model cannot carry the document fully (see `missing`).")
    missing: list[str] = Field(description="JSON paths of required fields the source lacks.")
    problems: list[ErrorDetail] | None = Field(None, description="Other values the model refuses.")
    changed: list[ChangedValue] | None = Field(None, description="Source values generation of `config.spec` writes "
                                                                 "otherwise (e.g. BT-24), and why.")
    validation: XRechnungValidationResponse | None = Field(None, description="With request.validate: the official "
                                                                             "validation report of the source.")


class ParseRequest(_RequestPart):
    validate_: bool = Field(False, alias="validate", description="Add the official validation report of the source.")


class ConvertRequest(_RequestPart):
    to: Literal["CII", "UBL", "ZUGFERD"] = Field(description="Target syntax (case-insensitive).")
    spec: Literal["xrechnung", "en16931", "peppol"] | None = Field(
        None, description="Rules of the target (default: the source's; a Peppol source to CII: en16931). The source "
                          "is judged on them: going to en16931, a source valid EN 16931 converts and the errors of "
                          "the CIUS it claims are named in X-Source-Findings; a peppol or xrechnung target refuses "
                          "what its rules refuse. BT-24 names the rules that judged the output (said in "
                          "X-Conversion-Changed).")
    profile: str | None = Field(None, description="ZUGFERD: the Factur-X profile (default: the source's, else "
                                                   "EN16931).")
    metadataLanguage: Literal["en", "de"] | None = Field(None, description="ZUGFERD: the page's language.")
    allowLoss: bool = Field(False, description="Convert even when the target cannot carry some source values of "
                                               "content; they are listed in X-Conversion-Lost (technical values "
                                               "never need it: X-Conversion-Technical).")


class RenderRequest(_RequestPart):
    metadataLanguage: Literal["en", "de"] | None = Field(None, description="Label language (default en).")
    showBusinessTerms: bool = Field(False, description="List every value with its business term (BT id).")
    validate_: bool = Field(False, alias="validate", description="Add the verdict and the failed rules on top.")
