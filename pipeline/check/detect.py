"""Which rules a document is held to when none are named: "Detect from the file" on the page, `"spec": "auto"` in a
job, `pipeline validate` without `--spec`. One decision, so that the page, jobs and the command line agree:

- a PDF (by its `%PDF-` header): zugferd, the ZUGFeRD / Factur-X checks with its profile's rules;
- XML whose specification identifier (BT-24) names a specification: XRechnung (any version) -> xrechnung; Peppol
  BIS Billing 3.0 or its self-billing (UBL) -> peppol; France's EXTENDED-CTC-FR -> fr-ctc;
- other XML whose parties are all in France (seller and buyer by address country and VAT identifier prefix,
  `xmlinput.party_countries`) -> fr-ctc: under France's reform an invoice between two taxable persons established
  in France is an e-invoice that the receiving platform holds to the FNFE chain (EN 16931 or its Factur-X
  profile's rules, then BR-FR), so a French invoice without its mandatory notes (BR-FR-05) is not called valid;
- a lifecycle status message of France's reform (a CDAR D22B root) -> fr-cdar, also where invoice rules were named
  for many documents (`route`);
- anything else -> en16931 (a document that is no XML gets its format finding there).
"""
from __future__ import annotations

from pipeline.check import xmlinput

SPECS = ("xrechnung", "en16931", "zugferd", "fr-ctc", "peppol", "fr-cdar")
AUTO = "auto"
# What a specification identifier (BT-24) names, as parts of it: every XRechnung version's; Peppol BIS Billing 3.0
# and its self-billing (in UBL); France's EXTENDED-CTC-FR.
XRECHNUNG_MARK = "xrechnung"
PEPPOL_MARKS = ("poacc:billing:3.0", "poacc:selfbilling:3.0")
FRENCH_CTC_MARK = "urn.cpro.gouv.fr:1p0:extended-ctc-fr"


_CDAR_NAME = xmlinput.CDAR_ROOT.rpartition("}")[2].encode()


def is_pdf(data: bytes) -> bool:
    """A PDF by its header, which may follow some junk bytes (as readers allow)."""
    return b"%PDF-" in data[:1024]


def detect(data: bytes) -> str:
    """The spec a document is held to by what it is and says (see above)."""
    if is_pdf(data):
        return "zugferd"
    try:
        doc = xmlinput.load(data)
    except xmlinput.XmlInputError:
        return "en16931"
    if xmlinput.is_cdar(doc):
        return "fr-cdar"
    return of_invoice(doc)


def of_invoice(doc: xmlinput.ParsedXml) -> str:
    """The spec an XML invoice already loaded is held to (what `detect` decides for XML that is no status message)."""
    spec_id = (xmlinput.specification_id(doc)[0] or "") if doc.syntax else ""
    if XRECHNUNG_MARK in spec_id.lower():
        return "xrechnung"
    if doc.report_syntax == "UBL" and any(mark in spec_id for mark in PEPPOL_MARKS):
        return "peppol"
    if FRENCH_CTC_MARK in spec_id or xmlinput.party_countries(doc) == {"FR"}:
        return "fr-ctc"
    return "en16931"


def page_rules() -> dict:
    """The same decision's data for the web page's script, which detects before it uploads (templates/web)."""
    return {"xrechnung": XRECHNUNG_MARK, "peppol": PEPPOL_MARKS, "french": FRENCH_CTC_MARK,
            "roots": [[ns, name, syntax[:3]] for (ns, name), syntax in xmlinput.ROOTS.items()],
            "status": [xmlinput.CDAR_NS, xmlinput.CDAR_ROOT.rpartition("}")[2]],
            "parties": xmlinput.PARTY_PATHS, "specId": xmlinput.SPEC_ID_PATHS}


def route(data: bytes, spec: str) -> str:
    """The rules one document among many is held to (a job's, `pipeline validate` on several files) by what it is:
    `spec` "auto" detects; a PDF on XML rules is a ZUGFeRD / Factur-X PDF (fr-ctc takes PDFs itself); an XML
    document on zugferd is detected as XML; a lifecycle status message (CDAR) on invoice rules is held to fr-cdar."""
    if spec == AUTO or (spec == "zugferd" and not is_pdf(data)):
        return detect(data)
    if is_pdf(data) and spec != "fr-ctc":
        return "zugferd"
    # a status message among invoices (a French month: invoices and their CDVs) is no invoice for any invoice rules:
    # FNFE's chain judges it; its root's name in the first bytes before a full read, so invoices are not read twice
    if spec != "fr-cdar" and _CDAR_NAME in data[:4096] and detect(data) == "fr-cdar":
        return "fr-cdar"
    return spec
