"""Values sent with explicit bidirectional controls, kept to themselves on the page.

A right-to-left override (U+202E) in a seller's name reverses everything after it up to the end of its paragraph
(Unicode's bidi algorithm, UAX #9), in the browser and in Pango alike: the PDF's footer, one line built from the
seller name, the invoice number and the date, showed "0010-4202-R" for R-2024-0100. Before the page is written,
each text value of the canonical XML that holds such controls is wrapped in an isolate (FSI ... PDI, what HTML's
<bdi> does), with what it opened closed inside it: its direction ends with the value. Only the page sees this; the
documents keep the values as sent. Most invoices hold none of these characters and pass through untouched.

A file name is no content to show as its sender styled it: an override there only disguises it ("Rechnung<RLO>lmx.exe"
shows as "Rechnungexe.xml"), so a report names such characters instead (`visible`).
"""
from __future__ import annotations

import re

from lxml import etree

EMBEDDINGS = "\u202a\u202b\u202d\u202e"   # LRE RLE LRO RLO, closed by PDF
POP = "\u202c"                            # PDF
ISOLATES = "\u2066\u2067\u2068"           # LRI RLI FSI, closed by PDI
FSI, PDI = "\u2068", "\u2069"
CONTROLS = "\u202a-\u202e\u2066-\u2069"  # all of them, as a range of a regular expression's character class
_CONTROL = re.compile(f"[{CONTROLS}]")
_CONTROL_UTF8 = re.compile(rb"\xe2\x80[\xaa-\xae]|\xe2\x81[\xa6-\xa9]")  # the same characters, encoded


def isolate(value: str) -> str:
    """`value` inside FSI ... PDI, every embedding, override and isolate it opens closed before the end; a closer
    without its opener (which would close ours, or one of the page's) is left out."""
    out, opened = [], []
    for c in value:
        if c in EMBEDDINGS or c in ISOLATES:
            opened.append(c)
        elif c == POP:
            if not opened or opened[-1] not in EMBEDDINGS:
                continue
            opened.pop()
        elif c == PDI:
            if not any(o in ISOLATES for o in opened):
                continue
            while opened.pop() not in ISOLATES:  # a PDI closes the embeddings opened inside its isolate too
                pass
        out.append(c)
    closers = "".join(POP if o in EMBEDDINGS else PDI for o in reversed(opened))
    return FSI + "".join(out) + closers + PDI


def isolated_values(canonical: bytes) -> bytes:
    """The canonical XML with every text value that holds a bidi control isolated; the same object when none
    does."""
    if not _CONTROL_UTF8.search(canonical):
        return canonical
    root = etree.fromstring(canonical, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    for el in root.iter(tag=etree.Element):
        if el.text and _CONTROL.search(el.text):
            el.text = isolate(el.text)
    return etree.tostring(root, xml_declaration=True, encoding="utf-8")


def visible(name: str) -> str:
    """`name` with each bidi control written out ("<U+202E>"), for a file name a report shows."""
    return _CONTROL.sub(lambda m: f"<U+{ord(m.group()):04X}>", name)
