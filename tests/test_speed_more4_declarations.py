"""A DOCTYPE or ENTITY declaration is looked for by a one-byte find for '!' instead of a two-byte search for "<!" and a
regex over the whole text (issue 40, 2026-12-07, h2): the same position as the regex on every corpus and real-world
document and on crafted texts, and the same refusal."""
from __future__ import annotations

import pytest
from conftest import CORPUS, SHARED

from pipeline.check import xmlinput

DOCUMENTS = sorted(p for root in (CORPUS, SHARED / "realworld") for p in root.rglob("*.xml"))


def _regex_at(view: bytes) -> int | None:
    """Where the regex finds the first declaration: the reference."""
    m = xmlinput._DOCTYPE.search(view)
    return m.start() if m else None


def test_the_corpus_as_the_regex_finds_it():
    for path in DOCUMENTS:
        view = xmlinput._ascii_view(path.read_bytes())
        assert xmlinput.declaration_at(view) == _regex_at(view), path
    assert len(DOCUMENTS) > 700


BASE = b'<?xml version="1.0"?>\n<!-- a comment! -->\n<Invoice>Hello!<a>x</a></Invoice>\n'
CRAFTED = [
    BASE,
    b"",
    b"!",
    b"<!",
    b"!<!DOCTYPE r>",
    b"<!DOCTYPE r><r/>",
    b"<!doctype r><r/>",
    b"<!DocType r><r/>",
    b"<!DOCTYP r><r/>",
    b"<! DOCTYPE r><r/>",
    b'<r><![CDATA[<!ENTITY x "y">]]></r>',
    b"<r/><!--x--><!ENTITY",
    b"<!entity",
    b"<r>" + b"!" * 63 + b"</r><!DOCTYPE r>",
    b"<r>" + b"!" * 64 + b"</r><!DOCTYPE r>",
    b"<r>" + b"!" * 65 + b"<!ENTITY x>",
    b"<r>" + b"<!" * 100 + b"</r><!doctype r>",
    b"<r>" + b"<!" * 100 + b"DOCTYPE</r>",
    b"<r>" + b"!" * 200 + b"</r>",
    BASE.replace(b"<Invoice>", b"<!DOCTYPE Invoice [<!ENTITY e 'x'>]>\n<Invoice>"),
    BASE + b"A" * 300_000 + b"<!ENTITY",
    "<r>\u00e9!<!DOCTYPE r></r>".encode("utf-16"),  # transcoded by _ascii_view as parse does
]


@pytest.mark.parametrize("data", CRAFTED, ids=range(len(CRAFTED)))
def test_crafted_texts_as_the_regex_finds_them(data):
    view = xmlinput._ascii_view(data)
    assert xmlinput.declaration_at(view) == _regex_at(view)


def test_a_declaration_is_refused_where_it_stands():
    data = BASE.replace(b"<Invoice>", b"<!DOCTYPE Invoice [<!ENTITY e 'x'>]>\n<Invoice>")
    with pytest.raises(xmlinput.XmlInputError) as refused:
        xmlinput.parse(data)
    issue = refused.value.issue
    assert issue.code == xmlinput.XML_DTD_FORBIDDEN
    assert (issue.location.line, issue.location.column) == (3, 1)
    assert xmlinput.parse(BASE).getroot().tag == "Invoice"  # a comment's "<!" and text's '!' refuse nothing
