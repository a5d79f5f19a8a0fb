"""The few values the content checks judge, read straight from the lxml tree of a received CII / UBL document.

`pipeline.check.content` judges a canonical invoice. A received document used to be read whole into canonical
XML by the reading stylesheets (pipeline.read) for it: ~6 ms of XSLT, a Saxon parse and the provenance walk per
invoice, and two copies of every attachment, for a dozen values. `skeleton` picks the nodes read-cii.xsl /
read-ubl.xsl pick for exactly those terms (the first node with a value, the same sequences and conditions) and
builds a canonical invoice that holds only them. For each leaf it names its source node as the stylesheets' s:src
would (the first, in document order, of the nodes the value was read from). An attachment's base64 stays in the
source tree: the skeleton's `attachedDocument` is empty and `Skeleton.texts` holds the source text.
tests/test_content_source.py proves the findings equal those of the full reading on every corpus document.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from lxml import etree

from pipeline.invoice.model import DATE_RE
from pipeline.invoice.terms import CANONICAL_NS

_RSM = "{urn:un:unece:uncefact:data:standard:CrossIndustryInvoice:100}"
_RAM = "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}"
_UDT = "{urn:un:unece:uncefact:data:standard:UnqualifiedDataType:100}"
_CAC = "{urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2}"
_CBC = "{urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2}"
_C = f"{{{CANONICAL_NS}}}"
_XML_SPACE = " \t\n\r"   # what XPath's normalize-space and the stylesheets' r:trim remove
_EIGHT_DIGITS = re.compile(r"[0-9]{8}")
_XML_RUN = re.compile(r"[ \t\n\r]+")


@dataclass
class Skeleton:
    root: etree._Element                                   # canonical `invoice` with only the checked terms
    sources: dict = field(default_factory=dict)            # canonical leaf -> source element or (element, attribute)
    texts: dict = field(default_factory=dict)              # canonical leaf -> its text kept out of the tree


# ---- values as the reading stylesheets take them (xslt/common/read.xsl) -----------------------------------------

def _string(node) -> str:
    """XPath string(): an attribute's value, an element's text with that of its descendants (no comments)."""
    if isinstance(node, tuple):
        return node[0].get(node[1], "")
    if len(node) == 0:
        return node.text or ""
    return "".join(node.itertext())


def _code(element, child: str) -> str:
    """normalize-space(child[1])."""
    found = element.find(child)
    return _code_text(_string(found)) if found is not None else ""


def _code_text(text: str) -> str:
    """normalize-space(): XML whitespace trimmed and collapsed."""
    return " ".join(_XML_RUN.split(text.strip(_XML_SPACE)))


def _date(text: str, form: str | None) -> str:
    """r:date: format 102 (CCYYMMDD; CII's @format) or an xs:date (no @format, its time zone kept) -> YYYY-MM-DD,
    '' otherwise."""
    if _EIGHT_DIGITS.fullmatch(text) and (form is None or _code_text(form) == "102"):
        iso = day = f"{text[:4]}-{text[4:6]}-{text[6:]}"
    elif form is None and DATE_RE.fullmatch(text):
        iso, day = text, text[:10]
    else:
        return ""
    try:   # castable as xs:date; XSD 1.1 has a year 0000 (1 BCE, a leap year), Python's dates do not
        dt.date.fromisoformat("2000" + day[4:] if day.startswith("0000") else day)
    except ValueError:
        return ""
    return iso


def _value(node, kind: str = "text") -> str:
    """r:value: the trimmed string value; for a date its ISO form; '' when it has none the canonical schema holds."""
    text = _string(node).strip(_XML_SPACE)
    if not text or kind != "date":
        return text
    return _date(text, None if isinstance(node, tuple) else node.get("format"))


def _first(nodes):
    """r:first: the first node with a value."""
    return next((n for n in nodes if _value(n)), None)


def _order_key(node) -> tuple:
    """Document order: the child indexes from the root; an attribute right after its element."""
    element, tail = (node[0], (-1,)) if isinstance(node, tuple) else (node, ())
    steps = []
    while element.getparent() is not None:
        parent = element.getparent()
        steps.append(parent.index(element))
        element = parent
    return tuple(reversed(steps)) + tail


def _leaf(nodes, kind: str = "text", with_=()):
    """r:leaf: (value, source node) of the first of `nodes` with a value, or None. The source node is the first in
    document order of what s:src names: every node of `nodes` with that value, a date's @format, `with_`."""
    nodes = list(nodes)
    values = [_value(n, kind) for n in nodes]
    value = next((v for v in values if v), None)
    if value is None:
        return None
    named = [n for n, v in zip(nodes, values) if v == value]
    if kind == "date":
        named += [(n, "format") for n in named if not isinstance(n, tuple) and n.get("format") is not None]
    named += list(with_)
    return value, (named[0] if len(named) == 1 else min(named, key=_order_key))


def _children(parents, tag: str) -> list:
    """parents/tag in document order (parents are disjoint and in document order)."""
    return [child for parent in parents for child in parent.iterchildren(tag)]


def _path(parents, *tags: str) -> list:
    for tag in tags:
        parents = _children(parents, tag)
    return parents


# ---- the skeleton --------------------------------------------------------------------------------------------

class _Builder:
    def __init__(self):
        self.out = Skeleton(etree.Element(_C + "invoice"))

    def group(self, parent, name: str):
        return etree.SubElement(parent, _C + name)

    def leaf(self, parent, name: str, found) -> None:
        if found is not None:
            element = etree.SubElement(parent, _C + name)
            element.text, self.out.sources[element] = found

    def electronic_address(self, party, address) -> None:
        """BT-34 / BT-49 and its scheme (BT-34-1 / BT-49-1) from the one source element that carries both."""
        if address is not None:
            self.leaf(party, "electronicAddress", _leaf([address]))
            self.leaf(party, "electronicAddressSchemeId", _leaf([(address, "schemeID")]))

    def identifiers(self, party, ids, legal, additional: bool) -> None:
        """BT-29/46/60 (the first of `ids`, nodes with a value in document order) with its scheme, the seller's
        further ones (`additional`), and BT-30/47/61 (`legal`) with its scheme: what the SIREN / SIRET check
        reads."""
        if ids:
            self.leaf(party, "identifier", _leaf(ids[:1]))
            self.leaf(party, "identifierSchemeId", _leaf([(ids[0], "schemeID")]))
        if legal is not None:
            self.leaf(party, "legalRegistrationIdentifier", _leaf([legal]))
            self.leaf(party, "legalRegistrationIdentifierSchemeId", _leaf([(legal, "schemeID")]))
        for further in ids[1:] if additional else ():
            element = self.group(party, "additionalIdentifier")
            self.leaf(element, "identifier", _leaf([further]))
            self.leaf(element, "identifierSchemeId", _leaf([(further, "schemeID")]))

    def attachment(self, parent, binary, mime) -> None:
        document = self.group(parent, "additionalSupportingDocument")
        if binary is not None:
            element = self.group(document, "attachedDocument")
            self.out.texts[element], self.out.sources[element] = _string(binary), binary
        self.leaf(document, "attachedDocumentMimeType", mime)

    def lines(self, root, lines, line_id) -> None:
        """BG-25 with BT-126. The stylesheets write no element for a line without any value (xsl:where-populated),
        which shifts the numbers a duplicate id names: only then is each line's content looked at."""
        ids = [_leaf(line_id(line)) for line in lines]
        values = [found[0] for found in ids if found]
        if len(set(values)) < len(values):
            kept = [(line, found) for line, found in zip(lines, ids) if found or _has_value(line)]
        else:
            kept = list(zip(lines, ids))
        for _, found in kept:
            self.leaf(self.group(root, "invoiceLine"), "lineIdentifier", found)


def _has_value(element) -> bool:
    return bool("".join(element.itertext()).strip(_XML_SPACE)) or any(
        v.strip(_XML_SPACE) for e in element.iter(etree.Element) for v in e.attrib.values())


def _cii(doc_root) -> Skeleton:
    b = _Builder()
    root = b.out.root
    transaction = _children([doc_root], _RSM + "SupplyChainTradeTransaction")
    agreement = _children(transaction, _RAM + "ApplicableHeaderTradeAgreement")
    settlement = _children(transaction, _RAM + "ApplicableHeaderTradeSettlement")

    b.leaf(root, "issueDate", _leaf(_path([doc_root], _RSM + "ExchangedDocument", _RAM + "IssueDateTime",
                                          _UDT + "DateTimeString"), "date"))
    b.leaf(root, "buyerReference", _leaf(_children(agreement, _RAM + "BuyerReference")))
    for name, parents, tag in (("seller", agreement, "SellerTradeParty"), ("buyer", agreement, "BuyerTradeParty"),
                               ("payee", settlement, "PayeeTradeParty"),
                               ("sellerTaxRepresentativeParty", agreement, "SellerTaxRepresentativeTradeParty")):
        party = next(iter(_children(parents, _RAM + tag)), None)
        if party is None:
            continue
        element = b.group(root, name)
        ids = [i for i in _path([party], _RAM + "SpecifiedTaxRegistration", _RAM + "ID")
               if _code_text(i.get("schemeID", "")) == "VA"]
        vat = _first(ids)
        if vat is not None and name != "payee":
            b.leaf(element, "vatIdentifier", _leaf([vat]))   # with its @schemeID, which comes after it
        if name != "sellerTaxRepresentativeParty":
            ids = [i for i in party.iterchildren(_RAM + "ID", _RAM + "GlobalID") if _value(i)]
            if name != "seller":  # BT-46 / BT-60 is the GlobalID where there is one, as read-cii.xsl reads it
                ids = [i for i in ids if i.tag == _RAM + "GlobalID"] + [i for i in ids if i.tag == _RAM + "ID"]
            b.identifiers(element, ids, _first(_path([party], _RAM + "SpecifiedLegalOrganization", _RAM + "ID")),
                          name == "seller")
        if name in ("seller", "buyer"):
            b.electronic_address(element, _first(_path([party], _RAM + "URIUniversalCommunication", _RAM + "URIID")))

    means = _children(settlement, _RAM + "SpecifiedTradeSettlementPaymentMeans")
    payment = b.group(root, "paymentInstructions")
    b.leaf(payment, "meansCode", _leaf(_children(means, _RAM + "TypeCode")))
    transfers = [m for m in means if m.find(_RAM + "PayeePartyCreditorFinancialAccount") is not None]
    for n, transfer in enumerate(transfers):
        element = b.group(payment, "creditTransfer" if n == 0 else "additionalCreditTransfer")
        account = transfer.find(_RAM + "PayeePartyCreditorFinancialAccount")
        b.leaf(element, "accountIdentifier", _leaf(_children([account], _RAM + "IBANID")
                                                   + _children([account], _RAM + "ProprietaryID")))
        b.leaf(element, "serviceProviderIdentifier",
               _leaf(_path([transfer], _RAM + "PayeeSpecifiedCreditorFinancialInstitution", _RAM + "BICID")))
    debit = b.group(payment, "directDebit")
    b.leaf(debit, "debtorAccountIdentifier",
           _leaf(_path(means, _RAM + "PayerPartyDebtorFinancialAccount", _RAM + "IBANID")))
    b.leaf(debit, "creditorIdentifier", _leaf(_children(settlement, _RAM + "CreditorReferenceID")))

    b.leaf(root, "paymentDueDate", _leaf(_path(settlement, _RAM + "SpecifiedTradePaymentTerms",
                                              _RAM + "DueDateDateTime", _UDT + "DateTimeString"), "date"))
    b.lines(root, _children(transaction, _RAM + "IncludedSupplyChainTradeLineItem"),
            lambda line: _path([line], _RAM + "AssociatedDocumentLineDocument", _RAM + "LineID"))
    for reference in _children(agreement, _RAM + "AdditionalReferencedDocument"):
        if _code(reference, _RAM + "TypeCode") == "916":
            binary = _first(reference.iterchildren(_RAM + "AttachmentBinaryObject"))
            b.attachment(root, binary, _leaf([(binary, "mimeCode")]) if binary is not None else None)
    return b.out


def _ubl(doc_root) -> Skeleton:
    b = _Builder()
    root = b.out.root
    b.leaf(root, "issueDate", _leaf(doc_root.iterchildren(_CBC + "IssueDate"), "date"))
    b.leaf(root, "buyerReference", _leaf(doc_root.iterchildren(_CBC + "BuyerReference")))
    parties = (("seller", [p.find(_CAC + "Party") for p in doc_root.iterchildren(_CAC + "AccountingSupplierParty")]),
               ("buyer", [p.find(_CAC + "Party") for p in doc_root.iterchildren(_CAC + "AccountingCustomerParty")]),
               ("payee", [doc_root.find(_CAC + "PayeeParty")]),
               ("sellerTaxRepresentativeParty", [doc_root.find(_CAC + "TaxRepresentativeParty")]))
    for name, found in parties:
        party = next((p for p in found if p is not None), None)
        if party is None:
            continue
        element = b.group(root, name)
        schemes = [[i for i in _path([s], _CAC + "TaxScheme", _CBC + "ID") if _code_text(_string(i)) == "VAT"]
                   for s in party.iterchildren(_CAC + "PartyTaxScheme")]
        vat = [s for s, ids in zip(party.iterchildren(_CAC + "PartyTaxScheme"), schemes) if ids]
        if vat and name != "payee":
            first_ids = next(ids for ids in schemes if ids)
            b.leaf(element, "vatIdentifier", _leaf(_children(vat, _CBC + "CompanyID"), with_=first_ids))
        if name != "sellerTaxRepresentativeParty":   # a SEPA id is BT-90, not BT-29 / BT-60
            b.identifiers(element, [i for i in _path([party], _CAC + "PartyIdentification", _CBC + "ID")
                                    if _code_text(i.get("schemeID", "")) != "SEPA" and _value(i)],
                          _first(_path([party], _CAC + "PartyLegalEntity", _CBC + "CompanyID")), name == "seller")
        if name in ("seller", "buyer"):
            b.electronic_address(element, _first(party.iterchildren(_CBC + "EndpointID")))

    means = list(doc_root.iterchildren(_CAC + "PaymentMeans"))
    payment = b.group(root, "paymentInstructions")
    b.leaf(payment, "meansCode", _leaf(_children(means, _CBC + "PaymentMeansCode")))
    transfers = [m for m in means if m.find(_CAC + "PayeeFinancialAccount") is not None]
    for n, transfer in enumerate(transfers):
        element = b.group(payment, "creditTransfer" if n == 0 else "additionalCreditTransfer")
        account = transfer.find(_CAC + "PayeeFinancialAccount")
        b.leaf(element, "accountIdentifier", _leaf(account.iterchildren(_CBC + "ID")))
        branch = _children([account], _CAC + "FinancialInstitutionBranch")   # BT-86: as read-ubl.xsl reads it
        b.leaf(element, "serviceProviderIdentifier", _leaf(_children(branch, _CBC + "ID")
                                                           + _path(branch, _CAC + "FinancialInstitution", _CBC + "ID")))
    debit = b.group(payment, "directDebit")
    b.leaf(debit, "debtorAccountIdentifier",
           _leaf(_path(means, _CAC + "PaymentMandate", _CAC + "PayerFinancialAccount", _CBC + "ID")))
    # BT-90: the SEPA identifiers of the payee and the seller, in document order
    holders = list(doc_root.iterchildren(_CAC + "PayeeParty")) + \
        _children(doc_root.iterchildren(_CAC + "AccountingSupplierParty"), _CAC + "Party")
    sepa = sorted((i for i in _path(holders, _CAC + "PartyIdentification", _CBC + "ID")
                   if _code_text(i.get("schemeID", "")) == "SEPA"), key=_order_key)
    b.leaf(debit, "creditorIdentifier", _leaf(sepa))

    b.leaf(root, "paymentDueDate", _leaf(list(doc_root.iterchildren(_CBC + "DueDate"))
                                         + _children(means, _CBC + "PaymentDueDate"), "date"))
    b.lines(root, [e for e in doc_root.iterchildren(_CAC + "InvoiceLine", _CAC + "CreditNoteLine")],
            lambda line: line.iterchildren(_CBC + "ID"))
    for reference in doc_root.iterchildren(_CAC + "AdditionalDocumentReference"):
        if _code(reference, _CBC + "DocumentTypeCode") not in ("130", "50"):
            binary = _first(_path([reference], _CAC + "Attachment", _CBC + "EmbeddedDocumentBinaryObject"))
            b.attachment(root, binary, _leaf([(binary, "mimeCode")]) if binary is not None else None)
    return b.out


def skeleton(tree: etree._ElementTree, syntax: str) -> Skeleton:
    """The canonical skeleton of a CII (`syntax` "CII") or UBL ("UBL-Invoice", "UBL-CreditNote") document."""
    return _cii(tree.getroot()) if syntax == "CII" else _ubl(tree.getroot())
