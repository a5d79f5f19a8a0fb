"""Stage: canonical XML -> CII / UBL with our stylesheets (xslt/cii.xsl, xslt/ubl.xsl), and the EN 16931 CII reduced
to a Factur-X profile (xslt/facturx-profile.xsl). Running a stylesheet is `pipeline.xslt`'s job; this module only
knows which stylesheet and which parameters.

Parameters of xslt/cii.xsl and xslt/ubl.xsl (strings; `params_for(spec)` fills the spec-dependent ones):
  specification-id        BT-24 (CII guideline id / UBL CustomizationID); default urn:cen.eu:en16931:2017
  business-process        BT-23 when the canonical document has none (empty = none)
  project-name            CII only: ram:SpecifiedProcuringProject/ram:Name (required there, no EN 16931 term)
  seller-contact-department, buyer-contact-department
                          CII only: ram:DepartmentName beside the contact's person (no EN 16931 term; empty = none)
  credit-note-type-codes  UBL only: type codes written as a CreditNote (BR-CL-01 credit-note subset)
  card-network-id         UBL only: cac:CardAccount/cbc:NetworkID (required there, no EN 16931 term)
  missing-order-id        UBL only: cac:OrderReference/cbc:ID when only BT-14 is known (en16931: empty; xrechnung:
                          Peppol's "NA"); reading takes a received "NA" as the value it is
  missing-means-code      UBL only: cbc:PaymentMeansCode of a BT-83 read from CII without BT-81 (default "1",
                          UNTDID 4461 instrument not defined; convert lists it in `changed`)
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from pipeline import saxon, xslt
from pipeline.errors import ErrorDetail, invalid_input
from pipeline.invoice import peppol
from pipeline.invoice.specs import EN16931_ID, PEPPOL_BILLING, XRECHNUNG_ID, Profile
from pipeline.settings import XSLT_DIR

CII_XSL = XSLT_DIR / "cii.xsl"
UBL_XSL = XSLT_DIR / "ubl.xsl"
PROFILE_XSL = XSLT_DIR / "facturx-profile.xsl"

# Parameters that differ between specifications; callers may override any of them.
SPEC_PARAMS: dict[str, dict[str, str]] = {
    # an order id beside a lone BT-14 (UBL requires the element): empty, as received EN 16931 documents send it;
    # XRechnung refuses empty elements (PEPPOL-EN16931-R008), so there Peppol's "NA" (ubl.xsl's default)
    "en16931": {"specification-id": EN16931_ID, "missing-order-id": ""},
    # France's reform: EN 16931 invoices (BT-24 the CEN id) that also pass BR-FR; BT-23 is the billing frame.
    "fr-ctc": {"specification-id": EN16931_ID, "missing-order-id": ""},
    # XRechnung needs BT-23 in practice (BR-DE-?? via Peppol); default it when the document has none.
    "xrechnung": {"specification-id": XRECHNUNG_ID, "business-process": PEPPOL_BILLING},
    # Peppol BIS Billing 3.0: its CustomizationID and ProfileID (self-billing: see params_for)
    "peppol": {"specification-id": peppol.BILLING_ID, "business-process": peppol.BILLING_PROCESS},
}


def params_for(spec: str, **overrides: str | None) -> dict[str, str]:
    """Stylesheet parameters for a specification ("en16931" or "xrechnung"), with overrides (None = keep)."""
    try:
        params = dict(SPEC_PARAMS[spec.lower()])
    except KeyError:
        raise ValueError(f"unknown specification {spec!r}; expected one of {sorted(SPEC_PARAMS)}") from None
    params.update({k: v for k, v in overrides.items() if v is not None})
    if spec.lower() == "peppol" and "business-process" not in overrides:  # self-billing has its own BT-23
        params["business-process"] = peppol.process_for(params["specification-id"])
    return params


def stylesheet_for(syntax: str) -> Path:
    """xslt/cii.xsl or xslt/ubl.xsl (ApiError 400 for any other syntax)."""
    if syntax.upper() == "CII":
        return CII_XSL
    if syntax.upper() == "UBL":
        return UBL_XSL
    raise invalid_input("Unsupported syntax", [ErrorDetail(
        "INVALID_VALUE", "syntax must be CII or UBL", field="config.syntax", rejectedValue=syntax)])


def transform(canonical: bytes, syntax: str, spec: str, stylesheet: str | Path | None = None,
              specification_id: str | None = None) -> bytes:
    """Canonical XML -> CII or UBL with the spec's stylesheet parameters (BT-24, BT-23 default).
    `specification_id` overrides the spec's BT-24; `stylesheet` runs another stylesheet file instead (for
    stylesheet authors)."""
    params = params_for(spec, **{"specification-id": specification_id})
    return xslt.run_stylesheet(stylesheet or stylesheet_for(syntax), canonical, params)


def transform_to_tree(canonical: bytes, syntax: str, spec: str, specification_id: str | None = None,
                      fillers: Mapping[str, str] | None = None) -> xslt.Output:
    """`transform` as generation runs it: the document as bytes and as the Saxon tree validation reads. `fillers`:
    values of the parameters a conversion keeps from a source of the target's syntax (syntax fillers: project-name,
    card-network-id; content EN 16931 has no term for: the contact departments)."""
    params = params_for(spec, **{"specification-id": specification_id, **(fillers or {})})
    return xslt.run_to_tree(stylesheet_for(syntax), canonical, params)


def to_cii(canonical: bytes, params: Mapping[str, str] | None = None, indent: bool | None = None,
           tree=None) -> bytes:
    """Canonical invoice -> CII D16B CrossIndustryInvoice (UTF-8 bytes); `tree`: the canonical document already
    parsed by Saxon (`xslt.source_tree`)."""
    return xslt.run_stylesheet(CII_XSL, canonical, params, indent, tree=tree)


def to_ubl(canonical: bytes, params: Mapping[str, str] | None = None, indent: bool | None = None) -> bytes:
    """Canonical invoice -> UBL 2.1 Invoice or CreditNote (UTF-8 bytes)."""
    return xslt.run_stylesheet(UBL_XSL, canonical, params, indent)


def reduce_to_profile(cii: bytes, profile: Profile) -> bytes:
    """EN 16931 CII -> the profile's subset (identity for the full profiles)."""
    if not profile.subset:
        return cii
    return xslt.run_stylesheet(PROFILE_XSL, cii, {"schema": profile.xsd_path.as_uri(),
                                                  "guideline-id": profile.guideline_id, "profile": profile.name})


def to_profile(canonical: bytes, profile: Profile, tree=None, fillers: Mapping[str, str] | None = None) -> bytes:
    """Canonical XML -> the profile's CII: the EN 16931 (or XRechnung) mapping, then the profile subset. `tree`:
    as for `to_cii`; `fillers`: as for `transform_to_tree`."""
    spec = "xrechnung" if profile.xrechnung else "en16931"
    params = params_for(spec, **({} if profile.subset else {"specification-id": profile.guideline_id}),
                        **(fillers or {}))
    return reduce_to_profile(to_cii(canonical, params, tree=tree), profile)


def warm_up() -> None:
    """Compile the generation stylesheets in this worker, as files (CLI, ZUGFeRD) and inside the wrapper that
    generation runs them in, and the profile filter."""
    for stylesheet in (CII_XSL, UBL_XSL):
        saxon.compile_stylesheet(stylesheet)
        xslt.tree_executable(stylesheet)
    saxon.compile_stylesheet(PROFILE_XSL)
