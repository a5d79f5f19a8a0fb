"""Nothing is dropped silently: the source nodes that no canonical element was read from.

The reading stylesheets name, on every canonical element that carries a value, the source node(s) it came from
(`s:src`, XPath 3.1 `path()`: `/Q{ns}local[n]/.../@name`; or, cheaper for the stylesheet, an id per node, which
`in_paths` turns into that path()). `split` takes those names off the canonical document;
`unmapped` lists every source element with text and every attribute whose path no element named, with a readable
XPath (the document's own prefixes), its line and column, its value, and the business term the binding gives that
place where it has one (a term in a place the model cannot carry, e.g. a second buyer identifier).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from lxml import etree

from pipeline import budget
from pipeline.check.xmlinput import ParsedXml
from pipeline.invoice.terms import ARRAY_ITEMS, TERMS
from pipeline.read.canonical import SOURCE_NS
from pipeline.read.extended_terms import BY_VALUE, extended_term, term_by_value

_SRC = f"{{{SOURCE_NS}}}src"
_IDS = f"{{{SOURCE_NS}}}ids"  # the source's element ids in document order, with the stylesheets' $src = 'id'
PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
# Attributes that say how the document is written, not what it says.
_FORMAL = {"{http://www.w3.org/2001/XMLSchema-instance}schemaLocation"}
MAX_UNMAPPED = 1000  # entries listed; a document with more is reported as truncated


_PREDICATE = re.compile(r"\[[^\[\]]*\]")


def _local_steps(xpath: str) -> tuple[str, ...]:
    """The steps of a path without prefixes, predicates and parentheses: `(/rsm:A/ram:B)[1]/@c` -> ('A', 'B', '@c')."""
    previous = None
    while previous != xpath:
        previous, xpath = xpath, _PREDICATE.sub("", xpath)
    return tuple(step.split(":")[-1] if not step.startswith("@") else "@" + step[1:].split(":")[-1]
                 for step in xpath.replace("(", "").replace(")", "").strip().strip("/").split("/"))


@lru_cache(maxsize=1)
def _terms_by_place() -> dict[tuple[str, ...], str]:
    """The business-term table's CII and UBL bindings by their steps (a CreditNote reads like an Invoice)."""
    places: dict[tuple[str, ...], str] = {}
    for term in TERMS:
        for xpath in filter(None, (term.cii, term.ubl)):
            for alternative in xpath.split("|"):
                places.setdefault(_local_steps(alternative), f"{term.bt} {term.name}")
    return places


# Syntax plumbing: how a syntax writes a value, not the value. Identifier and code-list qualifiers (schemeID, listID,
# listAgencyID, ...) that the other syntax binds differently, the tax scheme of a party's tax registration
# (`cac:TaxScheme/cbc:ID`, "VAT" or a non-VAT scheme's code, which EN 16931 does not carry) and UBL's own version
# (`cbc:UBLVersionID`, "2.1": the rules allow no other, UBL-CR-002; CustomizationID and ProfileID are BT-24, BT-23).
# The ChargeIndicator of a CII gross price's allowance or charge: its values are named by it (BT-147 or BT-X-302 ...,
# `extended_terms.BY_VALUE`), so a charge left out is said by them; the indicator too made X-Conversion-Losses count
# one value more per charge. (UBL's price charge indicator stays content: its amount's place is BT-147's.)
_PLUMBING_ATTRIBUTES = re.compile(r"/@(?:[\w-]+:)?(scheme|list)\w*ID$")
_PLUMBING_ELEMENTS = (("TaxScheme", "ID"), ("Invoice", "UBLVersionID"), ("CreditNote", "UBLVersionID"),
                      ("AppliedTradeAllowanceCharge", "ChargeIndicator", "Indicator"))
# How a value is written: a date's format ("102"), an amount's currency, a text's language. Beside a value that is
# itself left out (and named), they are no value of their own (`is_technical`'s `value_lost`); beside a value that
# is carried they stay content (an amount in another currency than the invoice's is one the target would change).
_QUALIFIERS = re.compile(r"/@(?:[\w-]+:)?(format|currencyID|languageID)$")


def is_plumbing(xpath: str) -> bool:
    """Whether an unmapped source value is syntax plumbing (no content: never a reason to refuse a conversion). A
    qualifier that is itself a business term (BT-29-1, BT-158-1, ...) is content."""
    if _PLUMBING_ATTRIBUTES.search(xpath):
        return business_term_of(xpath) is None
    steps = _local_steps(xpath)
    return any(steps[-len(tail):] == tail for tail in _PLUMBING_ELEMENTS)


# Syntax fillers: values a syntax requires where EN 16931 has no business term, by the steps they end in -> the
# parameter of our writing stylesheet (xslt/cii.xsl, xslt/ubl.xsl) that writes the same place. Never content: a
# conversion writes the source's value there when the target is the same syntax, and otherwise lists it as technical.
FILLERS: dict[tuple[str, ...], str] = {
    ("SpecifiedProcuringProject", "Name"): "project-name",   # CII: a name beside BT-11; UBL's ProjectReference has an id
    ("CardAccount", "NetworkID"): "card-network-id",         # UBL: a card network beside BT-87; CII has no place
}


def filler_of(xpath: str) -> str | None:
    """The stylesheet parameter of a syntax filler at `xpath` (`FILLERS`), or None."""
    return FILLERS.get(_local_steps(xpath)[-2:])


# Content EN 16931 has no term for, in a place its syntax has, by the steps it ends in -> the parameter of our writing
# stylesheet that writes the same place: a conversion to the same syntax keeps it (a CII to CII or into a ZUGFeRD
# PDF), any other target leaves it out as a loss. A contact's department beside its person (BT-41 / BT-56 take the
# person; UBL's contact has one name); in the party's first contact only, the one the stylesheet writes. A party's
# second identifier where EN 16931 has one.
KEPT_IN_SYNTAX: dict[tuple[str, ...], str] = {
    ("SellerTradeParty", "DefinedTradeContact", "DepartmentName"): "seller-contact-department",
    ("BuyerTradeParty", "DefinedTradeContact", "DepartmentName"): "buyer-contact-department",
    # the ram:ID beside a GlobalID where EN 16931 takes one identifier, the GlobalID (xslt/read-cii.xsl)
    ("ApplicableHeaderTradeAgreement", "BuyerTradeParty", "ID"): "buyer-other-id",
    ("ApplicableHeaderTradeSettlement", "PayeeTradeParty", "ID"): "payee-other-id",
    ("ApplicableHeaderTradeDelivery", "ShipToTradeParty", "ID"): "ship-to-other-id",
}
_LATER_CONTACT = re.compile(r"DefinedTradeContact\[(?!1\])\d+\]")


def same_syntax_param(xpath: str) -> str | None:
    """The stylesheet parameter that writes the value at `xpath` again in a document of the source's syntax: a syntax
    filler's (`FILLERS`) or content's the syntax has a place for (`KEPT_IN_SYNTAX`); None for any other."""
    kept = None if _LATER_CONTACT.search(xpath) else KEPT_IN_SYNTAX.get(_local_steps(xpath)[-3:])
    return kept or filler_of(xpath)


def is_technical(xpath: str, element: etree._Element | None = None, value_lost: bool = False) -> bool:
    """Whether an unmapped source value is technical, never content: syntax plumbing, a syntax filler, or an
    attribute of an element without a value (`element`: the attribute's element). An attribute qualifies its
    element's value (a scheme, a currency, a mime code); beside none it qualifies nothing: the mimeCode / filename a
    syntax requires on an empty attachment (BT-125-1, BT-125-2), the scheme of an empty electronic address. Beside a
    value that is itself unmapped (`value_lost`), how it was written (`_QUALIFIERS`: a lost due date's format) is
    said by that value's entry, unless a term names the qualifier (Factur-X's line VAT total currency, BT-X-329-0)."""
    if is_plumbing(xpath) or filler_of(xpath) is not None:
        return True
    if value_lost and _QUALIFIERS.search(xpath):
        return business_term_of(xpath) is None and _local_steps(xpath) not in BY_VALUE
    if element is None or (element.text or "").strip() or not _local_steps(xpath)[-1:][0].startswith("@"):
        return False
    return not any(isinstance(child.tag, str) for child in element)


def business_term_of(xpath: str) -> str | None:
    """"BT-n name" of the binding a source path is in, if any."""
    steps = _local_steps(xpath)
    if steps and steps[0] == "CreditNote":
        steps = ("Invoice",) + tuple("InvoiceLine" if s == "CreditNoteLine" else
                                     "InvoicedQuantity" if s == "CreditedQuantity" else s for s in steps[1:])
    return _terms_by_place().get(steps) or extended_term(steps)


_TAX_REGISTRATIONS = (("SpecifiedTaxRegistration", "ID"), ("PartyTaxScheme", "CompanyID"))


def _is_vat_registration(element: etree._Element) -> bool:
    """A tax registration element (CII ram:ID, UBL cbc:CompanyID) is a VAT one: schemeID VA / a VAT tax scheme."""
    if etree.QName(element).localname == "ID":
        return (element.get("schemeID") or "").strip() == "VA"
    return any((scheme.text or "").strip().upper() == "VAT" for scheme in element.getparent().iterfind(
        "{*}TaxScheme/{*}ID"))


def term_of_element(element: etree._Element, xpath: str) -> str | None:
    """business_term_of an unmapped value (`element`: its element, an attribute's owner), told apart by a value
    where the term depends on one: a party's VAT identifier place holds BT-31 / BT-48 / BT-63 only when the
    registration is VAT; else it is the seller's BT-32, and no term of the buyer or the tax representative, which
    EN 16931 gives no other tax registration. Factur-X EXTENDED's ids by a value (`extended_terms.BY_VALUE`: a gross
    price's allowance or charge, a line's VAT total by its currency) come before the element's binding."""
    if is_plumbing(xpath):
        return None
    steps = _local_steps(xpath)
    if steps in BY_VALUE:
        return term_by_value(steps, element) or business_term_of(xpath)
    term = business_term_of(xpath)
    if term is None or steps[-2:] not in _TAX_REGISTRATIONS or _is_vat_registration(element):
        return term
    return next((f"{t.bt} {t.name}" for t in TERMS if t.bt == "BT-32"), None) if term.startswith("BT-31 ") else None


@dataclass
class Split:
    """The canonical document read, without provenance, and what the provenance said. Source nodes are named as
    s:src names them: by path(), or (`$src = 'id'`) by the ids `names` lists (`in_paths` turns those into
    path()s; the unmapped walk needs none: it pairs the ids with the elements, so no path is built per element)."""
    canonical: bytes                        # serialised
    root: etree._Element                    # the same, parsed (the JSON stage reads it)
    used: set[str]                          # every source node some element was read from
    leaves: dict[str, tuple[str, str]]      # leaf path (`invoiceLine[2]/netAmount[1]`) -> (value, its s:src)
    names: list[str] | None = None          # ids: every source element's, in document order; None: path()s
    sources: dict[str, str] = field(default_factory=dict)   # every element's path (groups too) -> its s:src


def leaves(root) -> dict[str, etree._Element]:
    """Leaf elements of a canonical document by their path with positions among same-named siblings."""
    out: dict[str, etree._Element] = {}

    def visit(element, path: str) -> None:
        seen: dict[str, int] = {}
        for child in element:
            tag = child.tag
            if isinstance(tag, str):  # (comments and processing instructions are no values)
                n = seen[tag] = seen.get(tag, 0) + 1
                visit(child, f"{path}/{tag.rpartition('}')[2]}[{n}]")
        if not seen:
            out[path] = element

    visit(root, "")
    return out


def source_paths(root) -> list[str]:
    """XPath 3.1 `path()` of every element of a source tree, in document order."""
    out: list[str] = []

    def visit(element, path: str) -> None:
        out.append(path)
        seen: dict[str, int] = {}
        for child in element:
            tag = child.tag
            if isinstance(tag, str):
                n = seen[tag] = seen.get(tag, 0) + 1
                visit(child, f"{path}/Q{tag}[{n}]" if tag[0] == "{" else f"{path}/Q{{}}{tag}[{n}]")

    tag = root.tag
    visit(root, f"/Q{tag}[1]" if tag[0] == "{" else f"/Q{{}}{tag}[1]")
    return out


def split(traced: bytes, source=None) -> Split:
    """Take the provenance off the canonical document the reading stylesheets wrote. `source`: the root of the
    document read (lxml), needed when they named its nodes by id (`$src = 'id'`), to check that the ids are its
    elements'."""
    budget.check()
    root = etree.fromstring(traced, PARSER)
    ids = root.attrib.pop(_IDS, None)
    names = None
    if ids is not None:
        if source is None:
            raise ValueError("the canonical document names its sources by id: split needs the source tree")
        names = ids.split()
        count = sum(1 for _ in source.iter(etree.Element))
        if len(names) != count:  # not the document that was read: the ids would name the wrong nodes
            raise ValueError(f"s:ids lists {len(names)} elements, the source has {count}")
    found: dict[str, tuple[str, str]] = {}
    used: set[str] = set()
    sources: dict[str, str] = {}

    def visit(element, path: str) -> None:  # one walk: s:src off every element, the leaves as `leaves` has them
        src = element.attrib.pop(_SRC, None)
        if src:
            used.update(src.split())
            sources[path] = src
        seen: dict[str, int] = {}
        for child in element:
            tag = child.tag
            if isinstance(tag, str):
                if not path:  # each top-level element (an invoice line) of a document of any size
                    budget.check()
                n = seen[tag] = seen.get(tag, 0) + 1
                visit(child, f"{path}/{tag.rpartition('}')[2]}[{n}]")
        if not seen:
            found[path] = ((element.text or "").strip(), src or "")

    visit(root, "")
    etree.cleanup_namespaces(root)
    return Split(etree.tostring(root, xml_declaration=True, encoding="UTF-8"), root, used, found, names, sources)


def path_namer(names: list[str], source) -> Callable[[str], str]:
    """The path() of a token of s:src written with `$src = 'id'` (`names`: `Split.names`; `source`: the root of
    the document read): an id names its element, 'id/@step' an attribute of it; any other token is a path()."""
    by_id = dict(zip(names, source_paths(source)))

    def path(token: str) -> str:
        head, slash, rest = token.partition("/")
        return by_id[head] + slash + rest if head in by_id else token
    return path


def in_paths(read: Split, source) -> Split:
    """`read` with its source nodes named by path() (as without `$src = 'id'`); `source`: the root of the
    document read."""
    if read.names is None:
        return read
    path = path_namer(read.names, source)
    return Split(read.canonical, read.root, set(map(path, read.used)),
                 {leaf: (value, " ".join(map(path, src.split()))) for leaf, (value, src) in read.leaves.items()})


def canonical_path(json_field: str) -> str:
    """The canonical element path (`/invoiceLine[1]/quantity[1]`, as `Split` keys them) of a JSON field
    (`invoice.invoiceLines[0].quantity`); an array without an index is its first item, one with an unknown index
    (`invoiceLines[]`, a rule's finding that names no line) ends the path at the group that holds it."""
    out = ""
    for step in json_field.split(".")[1:]:
        name, _, index = step.partition("[")
        if name in ARRAY_ITEMS and index == "]":
            break
        out += f"/{ARRAY_ITEMS[name]}[{int(index[:-1]) + 1 if index else 1}]" if name in ARRAY_ITEMS else f"/{name}[1]"
    return out


def source_node(read: Split, doc: ParsedXml, json_field: str) -> dict | None:
    """{"xpath", "line", "column", "near"} of the source node a JSON field was read from or, when the source has no
    value there, of the first value read inside the nearest enclosing group (e.g. the line's identifier: `near`
    true); None when nothing of the path was read (or the sources are named by path(), not id)."""
    if read.names is None:
        return None
    path = canonical_path(json_field)
    near = False
    while path:
        src = read.sources.get(path)
        if not src:
            src = next((s for p, s in read.sources.items() if p.startswith(path + "/")), None)
            near = near or src is not None
        if src:
            head, _, attribute = src.split()[0].partition("/@")
            by_id = dict(zip(read.names, doc.tree.getroot().iter(etree.Element)))
            element = by_id.get(head)
            if element is not None:
                line, column = doc.start_of(element)
                xpath = _readable(element, doc.position) + (f"/@{attribute.rpartition('}')[2]}" if attribute else "")
                return {"xpath": xpath, "line": line, "column": column, "near": near}
        near = True
        path = path.rpartition("/")[0]
    return None


def _step(element, index: int) -> tuple[str, str]:
    """(path() step, readable step) of an element that is the index-th of its name among its siblings."""
    q = etree.QName(element)
    readable = f"{element.prefix}:{q.localname}" if element.prefix else q.localname
    return f"Q{{{q.namespace or ''}}}{q.localname}[{index}]", readable


def path_of(element, position: Callable, readable: bool = False) -> str:
    """XPath 3.1 `path()` of an element of the source; `position`: the source's `ParsedXml.position`; `readable`:
    with the document's own prefixes (`/rsm:CrossIndustryInvoice[1]/...`)."""
    steps = []
    while element is not None:
        index = position(element)[0]
        path_step, shown = _step(element, index)
        steps.append(f"{shown}[{index}]" if readable else path_step)
        element = element.getparent()
    return "/" + "/".join(reversed(steps))


def _attribute_step(name: str, element) -> tuple[str, str]:
    q = etree.QName(name)
    if not q.namespace:
        return f"@{q.localname}", f"@{q.localname}"
    prefix = next((p for p, ns in (element.nsmap or {}).items() if ns == q.namespace and p), None)
    return f"@Q{{{q.namespace}}}{q.localname}", f"@{prefix}:{q.localname}" if prefix else f"@{q.localname}"


def _readable(element, position: Callable) -> str:
    """The readable XPath of a source element: the document's prefixes, a position only where the parent has
    several children of its name (`/rsm:CrossIndustryInvoice/.../ram:IncludedNote[2]/ram:Content`)."""
    steps = []
    while element is not None:
        shown = f"{element.prefix}:{etree.QName(element).localname}" if element.prefix else etree.QName(element).localname
        n, of = position(element)
        steps.append(f"{shown}[{n}]" if of > 1 else shown)
        element = element.getparent()
    return "/" + "/".join(reversed(steps))


def short_path(doc: ParsedXml, xpath: str | None) -> str | None:
    """A rule's location path as people read it (the JSON report keeps the rule's own): the document's prefixes,
    positions only where needed (`/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/...`) instead of
    `/*:CrossIndustryInvoice[namespace-uri()='urn:...'][1]/...`; None when it does not resolve."""
    element = doc.element_at(xpath) if xpath else None
    if element is None:
        return None
    last = xpath.rstrip("/").rsplit("/", 1)[-1]
    attribute = "/@" + re.sub(r"^@Q\{[^}]*\}", "@", last)[1:] if last.startswith("@") else ""
    return _readable(element, doc.position) + attribute


def unmapped(doc: ParsedXml, used: set[str], names: list[str] | None = None,
             carried: etree._Element | None = None) -> tuple[list[dict], bool]:
    """Every source leaf (an element with text and no child elements, or an attribute) that `used` does not name
    -> ([{"xpath", "line", "column", "value", "businessTerm", "technical"}], truncated); `technical`: no content
    (`is_technical`). `names`: what `used` calls each source element in document order (`Split.names`; None: their
    path()s); `carried`: an element whose text a field carries that no s:src names (BT-24). Readable paths and lines
    are worked out only for what is listed (most leaves are used)."""
    found: list[dict] = []
    root = doc.tree.getroot()
    for n, (element, name) in enumerate(zip(root.iter(etree.Element),
                                            names if names is not None else source_paths(root))):
        if n % 1000 == 999:  # a source element of a document of any size
            budget.check()
        if len(found) > MAX_UNMAPPED:
            break  # truncated: what is not listed needs no path or line
        line, column = None, None
        # the element's own value is unmapped too (its qualifiers then go with it: `is_technical`)
        lost = bool(element.attrib) and bool((element.text or "").strip()) and name not in used \
            and element is not carried and not any(isinstance(c.tag, str) for c in element)
        for attribute, value in element.attrib.items():
            if attribute in _FORMAL or (f"{name}/@Q{attribute}" if attribute[0] == "{" else
                                        f"{name}/@{attribute}") in used:
                continue  # ('{ns}local' is the path() step '@Q{ns}local')
            if line is None:
                line, column = doc.start_of(element)
            readable = f"{_readable(element, doc.position)}/{_attribute_step(attribute, element)[1]}"
            technical = is_technical(readable, element, lost)
            found.append({"xpath": readable, "line": line, "column": column, "value": value,
                          "businessTerm": None if technical else term_of_element(element, readable),
                          "technical": technical})
        if len(element) and any(isinstance(c.tag, str) for c in element):
            continue  # not a leaf (comments and processing instructions are no children here)
        if (element.text or "").strip() and name not in used and element is not carried:
            if line is None:
                line, column = doc.start_of(element)
            readable = _readable(element, doc.position)
            technical = is_technical(readable)
            found.append({"xpath": readable, "line": line, "column": column, "value": element.text.strip(),
                          "businessTerm": None if technical else term_of_element(element, readable),
                          "technical": technical})
    return found[:MAX_UNMAPPED], len(found) > MAX_UNMAPPED
