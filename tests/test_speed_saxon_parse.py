"""Saxon's parse of a large document from its UTF-8 bytes (`pipeline.saxon.parse`, issue 40): the same tree and the
same findings of every installed rule stylesheet as the parse of the string it replaced, on every large document
of the official corpus and the real-world collection and on generated invoices of many lines in both syntaxes."""
from __future__ import annotations

import json
import re

import pytest
from saxonche import PySaxonApiError

from conftest import CORPUS, SHARED
from pipeline import saxon
from pipeline.check import engine, packs, xmlinput
from pipeline.check.xmlinput import XmlInputError

REALWORLD = SHARED / "realworld"


def _by_string(text: str):
    """The parse as it was before: Saxon reads the Python string."""
    return saxon.processor().parse_xml(xml_text=text)


def _from_bytes(tree) -> bool:
    return "/proc/self/fd/" in (tree.base_uri or "")


def _stylesheets() -> dict[str, list]:
    """syntax -> every stylesheet the engine runs for it (the installed packs' copies, variants' too)."""
    sheets: dict[str, list] = {}
    for pack in packs.list_installed():
        for syntax, rules in pack.syntaxes.items():
            own = [pack.runnable(s) for s in rules.stylesheets]
            own += [pack.runnable(s) for v in pack.variants for s in v.stylesheets if s not in rules.stylesheets]
            sheets.setdefault(syntax, []).extend(dict.fromkeys(own))
    return sheets


def _large_documents():
    for path in sorted(p for folder in (CORPUS, REALWORLD) for p in folder.rglob("*.xml") if p.is_file()):
        if path.stat().st_size > saxon._FROM_BYTES_ABOVE:
            yield path.relative_to(SHARED).as_posix(), path.read_bytes()
    from pipeline.flows.generate_xml import generate_xml  # the generation flow: only for these invoices
    from test_zugferd_samples import invoice_request

    for syntax in ("CII", "UBL"):
        body = json.dumps(dict(invoice_request(150), config={"syntax": syntax})).encode()
        xml = generate_xml(body, "en16931")[0]
        yield f"150 lines {syntax}", xml
        # a finding on every line, each located by its position among the lines
        yield f"150 lines {syntax}, unknown unit", re.sub(rb'unitCode="[A-Z0-9]+"', b'unitCode="QQQQ"', xml)


def _same(name, doc, old, new, sheets) -> int:
    assert new.to_string() == old.to_string(), name
    findings = 0
    for sheet in sheets:
        want = [i.to_dict() for i in engine.schematron_issues(old, sheet, None, doc)]
        got = [i.to_dict() for i in engine.schematron_issues(new, sheet, None, doc)]
        assert got == want, (name, sheet.name)
        findings += len(want)
    return findings


@pytest.mark.slow
def test_large_documents_get_the_same_tree_and_findings_from_bytes_as_from_the_string():
    sheets = _stylesheets()
    compared, by_bytes, findings = 0, 0, 0
    for name, data in _large_documents():
        try:
            doc = xmlinput.load(data)
        except XmlInputError:
            continue
        view = engine.rules_view(doc.text)
        new = engine.saxon_document(doc, view)  # the engine's parse, as a validation runs it
        by_bytes += _from_bytes(new)
        if not _from_bytes(new) and saxon._UTF8_OR_NONE.match(view):
            # the view the rules read became small (an attachment stood in): the size is a choice of speed only,
            # so its bytes are compared all the same
            new = saxon._from_bytes(view)
            assert _from_bytes(new)
        old = _by_string(view)
        if doc.syntax in sheets:
            findings += _same(name, doc, old, new, sheets[doc.syntax])
            compared += 1
        else:
            assert new.to_string() == old.to_string(), name
    assert compared >= 40 and by_bytes >= 6, (compared, by_bytes)  # 4 generated, 2 of the corpus
    assert findings >= 300  # one per line on the generated invoices at least: the rules do find something


def test_small_documents_and_other_encodings_are_read_from_the_string():
    """Below the size, a declaration of another encoding, text before the markup: the string parse as before."""
    line = "<Line><Name>Stück ÄÖÜ €</Name></Line>"
    big = "<Lines>" + line * (saxon._FROM_BYTES_ABOVE // len(line) + 10) + "</Lines>"
    for text, bytes_path in ((big, True),
                             ('<?xml version="1.0" encoding="UTF-8"?>\n' + big, True),
                             ("<?xml version='1.0'?>" + big, True),
                             ('<?xml version="1.0" encoding="ISO-8859-1"?>' + big, False),
                             ("\n" + big, False),
                             ("<Lines>" + line + "</Lines>", False)):
        tree = saxon.parse(text)
        assert _from_bytes(tree) is bytes_path, text[:50]
        assert tree.to_string() == _by_string(text).to_string()
    # bytes given: decoded by their declaration first, then parsed as characters
    latin = ('<?xml version="1.0" encoding="ISO-8859-1"?>' + big).encode("latin-1", errors="replace")
    assert saxon.parse(latin).to_string() == _by_string(saxon.xml_text(latin)).to_string()


def test_a_large_document_saxon_refuses_keeps_the_string_parse_error_text():
    """No name of the in-memory file in the message: the string parse answers a document Saxon cannot read."""
    broken = "<Lines>" + "<Line>x</Line>" * 6000 + "<Line></Lines>"
    with pytest.raises(PySaxonApiError) as before:
        _by_string(broken)
    with pytest.raises(PySaxonApiError) as now:
        saxon.parse(broken)
    assert str(now.value) == str(before.value) and "/proc/" not in str(now.value)


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_a_large_invoice_is_generated_and_read_back_to_the_same_bytes(syntax, monkeypatch):
    """The transforms read the tree too (the canonical document, the CII or UBL read back): a 300-line invoice is
    written and read to the same bytes by either parse."""
    from pipeline.flows import parse  # the reading flow: only for this round trip
    from pipeline.flows.generate_xml import generate_xml  # the generation flow: only for this invoice
    from test_zugferd_samples import invoice_request

    body = json.dumps(dict(invoice_request(300), config={"syntax": syntax})).encode()

    def both():
        xml = generate_xml(body, "en16931")[0]
        return xml, parse.to_canonical(parse.source_of(xml))

    new = both()
    assert len(new[0]) > saxon._FROM_BYTES_ABOVE
    monkeypatch.setattr(saxon, "_FROM_BYTES_ABOVE", float("inf"))  # every parse through the string, as before
    assert both() == new
