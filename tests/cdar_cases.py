"""France's lifecycle status messages (CDAR) for the tests: the official examples, documents mutated to break one rule,
and the official chain run on its own (lxml's XSD, Saxon with FNFE's original stylesheets, their SVRL read here: no
code of ours between).

MUTATIONS: (name, example, edit of its tree, the one rule id the official chain then fails). The first five are the
issue's cases; the others exercise every other assert of FNFE's stylesheet a message can fail (each is also a case
of the optimised copies' equality with the originals).
"""
from __future__ import annotations

from collections import Counter
from functools import lru_cache
from pathlib import Path

from lxml import etree
from saxonche import PySaxonProcessor

from conftest import RULES_SOURCE, SHARED

CORPUS_CDAR = SHARED / "corpus-cdar"
PACK = RULES_SOURCE / "fr-cdar" / "1.4.0.03"
XSD = PACK / "xsd" / "CrossDomainAcknowledgementAndResponse_100pD22B.xsd"
FATAL = PACK / "xslt" / "BR-FR-CDV-Schematron-CDAR.xslt"
WARNING = PACK / "xslt" / "BR-FR-CDV-Schematron-CDAR_WARNING.xslt"
NS = {"rsm": "urn:un:unece:uncefact:data:standard:CrossDomainAcknowledgementAndResponse:100",
      "ram": "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100",
      "udt": "urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100",
      "qdt": "urn:un:unece:uncefact:data:standard:QualifiedDataType:100"}
SVRL = "{http://purl.oclc.org/dsdl/svrl}"
RRD = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument/ram:ReferenceReferencedDocument"
EXD = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:ExchangedDocument"
DST = f"{RRD}/ram:SpecifiedDocumentStatus"


def examples() -> list[Path]:
    return sorted(CORPUS_CDAR.glob("*.xml"))


def example(status: str) -> Path:
    """The official example whose file name carries the status code, e.g. `212`."""
    [found] = [p for p in examples() if f"-CDV-{status}_" in p.name]
    return found


def _one(tree, xpath: str):
    [node] = tree.xpath(xpath, namespaces=NS)
    return node


def _set(xpath: str, value: str):
    def edit(tree):
        _one(tree, xpath).text = value
    return edit


def _drop(xpath: str):
    def edit(tree):
        for node in tree.xpath(xpath, namespaces=NS):
            node.getparent().remove(node)
    return edit


def _add(parent: str, after: str | None, xml: str):
    """Insert `xml` (one element, `ram:` prefixed) into the one `parent`: after its last child named `after` (the
    D22B XSD's order), or first."""
    def edit(tree):
        ram = NS["ram"]
        element = etree.fromstring(f'<wrap xmlns:ram="{ram}">{xml}</wrap>')[0]
        node = _one(tree, parent)
        if after is None:
            node.insert(0, element)
        else:
            node.findall(f"{{{ram}}}{after}")[-1].addnext(element)
    return edit


def _both(*edits):
    def edit(tree):
        for e in edits:
            e(tree)
    return edit


MUTATIONS = [
    ("status code outside the list", "204", _set(f"{RRD}/ram:ProcessConditionCode", "299"),
     "BR-FR-CDV-CL-06_MDT-105"),
    ("a role the status does not allow", "200", _set(f"{EXD}/ram:SenderTradeParty/ram:RoleCode", "SE"),
     "BR-FR-CDV-CL-02_MDT-21_305"),
    ("a refusal without its reason", "207", _both(_set(f"{RRD}/ram:ProcessConditionCode", "210"),
                                                 _drop(f"{RRD}/ram:SpecifiedDocumentStatus/ram:ReasonCode")),
     "BR-FR-CDV-15_MDT-113"),
    ("a payment status without amounts", "212",
     _drop(f"{RRD}/ram:SpecifiedDocumentStatus/ram:SpecifiedDocumentCharacteristic"), "BR-FR-CDV-14_MDT-207"),
    ("a missing recipient address", "204", _drop(f"{EXD}/ram:RecipientTradeParty/ram:URIUniversalCommunication"),
     "BR-FR-CDV-08_MDT-73"),
    # more rules, for the optimised copies
    ("an unknown profile", "204", _set("//rsm:ExchangedDocumentContext/ram:GuidelineSpecifiedDocumentContextParameter"
                                       "/ram:ID", "urn.cpro.gouv.fr:1p0:CDV:other"), "BR-FR-CDV-02_MDT-3"),
    ("no message id", "202", _drop(f"{EXD}/ram:ID"), "BR-FR-CDV-03_MDT-4"),
    ("an issuer without id in processing", "211", _drop(f"{EXD}/ram:IssuerTradeParty/ram:GlobalID"),
     "BR-FR-CDV-07_MDT-38_yes"),
    ("an invoice type outside the list", "211", _set(f"{RRD}/ram:TypeCode", "325"), "BR-FR-04_MDT-91"),
    ("no invoice date", "202", _drop(f"{RRD}/ram:FormattedIssueDateTime"), "BR-FR-CDV-11_MDG-35"),
    ("no seller id", "204", _drop(f"{RRD}/ram:IssuerTradeParty/ram:GlobalID"), "BR-FR-CDV-13_MDT-129"),
    ("a status detail without number", "211", _drop(f"{RRD}/ram:SpecifiedDocumentStatus/ram:SequenceNumeric"),
     "BR-FR-CDV-16_MDT-124-2"),
    ("an unknown business process", "200", _set("//ram:BusinessProcessSpecifiedDocumentContextParameter/ram:ID",
                                               "B2X"), "BR-FR-CDV-CL-01_MDT-2"),
    ("an issuer role outside the processing list", "204", _set(f"{EXD}/ram:IssuerTradeParty/ram:RoleCode", "WK"),
     "BR-FR-CDV-CL-03_MDT-40_23"),
    ("a recipient role outside the list", "207", _set(f"{EXD}/ram:RecipientTradeParty/ram:RoleCode", "ZZ"),
     "BR-FR-CDV-CL-04_MDT-59"),
    ("a status code of the other phase", "204", _set(f"{RRD}/ram:StatusCode", "10"), "BR-FR-CDV-CL-05_MDT-88_23"),
    ("a reason of no list", "207", _both(_set(f"{RRD}/ram:ProcessConditionCode", "205"),
                                         _set(f"{RRD}/ram:SpecifiedDocumentStatus/ram:ReasonCode", "FOO_ERR")),
     "BR-FR-CDV-CL-09_MDT-113"),
    ("a dispute reason of another status", "207", _set(f"{RRD}/ram:SpecifiedDocumentStatus/ram:ReasonCode",
                                                      "NON_TRANSMISE"), "BR-FR-CDV-CL-09_MDT-113_207"),
    ("an action outside the list", "207", _set(f"{RRD}/ram:SpecifiedDocumentStatus/ram:RequestedActionCode", "XYZ"),
     "BR-FR-CDV-CL-10_MDT-121"),
    ("a characteristic type outside the list", "211",
     _set(f"{RRD}/ram:SpecifiedDocumentStatus/ram:SpecifiedDocumentCharacteristic/ram:TypeCode", "XXX"),
     "BR-FR-CDV-CL-11_MDT-207"),
    ("a message type outside the list", "212", _set("//rsm:AcknowledgementDocument/ram:TypeCode", "24"),
     "BR-FR-CDV-09_MDT-77"),
    # every other assert of FNFE's stylesheet that a message can fail (RULES_THAT_CANNOT_FAIL: the others)
    ("no status code", "204", _drop(f"{RRD}/ram:ProcessConditionCode"), "BR-FR-CDV-12_MDT-105"),
    ("a sender role outside the processing list", "204", _set(f"{EXD}/ram:SenderTradeParty/ram:RoleCode", "DFH"),
     "BR-FR-CDV-CL-02_MDT-21_23"),
    ("a platform's status issued by the seller", "200", _set(f"{EXD}/ram:IssuerTradeParty/ram:RoleCode", "SE"),
     "BR-FR-CDV-CL-03_MDT-40_305"),
    ("a status code of the processing phase in transmission", "200", _set(f"{RRD}/ram:StatusCode", "45"),
     "BR-FR-CDV-CL-05_MDT-88_305"),
    ("a detail's status code outside the list", "207",
     _add(DST, "Reason", "<ram:ProcessConditionCode>299</ram:ProcessConditionCode>"), "BR-FR-CDV-CL-06_MDT-115"),
    ("an invoice issuer who is not the seller", "204",
     _add(f"{RRD}/ram:IssuerTradeParty", "GlobalID", "<ram:RoleCode>BY</ram:RoleCode>"), "BR-FR-CDV-CL-07_MDT-132"),
    ("an invoice recipient role outside the list", "204",
     _add(RRD, "IssuerTradeParty", '<ram:RecipientTradeParty><ram:GlobalID schemeID="0002">200000008</ram:GlobalID>'
          "<ram:RoleCode>CN</ram:RoleCode></ram:RecipientTradeParty>"), "BR-FR-CDV-CL-08_MDT-158"),
    ("a submission with a reason other than not sent", "200",
     _add(RRD, "IssuerTradeParty", "<ram:SpecifiedDocumentStatus><ram:ReasonCode>AUTRE</ram:ReasonCode>"
          "<ram:SequenceNumeric>1</ram:SequenceNumeric></ram:SpecifiedDocumentStatus>"), "BR-FR-CDV-CL-09_MDT-113_200"),
    # the dispute's reason TX_TVA_ERR under statuses whose list lacks it
    ("a partial approval with a dispute's reason", "207", _set(f"{RRD}/ram:ProcessConditionCode", "206"),
     "BR-FR-CDV-CL-09_MDT-113_206"),
    ("a suspension with a dispute's reason", "207", _set(f"{RRD}/ram:ProcessConditionCode", "208"),
     "BR-FR-CDV-CL-09_MDT-113_208"),
    ("a rejection with a dispute's reason", "207", _set(f"{RRD}/ram:ProcessConditionCode", "213"),
     "BR-FR-CDV-CL-09_MDT-113_213"),
    ("a routing error with a dispute's reason", "207", _set(f"{RRD}/ram:ProcessConditionCode", "221"),
     "BR-FR-CDV-CL-09_MDT-113_221"),
    ("an inadmissible invoice with a dispute's reason", "207", _set(f"{RRD}/ram:ProcessConditionCode", "501"),
     "BR-FR-CDV-CL-09_MDT-113_501"),
    ("a refusal with a reason of no refusal", "207", _both(_set(f"{RRD}/ram:ProcessConditionCode", "210"),
                                                           _set(f"{DST}/ram:ReasonCode", "AUTRE")),
     "BR-FR-CDV-CL-09_MDT-113_210"),
    # sender 9999 (scheme 0238), the State's platform: its refusals have their own list, without PU_ERR
    ("a State platform's refusal with a reason of no refusal", "207",
     _both(_set(f"{RRD}/ram:ProcessConditionCode", "210"), _set(f"{DST}/ram:ReasonCode", "PU_ERR"),
           _add(f"{EXD}/ram:SenderTradeParty", None, '<ram:GlobalID schemeID="0238">9999</ram:GlobalID>')),
     "BR-FR-CDV-CL-09_MDT-113_210B2G"),
]
# The asserts of FNFE's stylesheet no message fails, so no mutation above: five test the context node itself
# (`test="."`: true wherever the rule fires, and the rule does not fire where the element is missing), and
# 07_MDT-38_no has `count(...) ge 0` in an `or`, always true.
RULES_THAT_CANNOT_FAIL = ("BR-FR-CDV-01_MDG-3", "BR-FR-CDV-04_MDG-4", "BR-FR-CDV-05_MDG-9", "BR-FR-CDV-06_MDT-21",
                          "BR-FR-CDV-10_MDT-87", "BR-FR-CDV-07_MDT-38_no")


def mutated(edit, status: str) -> bytes:
    tree = etree.parse(str(example(status)), etree.XMLParser(resolve_entities=False, no_network=True))
    edit(tree)
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


@lru_cache(maxsize=None)
def _processor():
    return PySaxonProcessor(license=False)


@lru_cache(maxsize=None)
def _compiled(stylesheet: str):
    return _processor().new_xslt30_processor().compile_stylesheet(stylesheet_file=stylesheet)


@lru_cache(maxsize=1)
def _schema():
    return etree.XMLSchema(etree.parse(str(XSD), etree.XMLParser(no_network=True)))


def official_findings(data: bytes, stylesheet: Path) -> list[tuple[str, str]]:
    """(rule id, flag) of each failed assert / successful report in the original stylesheet's SVRL."""
    node = _processor().parse_xml(xml_text=data.decode("utf-8-sig"))
    root = etree.fromstring(_compiled(str(stylesheet)).transform_to_string(xdm_node=node).encode("utf-8"))
    return [(e.get("id"), (e.get("flag") or "error").lower())
            for e in root.iter(f"{SVRL}failed-assert", f"{SVRL}successful-report")]


def official_chain(data: bytes) -> tuple[bool, Counter, bool, Counter]:
    """(valid, Counter of rule ids, XSD valid, Counter of (rule id, severity)) from FNFE's files alone: the XSD,
    the fatal stylesheet (fatal/error -> ERROR, warning -> WARNING), the _WARNING stylesheet (every finding a
    WARNING)."""
    tree = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    xsd_valid = _schema().validate(tree)
    fatal = [(i, "ERROR" if flag in ("fatal", "error") else "WARNING") for i, flag in official_findings(data, FATAL)]
    warnings = [(i, "WARNING") for i, _ in official_findings(data, WARNING)]
    findings = fatal + warnings
    valid = xsd_valid and not any(severity == "ERROR" for _, severity in findings)
    return valid, Counter(i for i, _ in findings), xsd_valid, Counter(findings)
