"""What a person sees when an invoice's status messages state its data differently (`conflicts` of the timeline).

Two messages generated from the fixtures and valid on the official chain, about one invoice (seller's SIREN and
number), the second stating another issue date, type code and buyer's SIREN. Before, the page (HTML and PDF, fr and
en) showed the first message's values as the invoice's and nothing else: the other values vanished unseen although
the timeline JSON listed them. Now a box under the invoice lists each value with the files (and statuses) stating
it, and each fact of the invoice carries the other values; checked as painted by headless chromium (at 1280 and 375
px) and as laid out in the PDF (pdftotext, and the box's colour in the page's pixels).
"""
from __future__ import annotations

import copy
import re
import subprocess
import time

import falcon.testing
import pytest
from PIL import Image

from cdar_cases import examples, official_chain
from conftest import REPO
from pipeline.flows import status_generate
from pipeline.invoice import cdar
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.app import create_app
from test_fr_cdar_read import _files
from test_people_render import phone  # noqa: F401 (a fixture)
from test_render_page import pdftotext

RENDER = "/v1/invoice/fr-ctc/status/render"
HEADINGS = {"en": ("Stated differently by its messages", "Statuses in time order", "other messages"),
            "fr": ("Déclarées différemment par ses messages", "Statuts dans l’ordre du temps", "autres messages")}
BOX = (0xB4, 0x53, 0x09)   # templates/invoice.css: section.conflicts' left border


def _message(status: str, **invoice) -> bytes:
    request = load_request((REPO / "fixtures" / f"fr-status-{status}.json").read_bytes())
    changed = copy.deepcopy(request)
    changed["invoice"].update(invoice)
    xml = status_generate.generate_status(dump_request(changed))[0]
    assert official_chain(xml)[0]
    return xml


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.fixture(scope="module")
def messages() -> list[tuple[str, bytes]]:
    return [("207-litige.xml", _message("207")),
            ("204-prise.xml", _message("204", issueDate="2026-09-13", typeCode="381", buyerSiren="300000007"))]


@pytest.fixture(scope="module")
def conflicts(client, messages) -> list[dict]:
    r = _files(client, RENDER.replace("render", "timeline"), messages)
    assert r.status_code == 200, r.text
    [invoice] = r.json["invoices"]
    found = invoice["conflicts"]
    assert [c["field"] for c in found] == ["invoice.issueDate", "invoice.typeCode", "invoice.buyerSiren"]
    return found


def _shown(field: str, value: str, lang: str) -> str:
    """A value as the page writes it: French dates day first, the invoice's type by its name in the page's
    language beside the code."""
    if field == "invoice.issueDate" and lang == "fr":
        return "/".join(reversed(value.split("-")))
    if field == "invoice.typeCode":
        return f"{value} – {cdar.DOCUMENT_TYPE_NAMES[value][0 if lang == 'fr' else 1]}"
    return value


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("width", [1280, 375])
def test_the_page_shows_each_value_its_messages_state_and_where(client, messages, conflicts, phone, tmp_path,
                                                                 lang, width):
    r = _files(client, RENDER, messages, {"language": lang}, headers={"Accept": "text/html"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    path = tmp_path / "timeline.html"
    path.write_bytes(r.content)
    phone.set_window_size(width, 900)
    phone.get(path.as_uri())
    time.sleep(0.2)
    heading, timeline, others = HEADINGS[lang]
    painted = phone.execute_script("""
        const box = document.querySelector('section.conflicts');
        const h2 = (s) => Array.from(document.querySelectorAll('h2')).find((h) => h.textContent.trim() === s);
        const rect = box.getBoundingClientRect();
        return {heading: box.querySelector('h2').innerText, top: rect.top, right: rect.right, height: rect.height,
                invoiceTop: document.querySelector('section.facts').getBoundingClientRect().top,
                timelineTop: h2(arguments[0]).getBoundingClientRect().top,
                border: getComputedStyle(box).borderLeftColor,
                rows: Array.from(box.querySelectorAll('tbody tr'), (tr) => tr.innerText.replace(/\\s+/g, ' ')),
                values: Array.from(box.querySelectorAll('td.stated'), (td) => {
                  // the lines of its most broken word: a named code may wrap between its words, none inside one
                  const text = td.firstChild;
                  return [td.innerText, Math.max(...Array.from(text.data.matchAll(/\\S+/g), (m) => {
                    const r = document.createRange(); r.setStart(text, m.index); r.setEnd(text, m.index + m[0].length);
                    return r.getClientRects().length; }))]; }),
                marks: Array.from(document.querySelectorAll('section.facts .fact.conflict'),
                                  (f) => [f.querySelector('dt').innerText, f.querySelector('dd').innerText]),
                scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth};
        """, timeline)
    # a box the eye stops at: between the invoice and its statuses, inside the screen, in its own colour
    assert painted["heading"].lower() == heading.lower()
    assert painted["invoiceTop"] < painted["top"] < painted["timelineTop"] and painted["height"] > 100
    assert painted["right"] <= painted["client"] and painted["scroll"] <= painted["client"]
    assert painted["border"] == "rgb({}, {}, {})".format(*BOX)
    # every value the JSON lists, with the files stating it; each word of a value painted on one line ("12/09/202 / 6"
    # before)
    rows = painted["rows"]
    assert len(rows) == sum(len(c["values"]) for c in conflicts) == 6
    i = 0
    for conflict in conflicts:
        for stated in conflict["values"]:
            assert _shown(conflict["field"], stated["value"], lang) in rows[i]
            assert all(name in rows[i] for name in stated["files"]), rows[i]
            i += 1
    # each status by its name in the page's language
    named = {"en": ("204 In process", "207 Disputed"), "fr": ("204 Prise en charge", "207 En litige")}[lang]
    assert all(name in " ".join(rows) for name in named), rows
    assert [v for v, lines in painted["values"] if lines != 1] == []
    # the invoice's facts: the first message's value, then the others, marked
    marks = dict(painted["marks"])
    assert len(marks) == 3, marks
    for conflict in conflicts:
        first, *rest = [_shown(conflict["field"], v["value"], lang) for v in conflict["values"]]
        [dd] = [dd for dd in marks.values() if dd.startswith(first)]
        assert all(f"≠ {v}" in dd for v in rest) and others in dd, dd
    phone.save_screenshot(str(tmp_path / f"conflicts-{lang}-{width}.png"))


@pytest.mark.parametrize("lang", ["en", "fr"])
def test_the_pdf_lists_them_under_the_invoice(client, messages, conflicts, tmp_path, lang):
    r = _files(client, RENDER, messages, {"language": lang}, headers={"Accept": "application/pdf"})
    assert r.status_code == 200 and r.content.startswith(b"%PDF")
    heading, timeline, others = HEADINGS[lang]
    first_page = pdftotext(r.content, tmp_path, "-raw").split("\f")[0]
    text = re.sub(r"\s+", " ", first_page)
    assert heading.upper() in text and text.index(heading.upper()) < text.index(timeline.upper())
    for conflict in conflicts:
        for stated in conflict["values"]:
            assert _shown(conflict["field"], stated["value"], lang) in text
        for stated in conflict["values"][1:]:
            assert f"≠ {_shown(conflict['field'], stated['value'], lang)} ({others})" in text
    for name, _ in messages:
        assert text.count(name) >= 3   # its file under each value it states (and under its own status)
    # painted: the box's border colour on page 1 (the rest of the page is black, grey and blue)
    subprocess.run(["pdftoppm", "-r", "50", "-png", "-singlefile", "-f", "1", "-l", "1", "-", str(tmp_path / "p1")],
                   input=r.content, capture_output=True, check=True)
    picture = Image.open(tmp_path / "p1.png").convert("RGB")
    border = sum(n for n, rgb in picture.getcolors(1 << 20) if all(abs(a - b) < 12 for a, b in zip(rgb, BOX)))
    assert border > 150, border


def test_one_invoice_s_agreeing_messages_show_no_box(client, tmp_path):
    """FNFE's own examples of one invoice (its seller's and buyer's messages) agree: no box, no mark."""
    files = [(p.name, p.read_bytes()) for p in examples() if p.name.startswith("UC1_")]
    html = _files(client, RENDER, files, {"language": "fr"}, headers={"Accept": "text/html"}).text
    assert "Cycle de vie de la facture" in html
    assert 'class="conflicts' not in html and "≠" not in html and HEADINGS["fr"][0] not in html
