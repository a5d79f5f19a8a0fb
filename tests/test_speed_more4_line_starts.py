"""Locating a finding reads the document's lines only as far as the finding (issue 40, 2026-12-07, h2): the table of
line starts is read in chunks that double instead of split whole per document. Every prefix it gives is the whole
table's, and every element of every corpus and real-world document is located at the same line and column."""
from __future__ import annotations

import itertools

import pytest
from lxml import etree
from conftest import CORPUS, SHARED

from pipeline.check import xmlinput

DOCUMENTS = sorted(p for root in (CORPUS, SHARED / "realworld") for p in root.rglob("*.xml"))


def _whole_table(text: str) -> list[int]:
    """The line starts as locating read them before: the whole text split at once, ending with len(text) + 1."""
    return list(itertools.accumulate(map((1).__add__, map(len, text.split("\n"))), initial=0))


def _texts():
    line = "<a>" + "x" * 50 + "</a>"
    yield "<r/>"
    yield "<r/>\n"
    yield "\n\n<r/>\n\n"
    yield "<r>\n" + "\n".join([line] * 3000) + "\n</r>"  # chunks of 2 KB, 4 KB, ... up to the end
    yield "<r>\n" + "\n".join([line] * 3000) + "\n</r>\n"
    yield "<r>" + "y" * 10_000 + "\n" + line * 200 + "\n\n\n" + "z" * 5000 + "</r>"  # lines longer than a chunk
    yield "<r>\r\n" + "\r\n".join([line] * 500) + "\r\n</r>"  # CR LF: a line ends at the LF, as before


@pytest.mark.parametrize("text", list(_texts()), ids=lambda t: f"{len(t)}-chars")
def test_every_prefix_is_the_whole_tables(text):
    whole = _whole_table(text)
    wanted = sorted({0, 1, 2, 3, 40, 41, 500, len(whole) - 2, len(whole) - 1, len(whole), len(whole) + 5,
                     *range(0, len(whole) + 2, 97)})
    for line in wanted:
        doc = xmlinput.ParsedXml(tree=None, text=text, syntax=None, root_name="r")
        starts = doc._lines_to(line)
        assert starts == whole[:len(starts)]
        assert len(starts) > line or starts == whole  # as far as asked, or all of it
    doc = xmlinput.ParsedXml(tree=None, text=text, syntax=None, root_name="r")
    for line in wanted:  # asked again and further on the same document: the table grows, never changes
        doc._lines_to(line)
    assert doc._lines_to(len(whole) + 10) == whole


def test_every_element_of_the_corpus_is_located_as_before():
    located = 0
    for path in DOCUMENTS:
        data = path.read_bytes()
        try:
            lazy, whole = xmlinput.load(data), xmlinput.load(data)
        except xmlinput.XmlInputError:
            continue
        whole._line_starts, whole._all_lines = _whole_table(whole.text), True
        # backwards first: the last element reads the table to its line, the others find it read
        elements = zip(reversed(list(lazy.tree.iter(etree.Element))), reversed(list(whole.tree.iter(etree.Element))))
        for lazy_el, whole_el in elements:
            assert lazy.start_of(lazy_el) == whole.start_of(whole_el), (path, whole_el.sourceline)
            located += 1
        fresh = xmlinput.load(data)  # and in document order on a fresh document: read little by little
        for fresh_el, whole_el in zip(fresh.tree.iter(etree.Element), whole.tree.iter(etree.Element)):
            assert fresh.start_of(fresh_el) == whole.start_of(whole_el), (path, whole_el.sourceline)
    assert len(DOCUMENTS) > 700 and located > 100_000
