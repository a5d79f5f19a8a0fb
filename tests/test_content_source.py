"""The content checks read their values straight from the received document (pipeline.check.content_source)
instead of the whole reading into canonical XML. Proof that nothing changed: for every document of
../shared/corpus (and the test documents inside the CEN unit test sets, and the invoices embedded in its PDFs),
the values the checks read, the source node each is located at, and the findings are those of the reading
stylesheets, kept here as the reference (the implementation before the change)."""
from __future__ import annotations

import base64

import pytest

from conftest import CORPUS
from pipeline.check import content, content_source, xmlinput
from pipeline.check.report import Location
from pipeline.check.xmlinput import XmlInputError
from pipeline.errors import TransformError
from pipeline.flows import validate_xml as validate
from pipeline.invoice.specs import XRECHNUNG_ID_PREFIX
from pipeline.read import canonical as reading, provenance
from test_rules_optimised import _documents


def _reference_location(doc, path: str) -> Location:
    element = doc.element_at(path)
    if element is None:
        return Location(xpath=path)
    xpath = provenance.path_of(element, doc.position, readable=True)
    last = path.rsplit("/", 1)[-1]
    if last.startswith("@"):
        xpath += "/@" + last.rsplit("}", 1)[-1].lstrip("@")
    return Location(xpath, *doc.start_of(element))


def _reference(data: bytes, doc):
    """(canonical root, locate) as the content checks had them from the reading stylesheets; None when the
    stylesheets cannot read the document (the checks then found nothing)."""
    try:
        read = provenance.split(reading.to_canonical(data, doc))
    except TransformError:
        return None
    sources = {element: read.leaves[path][1] for path, element in provenance.leaves(read.root).items()
               if path in read.leaves}

    def locate(element):
        src = (sources.get(element) or "").split()
        return _reference_location(doc, src[0]) if src else None

    return read.root, locate


def _checked(root) -> list:
    """The canonical leaves content.check reads, in the order it reads them (its own _find/_findall)."""
    f, fa = content._find, content._findall
    out = [f(root, "issueDate"), f(root, "buyerReference"), f(root, "paymentDueDate")]
    out += [f(root, party, "vatIdentifier") for party in ("seller", "buyer", "sellerTaxRepresentativeParty")]
    for party in ("seller", "buyer", "payee"):   # the SIREN / SIRET check's values, in its order
        for holder in [f(root, party), *fa(root, party, "additionalIdentifier")]:
            out += [f(holder, name) for name in ("identifier", "identifierSchemeId", "legalRegistrationIdentifier",
                                                 "legalRegistrationIdentifierSchemeId", "electronicAddress",
                                                 "electronicAddressSchemeId")]
    payment = f(root, "paymentInstructions")
    out.append(f(payment, "meansCode"))
    for transfer in [f(payment, "creditTransfer"), *fa(payment, "additionalCreditTransfer")]:
        out += [f(transfer, "accountIdentifier"), f(transfer, "serviceProviderIdentifier")]
    out += [f(payment, "directDebit", "debtorAccountIdentifier"), f(payment, "directDebit", "creditorIdentifier")]
    out += [f(line, "lineIdentifier") for line in fa(root, "invoiceLine")]
    for document in fa(root, "additionalSupportingDocument"):
        out += [f(document, "attachedDocument"), f(document, "attachedDocumentMimeType")]
    return [e for e in out if e is not None]


def _values(root, locate, texts=None) -> list:
    texts = texts or {}
    return [(content._canonical_path(e), "".join((texts[e] if e in texts else e.text or "").split()),
             (locate(e) or Location(None)).to_dict()) for e in _checked(root)]


def _findings(root, locate, doc, texts=None) -> list[dict]:
    spec_id, _ = xmlinput.specification_id(doc)
    out = []
    for xrechnung in (False, True):
        xrechnung = xrechnung or (spec_id or "").startswith(XRECHNUNG_ID_PREFIX)
        out += [f.to_dict() for f in content.check(root, locate, xrechnung, False, texts)]
    return out


@pytest.mark.slow
def test_every_corpus_document_gives_the_values_locations_and_findings_of_the_reading_stylesheets():
    compared = values = findings = attachments = 0
    for name, data in _documents():
        try:
            doc = xmlinput.load(data)
        except XmlInputError:
            continue
        if doc.syntax is None:
            continue
        reference = _reference(data, doc)
        if reference is None:
            continue
        root, locate = reference
        read = content_source.skeleton(doc.tree, doc.syntax)

        def own(element, doc=doc, read=read):
            return validate._source_location(doc, read.sources[element]) if element in read.sources else None

        expected = _values(root, locate)
        assert _values(read.root, own, read.texts) == expected, name
        expected_findings = _findings(root, locate, doc)
        assert _findings(read.root, own, doc, read.texts) == expected_findings, name
        assert [i.to_dict() for i in validate.content_issues(doc, True)] == \
            [f.to_dict() for f in content.check(root, locate, True)], name
        compared, values, findings = compared + 1, values + len(expected), findings + len(expected_findings)
        attachments += sum(1 for path, _, _ in expected if path.endswith("/attachedDocument"))
    assert compared >= 900 and values > 4000 and findings > 1000 and attachments > 50, \
        (compared, values, findings, attachments)


def test_an_attachment_is_judged_on_its_first_bytes_and_its_base64_as_a_whole():
    """attachment_head decodes only the head, but says None exactly when b64decode(validate=True) fails on the
    whole text."""
    pdf = b"%PDF-1.7\n" + bytes(range(256)) * 400
    text = base64.encodebytes(pdf).decode()   # lines of 76 characters
    head = content.attachment_head(text, 4096)
    assert pdf.startswith(head) and 4096 <= len(head) < 4200
    assert content.attachment_head(text[:-5] + "!" + text[-4:], 4096) is None          # a bad letter near the end
    compact = "".join(text.split())
    for broken in (compact + "A", compact + "AB", compact[:-1], compact + "=", "=" + compact, compact[:9000] + "=="
                   + compact[9000:], compact + "AB=", compact + "AB==="):
        try:
            base64.b64decode(broken, validate=True)
            expected_valid = True
        except ValueError:
            expected_valid = False
        assert (content.attachment_head(broken, 4096) is not None) is expected_valid, broken[-8:]
    assert content.attachment_head("UEsDBA==", 4096) == b"PK\x03\x04"   # short: decoded whole
    assert content.attachment_head("QUJD\u00a0REVG", 4096) == b"ABCDEF"        # Unicode whitespace goes, as before
    assert content.attachment_head("QUJDREVG\u00e9", 4096) is None


def test_an_xlsx_that_names_its_parts_beyond_the_first_4_kib_is_still_an_xlsx():
    zipped = b"PK\x03\x04" + b"\x00" * 9000 + b"xl/workbook.xml" + b"\x00" * 100
    declared = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert content._attached_kind(base64.b64encode(zipped).decode()) == "xlsx"
    assert content._attached_kind(base64.b64encode(zipped.replace(b"xl/", b"zz/")).decode()) == "zip"
    assert content.sniff(zipped) == "xlsx" and declared in content._SNIFFED


XR = str(CORPUS / "xrechnung-testsuite/business-cases/standard/01.09a-INVOICE_{}.xml")
# (syntax, old, new): values at the edges of what the reading stylesheets read: dates they reject or take from a
# later node, text around comments, NBSP, padding, an empty VAT scheme before a filled one, a SEPA id on the
# payee, a duplicate line id beside a line without any value, an IBAN left empty beside a proprietary id.
MUTATIONS = [
    ("ubl", "<cbc:DueDate>2016-04-20</cbc:DueDate>", "<cbc:DueDate> 2016-13-20 </cbc:DueDate>"),
    ("ubl", "<cbc:DueDate>2016-04-20</cbc:DueDate>", "<cbc:DueDate>20160401</cbc:DueDate>"),
    ("ubl", "<cbc:IssueDate>2016-04-06</cbc:IssueDate>", "<cbc:IssueDate>0000-02-29</cbc:IssueDate>"),
    ("ubl", "<cbc:IssueDate>2016-04-06</cbc:IssueDate>", "<cbc:IssueDate>2016-04-06Z</cbc:IssueDate>"),
    ("ubl", "<cbc:BuyerReference>04011000-12350-85</cbc:BuyerReference>",
     "<cbc:BuyerReference>\n 04011000-<!-- c -->12350-86\t</cbc:BuyerReference>"),
    ("ubl", "<cbc:BuyerReference>04011000-12350-85</cbc:BuyerReference>",
     "<cbc:BuyerReference>\u00a004011000-12350-86</cbc:BuyerReference>"),
    ("ubl", "<cac:PartyTaxScheme>\n                <cbc:CompanyID>DE123456789</cbc:CompanyID>",
     "<cac:PartyTaxScheme><cbc:CompanyID> </cbc:CompanyID><cac:TaxScheme><cbc:ID> VAT </cbc:ID></cac:TaxScheme>"
     "</cac:PartyTaxScheme><cac:PartyTaxScheme>\n                <cbc:CompanyID>DE123456788</cbc:CompanyID>"),
    ("ubl", "<cac:InvoiceLine>", "<cac:InvoiceLine/><cac:InvoiceLine><cbc:ID>0010</cbc:ID></cac:InvoiceLine>"
     "<cac:InvoiceLine>"),
    ("cii", "<ram:IncludedSupplyChainTradeLineItem>",
     "<ram:IncludedSupplyChainTradeLineItem> <!-- --> </ram:IncludedSupplyChainTradeLineItem>"
     "<ram:IncludedSupplyChainTradeLineItem><ram:AssociatedDocumentLineDocument><ram:LineID>0010</ram:LineID>"
     "</ram:AssociatedDocumentLineDocument></ram:IncludedSupplyChainTradeLineItem>"
     "<ram:IncludedSupplyChainTradeLineItem>"),
    ("cii", "<ram:IBANID>DE79000000001234567890</ram:IBANID>",
     "<ram:IBANID> </ram:IBANID><ram:ProprietaryID>DE79000000001234567891</ram:ProprietaryID>"),
    ("cii", "<ram:BuyerReference>04011000-12350-85</ram:BuyerReference>",
     "<ram:BuyerReference/><ram:BuyerReference>04011000-12350-86</ram:BuyerReference>"),
]


@pytest.mark.parametrize("syntax, old, new", MUTATIONS)
def test_edge_values_read_as_the_reading_stylesheets_read_them(syntax, old, new):
    text = open(XR.format("ubl" if syntax == "ubl" else "uncefact"), encoding="utf-8").read()
    assert old in text
    data = text.replace(old, new, 1).encode()
    doc = xmlinput.load(data)
    root, locate = _reference(data, doc)
    read = content_source.skeleton(doc.tree, doc.syntax)

    def own(element):
        return validate._source_location(doc, read.sources[element]) if element in read.sources else None

    assert _values(read.root, own, read.texts) == _values(root, locate)
    assert _findings(read.root, own, doc, read.texts) == _findings(root, locate, doc)
