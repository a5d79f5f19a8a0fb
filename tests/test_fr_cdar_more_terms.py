"""The MDT numbers of our term table (pipeline/invoice/cdar_terms.py) held against FNFE's own texts: every number the
official examples write beside an element (`<ram:ID>...</ram:ID>  <!-- MDT-4 (Id document) ... -->`) is the one our
table gives that element, and every number the BR-FR-CDV rules name for an element is. Two numbers neither text
writes, MDT-116 (a detail's status name) and MDT-126 (a detail's note), follow from the model's numbering between the
published ones: the CDV model numbers the data elements of a status detail one after another in the D22B schema's
order (wrappers are groups, MDG), as the anchors 113, 114, 115, 121, 122 and the inserted 124-2 show."""
from __future__ import annotations

import re

from lxml import etree

from cdar_cases import CORPUS_CDAR, NS, PACK
from pipeline.invoice import cdar, cdar_terms

PREFIX = {uri: prefix for prefix, uri in NS.items()}
XSD = "{http://www.w3.org/2001/XMLSchema}"
RAM_XSD = PACK / "xsd" / ("CrossDomainAcknowledgementAndResponse_100pD22B_urn_un_unece_uncefact_data_standard_"
                          "ReusableAggregateBusinessInformationEntity_100.xsd")
_NUMBER = re.compile(r"\s*(MD[TG]-\d+(?:-\d+)?)[a-z]?\s")   # "MDT-57t", "MDT-206b": the examples' variants


def _path(element) -> str:
    steps = []
    while element is not None:
        name = etree.QName(element)
        steps.append(f"{PREFIX[name.namespace]}:{name.localname}")
        element = element.getparent()
    return "/" + "/".join(reversed(steps))


def _numbered_by_examples() -> dict[str, set[str]]:
    """XPath of each element FNFE's examples annotate -> the MDT numbers their comment gives it."""
    found: dict[str, set[str]] = {}
    for path in sorted(CORPUS_CDAR.glob("*.xml")):
        for comment in etree.parse(str(path)).iter(etree.Comment):
            number, element = _NUMBER.match(comment.text or ""), comment.getprevious()
            if number and element is not None and not isinstance(element, etree._Comment):
                found.setdefault(_path(element), set()).add(number.group(1))
    return found


def test_every_number_the_official_examples_write_is_the_one_our_table_gives():
    ours = {term.cdar: term.term for term in cdar_terms.TERMS}
    found = _numbered_by_examples()
    assert len(found) >= 40   # each example annotates every element it holds
    compared = 0
    for xpath, numbers in found.items():
        if xpath in ours:
            assert numbers == {ours[xpath]}, xpath
            compared += 1
    assert compared >= 38
    # what the table leaves out is no JSON field: MDT-74, the message about several invoices, is no request value
    assert {n for x, ns in found.items() if x not in ours for n in ns} == {"MDT-74"}


def test_every_element_the_rules_number_has_that_number_in_our_table():
    """BR-FR-CDV's asserts whose context is the element their id numbers (`BR-FR-CDV-CL-06_MDT-115` on a detail's
    ProcessConditionCode): our table gives that element the number. An assert on a parent (MDT-4 on
    rsm:ExchangedDocument) or on another element (BR-FR-CDV-15_MDT-113, a reason required by the status code)
    says nothing of the place."""
    sch = etree.parse(str(PACK / "sch" / "BR-FR-CDV-Schematron-CDAR.sch"))
    by_term: dict[str, set[str]] = {}
    for term in cdar_terms.TERMS:
        by_term.setdefault(term.term, set()).add(term.cdar)
    checked = set()
    for assertion in sch.iter("{http://purl.oclc.org/dsdl/schematron}assert"):
        number = re.search(r"_(MDT-\d+(?:-\d+)?)", assertion.get("id"))
        if not number or number.group(1) not in by_term:
            continue
        context = assertion.getparent().get("context")
        last = context.rsplit("/", 1)[-1]
        if any(path.endswith("/" + last) for path in by_term[number.group(1)]):
            assert any(path.endswith(context) for path in by_term[number.group(1)]), assertion.get("id")
            checked.add(number.group(1))
    assert {"MDT-21", "MDT-59", "MDT-87", "MDT-91", "MDT-105", "MDT-113", "MDT-115", "MDT-121", "MDT-207"} <= checked


def _status_detail_numbers() -> dict[str, str]:
    """The data elements of a status detail (ram:DocumentStatusType) numbered in the schema's order from the rules'
    MDT-115 (its ProcessConditionCode): one number each, SequenceNumeric the model's inserted 124-2, a wrapper (the
    note, ram:NoteType) a group whose elements go on with the numbering; up to the characteristics (MDG-43)."""
    ram = etree.parse(str(RAM_XSD))

    def elements(type_name: str):
        [complex_type] = ram.xpath(f"//xsd:complexType[@name='{type_name}']", namespaces={"xsd": XSD[1:-1]})
        return [(e.get("name"), e.get("type")) for e in complex_type.iter(f"{XSD}element")]

    names = [name for name, _ in elements("DocumentStatusType")]
    numbers, n = {}, 115
    for name, kind in elements("DocumentStatusType")[names.index("ProcessConditionCode"):]:
        if name == "SpecifiedDocumentCharacteristic":
            break
        if name == "SequenceNumeric":
            numbers[name] = "MDT-124-2"
        elif kind.startswith("ram:"):
            for child, _ in elements(kind.split(":")[1]):
                numbers[f"{name}/{child}"] = f"MDT-{n}"
                n += 1
        else:
            numbers[name] = f"MDT-{n}"
            n += 1
    return numbers


def test_the_numbering_of_a_status_detail_lands_on_every_published_number():
    numbers = _status_detail_numbers()
    # published: MDT-115 (rules), MDT-121 and MDT-122 (examples), 124-2 inserted after MDT-124
    assert numbers["ProcessConditionCode"] == "MDT-115"
    assert numbers["RequestedActionCode"] == "MDT-121" and numbers["RequestedAction"] == "MDT-122"
    assert numbers["ValidInformation"] == "MDT-124" and numbers["SequenceNumeric"] == "MDT-124-2"


def test_mdt_116_and_mdt_126_are_where_the_numbering_puts_them():
    numbers = _status_detail_numbers()
    dst = "/rsm:CrossDomainAcknowledgementAndResponse/rsm:AcknowledgementDocument/ram:ReferenceReferencedDocument/" \
          "ram:SpecifiedDocumentStatus/ram:"
    name, note = cdar_terms.BY_PATH["status.details[].statusName"], cdar_terms.BY_PATH["status.details[].note"]
    assert numbers["ProcessCondition"] == name.term == "MDT-116" and name.cdar == dst + "ProcessCondition"
    assert numbers["IncludedNote/Content"] == note.term == "MDT-126" and note.cdar == dst + "IncludedNote/ram:Content"


def test_227_names_the_account_to_pay_into_not_one_to_debit():
    """227 "Changement de compte à payer": the account the invoice is to be paid into changed (a factor's, new bank
    details); the German name said "des zu belastenden Kontos", the account to be debited, the payer's own."""
    assert cdar.STATUS_NAMES["227"] == ("Changement de compte à payer", "Change of the account to pay into")
    assert cdar.GERMAN_NAMES["status"]["227"] == "Wechsel des Kontos, auf das zu zahlen ist"
