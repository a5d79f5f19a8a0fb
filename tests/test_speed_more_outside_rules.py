"""What a validation does outside the rules, made cheaper without changing a finding (issue 40): the XSD pass holds a
stand-in element in an attachment's place and puts the element itself back; the budget's clock reads each thread's
own scheduler statistics."""
from __future__ import annotations

import os
import re
import threading

from conftest import CORPUS
from lxml import etree

from pipeline import budget
from pipeline.check import engine, packs, scenarios, xmlinput
from pipeline.flows import validate_xml as validate

ATTACHED = CORPUS / "xrechnung-testsuite/business-cases/standard/01.15a-INVOICE_uncefact.xml"
TWO_ATTACHED = [CORPUS / f"xrechnung-testsuite/business-cases/standard/03.07a-INVOICE_{s}.xml" for s in ("uncefact", "ubl")]


def _xsd(doc):
    """The XSD the XRechnung scenario of `doc` names."""
    chosen = scenarios.load_scenarios(packs.latest_active("xrechnung").scenarios)
    return scenarios.select_scenario(chosen, engine.saxon_document(doc, engine.rules_view(doc.text))).xsd


def _attachments(doc):
    return list(doc.tree.iter(*engine._ATTACHMENTS))


def test_the_xsd_pass_leaves_the_attachment_element_itself_in_place():
    """After the XSD pass the tree is the one parsed: the same element objects, their full base64, tails and lines,
    serialised byte for byte as before."""
    doc = xmlinput.load(ATTACHED.read_bytes())
    xsd = _xsd(doc)
    before = etree.tostring(doc.tree)
    elements = _attachments(doc)
    assert elements and max(len(e.text) for e in elements) > engine.STAND_IN_FROM
    kept = [(e, e.getparent(), e.text, e.tail, e.sourceline) for e in elements]
    assert engine.xsd_issues(doc, xsd) == []
    assert _attachments(doc) == elements
    for element, parent, text, tail, line in kept:
        assert (element.getparent(), element.text, element.tail, element.sourceline) == (parent, text, tail, line)
    assert etree.tostring(doc.tree) == before


def test_every_attachment_is_stood_in_during_the_xsd_pass_and_back_after(monkeypatch):
    """Two large attachments (03.07a, CII and UBL): the schema sees both as stand-ins, the tree gets both back."""
    real = engine.load_schema
    for source in TWO_ATTACHED:
        doc = xmlinput.load(source.read_bytes())
        xsd, elements = _xsd(doc), _attachments(doc)
        texts = [e.text for e in elements]
        assert len(elements) == 2 and min(map(len, texts)) > engine.STAND_IN_FROM
        seen = []

        class Seen:
            def __init__(self, schema):
                self.schema, self.error_log = schema, schema.error_log

            def validate(self, tree):
                seen.append([e.text for e in tree.iter(*engine._ATTACHMENTS)])
                return self.schema.validate(tree)

        monkeypatch.setattr(engine, "load_schema", lambda path: Seen(real(path)))
        assert engine.xsd_issues(doc, xsd) == []
        monkeypatch.undo()
        assert seen == [[engine.BINARY_STAND_IN] * 2]
        assert _attachments(doc) == elements and [e.text for e in elements] == texts


def _findings(data: bytes, monkeypatch, stand_in: bool):
    if not stand_in:
        monkeypatch.setattr(engine, "STAND_IN_FROM", 10 ** 12)
    try:
        return [i.to_dict() for i in validate.validate_xml(data, "en16931").issues]
    finally:
        monkeypatch.undo()


def test_an_xsd_finding_on_the_stood_in_element_is_the_same_with_and_without_the_stand_in(monkeypatch):
    """A fault of the attachment element itself (an attribute it may not have) is found on the stand-in during the
    XSD pass: code, text, path, line and column as when libxml2 reads the element as sent; without its mimeCode
    (optional to the XSD and the rules) it has none either way."""
    data = ATTACHED.read_bytes()
    no_mime = re.sub(rb'(<ram:AttachmentBinaryObject[^>]*?) mimeCode="[^"]*"', rb"\1", data, count=1)
    foreign = re.sub(rb"(<ram:AttachmentBinaryObject)", rb'\1 colour="red"', data, count=1)
    assert no_mime != data and foreign != data
    for variant in (no_mime, foreign):
        fast = _findings(variant, monkeypatch, True)
        full = _findings(variant, monkeypatch, False)
        assert fast == full
    xsd = [f for f in _findings(foreign, monkeypatch, True) if f["code"].startswith(engine.XSD_PREFIX)]
    assert [(f["code"], f["location"]["line"], f["location"]["column"]) for f in xsd] == \
        [("XSD-CVC-COMPLEX-TYPE-3-2-1", 192, 17)]


def test_the_stand_in_goes_back_when_the_xsd_pass_fails(monkeypatch):
    """An XSD pass that raises (the budget spent, a schema error) still leaves the element itself in the tree."""
    doc = xmlinput.load(ATTACHED.read_bytes())
    xsd = _xsd(doc)
    elements = _attachments(doc)

    class Broken:
        def validate(self, tree):
            assert [e.text for e in tree.iter(*engine._ATTACHMENTS)][0] == engine.BINARY_STAND_IN
            raise RuntimeError("schema failed")

    monkeypatch.setattr(engine, "load_schema", lambda path: Broken())
    try:
        engine.xsd_issues(doc, xsd)
    except RuntimeError:
        pass
    assert _attachments(doc) == elements and len(elements[0].text) > engine.STAND_IN_FROM


def test_the_cpu_clock_is_each_threads_own_and_a_forked_childs_own():
    """budget.cpu_clock reads the calling thread's run time: another thread's starts near zero while this one has
    run; a forked child reads its own, not the parent's thread's."""
    n = 0
    for i in range(300_000):
        n += i
    mine = budget.cpu_clock()
    assert mine[0] > 0
    seen = {}
    worker = threading.Thread(target=lambda: seen.setdefault("other", budget.cpu_clock()))
    worker.start()
    worker.join()
    assert seen["other"][0] < mine[0]
    assert budget.cpu_clock()[0] >= mine[0]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its clock against its thread's statistics read afresh
        ran = budget.cpu_clock()[0]
        with open("/proc/thread-self/schedstat", "rb") as f:
            fresh = int(f.read().split()[0]) / 1e9
        os.write(write, b"1" if ran <= fresh < mine[0] else b"0")
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
    os.close(read)


# The rules' view as one regex over whole elements (how engine.rules_view was written before it found the content's
# end with str.find): the reference the faster scan must equal.
_WHOLE = re.compile(r"(<(?:[\w.-]+:)?(?:AttachmentBinaryObject|EmbeddedDocumentBinaryObject)\b[^>]*(?<!/)>)([^<]*)"
                    r"(</(?:[\w.-]+:)?(?:AttachmentBinaryObject|EmbeddedDocumentBinaryObject)>)")


def _reference_view(text: str) -> str:
    def stand_in(m):
        content = m.group(2)
        if len(content.strip()) < engine.STAND_IN_FROM:
            return m.group(0)
        lead, trail = content[:len(content) - len(content.lstrip())], content[len(content.rstrip()):]
        return m.group(1) + lead + engine.BINARY_STAND_IN + trail + m.group(3)
    return _WHOLE.sub(stand_in, text) if len(text) > engine.STAND_IN_FROM and "BinaryObject" in text else text


def test_the_rules_view_equals_the_whole_element_regex():
    """Every official sample with an attachment, and crafted shapes: content holding markup, an unclosed or
    wrongly closed element, a self-closed one, prefixes, short and long content, attributes with '/' in them."""
    big = "QUJD" * 1100
    crafted = [
        f"<r><a:AttachmentBinaryObject mimeCode='a/b'>\n {big} \n</a:AttachmentBinaryObject></r>",
        f"<r><AttachmentBinaryObject/><AttachmentBinaryObject>{big}</AttachmentBinaryObject></r>",
        f"<r><cbc:EmbeddedDocumentBinaryObject>{big}<!-- c -->{big}</cbc:EmbeddedDocumentBinaryObject></r>",
        f"<r><cbc:EmbeddedDocumentBinaryObject>{big}</cbc:Other></r><x:AttachmentBinaryObject>{big}"
        "</x:AttachmentBinaryObject>",
        f"<r><ram:AttachmentBinaryObjectX>{big}</ram:AttachmentBinaryObjectX><ram:AttachmentBinaryObject>QUFB"
        f"</ram:AttachmentBinaryObject><ram:AttachmentBinaryObject filename='x'>{big}</ram:AttachmentBinaryObject>",
        f"<r><ram:AttachmentBinaryObject>{big}",
        f"<r>{big}<ram:AttachmentBinaryObject>{big}</ram:AttachmentBinaryObject ></r>",
    ]
    samples = [p for p in CORPUS.rglob("*.xml") if b"BinaryObject" in p.read_bytes()]
    assert samples
    texts = crafted + [xmlinput.load(p.read_bytes()).text for p in samples]
    changed = 0
    for text in texts:
        view = engine.rules_view(text)
        assert view == _reference_view(text)
        changed += view != text
    assert changed >= 5
