"""The readable invoice page (xslt/html.xsl + WeasyPrint): everything the invoice carries is visible, labels and
formats follow metadataLanguage, content is never translated, long invoices paginate, nothing is fetched."""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import pytest
from lxml import etree, html as lxml_html

from pipeline.errors import ApiError
from pipeline.flows.generate_xml import normalize
from pipeline.flows.parse import parse
from pipeline.pdf import bidi, page
from conftest import CORPUS
from test_roundtrip import CORPUS_CASES
from tests.test_zugferd_samples import invoice_request

REPO = Path(__file__).resolve().parent.parent
C = "urn:einvoice-pipeline:canonical:1"
ALL_FIELDS = REPO / "fixtures" / "invoice-all-fields.json"


def canonical_of(request: dict) -> bytes:
    return normalize(json.dumps(request).encode(), "zugferd")[1]


def page_text(html: bytes) -> str:
    """What the page shows: its body's text (the head holds the stylesheet)."""
    return " ".join(lxml_html.document_fromstring(html).body.text_content().split())


def pdftotext(pdf: bytes, tmp_path: Path, option: str) -> str:
    path = tmp_path / "page.pdf"
    path.write_bytes(pdf)
    out = subprocess.run(["pdftotext", option, str(path), "-"], capture_output=True, check=True).stdout.decode("utf-8")
    # -raw (text in reading order): a word the page hyphenated at a line end (WeasyPrint's U+2010, never a hyphen
    # of the text itself) is read whole again
    return re.sub("\u2010\n", "", out) if option == "-raw" else out


def pdf_pages(pdf: bytes, tmp_path: Path) -> list[str]:
    return pdftotext(pdf, tmp_path, "-layout").split("\f")[:-1]


NUMERIC = {"amount", "quantity", "netPrice", "grossPrice", "priceBasisQuantity", "vatRate", "vatCategoryRate",
           "percentage", "priceDiscount"}


@pytest.fixture(scope="module", params=["invoice-all-fields", "sample-10-lines"])
def source(request) -> bytes:
    if request.param == "invoice-all-fields":
        body = json.loads(ALL_FIELDS.read_text())
        body["config"] = {"syntax": "CII"}
        return canonical_of(body)
    return canonical_of(invoice_request(10))


@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_value_of_the_invoice_is_on_the_page(source, lang):
    """Each leaf of the canonical document (every business term sent or computed) appears on the page: text as
    sent, codes as sent, dates and numbers in the language's format."""
    assert values_not_shown(source, page_text(page.invoice_html(source, lang)), lang) == []


def values_not_shown(source: bytes, text: str, lang: str) -> list[tuple[str, str, str]]:
    """The leaves of canonical `source` whose value, as the page formats it in `lang`, is not in `text`."""
    missing = []
    for leaf in etree.fromstring(source).iter(f"{{{C}}}*"):
        if len(leaf) or leaf.text is None or etree.QName(leaf).localname == "attachedDocument":
            continue  # (an attached document is listed by its file name, not printed as base64)
        value = leaf.text.strip()
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}(Z|[+-]\d{2}:\d{2})?", value):   # a time zone is shown after the day
            y, m, d = value[:10].split("-")
            shown = f"{d}.{m}.{y}" if lang == "de" else None
            if shown is None:
                import datetime
                dt = datetime.date(int(y), int(m), int(d))
                shown = f"{dt.day} {dt.strftime('%B')} {y}"
            shown += f" {value[10:]}" if value[10:] else ""
        elif etree.QName(leaf).localname in NUMERIC or "Amount" in etree.QName(leaf).localname:
            shown = format_number(Decimal(value), lang, leaf)
        elif etree.QName(leaf).localname == "accountIdentifier" or etree.QName(leaf).localname == "debtorAccountIdentifier":
            shown = value if not re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]{8,30}", value) else \
                " ".join(value[i:i + 4] for i in range(0, len(value), 4))
        else:
            shown = " ".join(value.split())
        if shown not in text:
            missing.append((etree.QName(leaf).localname, value, shown))
    return missing


def format_number(v: Decimal, lang: str, leaf) -> str:
    name = etree.QName(leaf).localname
    if "Amount" in name or name == "amount":
        s = f"{v:,.2f}"
    else:
        s = f"{v.normalize():,f}"
        if name in ("netPrice", "grossPrice", "priceDiscount") and "." not in s:
            s += ".00"
        elif name in ("netPrice", "grossPrice", "priceDiscount") and len(s.split(".")[1]) == 1:
            s += "0"
    if lang == "de":
        s = s.replace(",", "_").replace(".", ",").replace("_", ".")
    return s


MM = 72 / 25.4
PAGE_MARGINS_MM = {"left": 16, "right": 14}  # templates/invoice.css @page


def layout_faults(pdf: bytes, tmp_path: Path) -> list[str]:
    """Words laid out where a reader cannot read them (pdftotext -bbox), which a text extractor still finds:
    beyond the page's left or right margin (cut off), or on top of another word (overlapping)."""
    out = pdftotext(pdf, tmp_path, "-bbox")
    faults = []
    for n, (width, body) in enumerate(re.findall(r'<page width="([\d.]+)"[^>]*>(.*?)</page>', out, re.S), start=1):
        left, right = PAGE_MARGINS_MM["left"] * MM - 1, float(width) - PAGE_MARGINS_MM["right"] * MM + 1
        words = [(float(x0), float(y0), float(x1), float(y1), w) for x0, y0, x1, y1, w in re.findall(
            r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*?)</word>', body)]
        faults += [f"page {n}: {w!r} beyond the margin ({x0:.0f}-{x1:.0f} pt)"
                   for x0, _, x1, _, w in words if x0 < left or x1 > right]
        for i, (ax0, ay0, ax1, ay1, a) in enumerate(words):
            for bx0, by0, bx1, by1, b in words[i + 1:]:
                if min(ax1, bx1) - max(ax0, bx0) > 1 and min(ay1, by1) - max(ay0, by0) > 1:
                    faults.append(f"page {n}: {a!r} overlaps {b!r}")
    return faults


@pytest.mark.parametrize("lang", ["en", "de"])
def test_nothing_is_cut_off_or_overlaps(source, lang, tmp_path):
    """Every word lies within the text area and on no other word: e.g. payee, tax representative and delivery
    side by side share the width instead of running off the right edge, and a long label pushes its value aside
    instead of running into it."""
    pdf = page.html_to_pdf(page.invoice_html(source, lang, "EN 16931"))
    assert layout_faults(pdf, tmp_path) == []


@pytest.mark.parametrize("lang, counter", [("en", "Page {} of {}"), ("de", "Seite {} von {}")])
def test_the_page_counter_stays_on_one_line_beside_a_long_footer(lang, counter, tmp_path):
    """The footer's two boxes have set widths (82% / 18%; WeasyPrint then measures neither on every page): a seller
    name long enough to wrap the footer line does not squeeze the page counter into two lines."""
    request = invoice_request(10, "EN16931", lang)
    request["invoice"]["seller"]["name"] = "Muster Consulting und Beratung fuer sehr lange Firmennamen im " \
                                           "Handelsregister eingetragene GmbH & Co. KG Niederlassung Sued"
    pdf = page.html_to_pdf(page.invoice_html(canonical_of(request), lang, "EN 16931"))
    pages = pdf_pages(pdf, tmp_path)
    assert len(pages) > 1 and all(counter.format(i, len(pages)) in p for i, p in enumerate(pages, 1)), pages
    assert layout_faults(pdf, tmp_path) == []


@pytest.mark.parametrize("lang, heading, label", [("en", "SELLER TAX REPRESENTATIVE", "VAT ID"),
                                                    ("de", "STEUERLICHER VERTRETER", "USt-IdNr.")])
def test_a_party_block_is_not_split_across_pages(lang, heading, label, tmp_path):
    """invoice-all-fields fills page 1 up to the payee / tax representative / delivery row: the row goes to page 2
    whole, not with the representative's VAT ID alone at the top of page 2 under no heading."""
    body = json.loads(ALL_FIELDS.read_text())
    body["config"] = {"syntax": "CII"}
    pages = pdf_pages(page.html_to_pdf(page.invoice_html(canonical_of(body), lang, "EN 16931")), tmp_path)
    vat_id = body["invoice"]["sellerTaxRepresentativeParty"]["vatIdentifier"]
    [on] = [n for n, p in enumerate(pages) if vat_id in p]
    assert heading in pages[on] and re.search(rf"{re.escape(label)}\s+{vat_id}", pages[on])


# Free-text fields (names, addresses, references, notes, descriptions): the codes, dates, numbers, identifiers
# and addresses with a format of their own keep their fixture values.
FORMATTED = re.compile(r"Code|SchemeId|Date|country|currency|^vat|unit|Identifier$|attachedDocument|Mime|Origin|"
                       r"electronicAddress$|email|telephone", re.I)


def with_long_words(value, key: str = ""):
    """Every free-text value of a request replaced by one 70-character word (no break opportunity)."""
    if isinstance(value, dict):
        return {k: with_long_words(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [with_long_words(v, key) for v in value]
    if isinstance(value, str) and not FORMATTED.search(key):
        return "Unbreakable" * 5 + key[:15].ljust(15, "x")
    return value


@pytest.mark.parametrize("lang", ["en", "de"])
def test_long_words_wrap_inside_their_box(lang, tmp_path):
    """A value longer than its column (a long reference, name or note without spaces) is broken inside its box:
    nothing runs off the page or over its neighbour."""
    body = json.loads(ALL_FIELDS.read_text())
    body["invoice"] = with_long_words(body["invoice"])
    body["invoice"]["seller"]["identifier"] = "9" * 60
    body["config"] = {"syntax": "CII"}
    src = canonical_of(body)
    assert ("Unbreakable" * 5).encode() in src
    pdf = page.html_to_pdf(page.invoice_html(src, lang, "EN 16931"))
    assert layout_faults(pdf, tmp_path) == []


# The official sample invoices, each on a page in one of the two languages, taking turns.
CORPUS_PAGES = [(source, ("en", "de")[n % 2]) for n, (_, source, _) in enumerate(CORPUS_CASES)]


@pytest.mark.slow
@pytest.mark.parametrize("source_file,lang", CORPUS_PAGES, ids=[f"{s.name}-{lang}" for s, lang in CORPUS_PAGES])
def test_official_samples_fit_the_page(source_file, lang, tmp_path):
    """Real invoices (the XRechnung test suite and the CEN examples, read as the reading side reads them, complete
    for the model or not) render with no word cut off or on top of another."""
    pdf = page.html_to_pdf(page.invoice_html(parse(source_file.read_bytes()).canonical, lang, "EN 16931"))
    assert layout_faults(pdf, tmp_path) == []


def test_only_characters_no_font_can_draw_are_replaced():
    assert page.drawable("Rechnung 2024") == "Rechnung 2024"
    assert page.drawable("Müller 上海 Ωμέγα \U0001F642") == "Müller 上海 Ωμέγα \U0001F642"
    # default-ignorable characters need no glyph (joiner, variation selector, soft hyphen, bidi mark): kept
    assert page.drawable("a\u200db\ufe0fc\u00add\u200fe") == "a\u200db\ufe0fc\u00add\u200fe"
    assert page.drawable("x\U00013000y\U0010FFFDz") == "x\ufffdy\ufffdz"
    assert page.drawable("a\x01b\x00c\x1fd\te\nf") == "a\ufffdb\ufffdc\ufffdd\te\nf"  # XML cannot carry them


def test_a_line_separator_in_a_value_breaks_the_line_and_stays_in_the_xml():
    """U+2028 in the seller's name: Pango broke the line and drew the separator with a glyph the font subset lacks,
    which the PDF/A gate refused (422 with no field to fix). The page breaks the line; the XML keeps the value."""
    from pipeline.flows.generate_zugferd import generate_zugferd
    assert page.drawable("a\u2028b\u2029c") == "a\nb\u2029c"
    request = invoice_request(3, "EN16931")
    request["invoice"]["seller"]["name"] = "Muster\u2028Consulting GmbH"
    pdf = generate_zugferd(json.dumps(request).encode())
    assert parse(pdf).invoice["seller"]["name"] == "Muster\u2028Consulting GmbH"


def test_a_direction_override_in_a_value_ends_with_the_value(tmp_path):
    """A right-to-left override (U+202E) sent in the seller's name reversed the rest of the PDF's footer line, the
    invoice number and the date included (UAX #9: to the end of the paragraph). Each such value is isolated on the
    page now; the name itself still shows as its sender wrote it, the documents keep it as sent."""
    request = invoice_request(1)
    request["invoice"]["seller"]["name"] = "Müller \u202eevil"
    number = request["invoice"]["invoiceNumber"]
    src = canonical_of(request)
    assert "\u202e".encode() in src  # the canonical XML (and so the documents) carry it as sent
    first = pdf_pages(page.html_to_pdf(page.invoice_html(src, "en", "EN 16931")), tmp_path)[0]
    footer = next(line for line in first.splitlines() if "Page 1 of" in line)
    assert number in footer and "Factur-X profile EN 16931" in footer, footer
    assert "Müller live" in footer  # the override still turns its own value around
    plain = canonical_of(invoice_request(1))
    assert bidi.isolated_values(plain) is plain  # a page without such characters is written from the XML as it is
    # what a value opens is closed inside it; a closer without its opener would close the page's own: left out
    assert bidi.isolate("\u202eevil") == "\u2068\u202eevil\u202c\u2069"
    assert bidi.isolate("a\u202cb\u2069c") == "\u2068abc\u2069"
    assert bidi.isolate("\u2067\u202ex\u2069y\u202b") == "\u2068\u2067\u202ex\u2069y\u202b\u202c\u2069"


def test_labels_and_formats_follow_the_language_content_is_not_translated():
    src = canonical_of(invoice_request(3))
    en, de = page_text(page.invoice_html(src, "en")), page_text(page.invoice_html(src, "de"))
    assert "Invoice details" in en and "Rechnungsangaben" in de
    assert "Amount due for payment" in en and "Zahlbetrag" in de
    assert "1 March 2024" in en and "01.03.2024" in de
    assert "DE02 1203 0000 0000 2020 51" in en and "DE02 1203 0000 0000 2020 51" in de
    # the user's German text stays German in the English page
    assert "Vielen Dank für Ihren Auftrag & die gute Zusammenarbeit <Team Nord>." in en
    assert "Rabatt" in en and "Treuerabatt" in en


def test_language_codes():
    assert page.language_of(None) == "en"
    assert page.language_of("DE") == "de"
    for bad in ("de-DE", "fr", "", "english"):
        with pytest.raises(ApiError) as exc:
            page.language_of(bad)
        assert exc.value.http_status == 400 and exc.value.errors[0].field == "config.metadataLanguage"


@pytest.mark.parametrize("lang,page_word,of_word,unit_price", [("en", "Page", "of", "Unit price"),
                                                                ("de", "Seite", "von", "Einzelpreis")])
def test_long_invoice_breaks_across_pages_with_repeated_headers(tmp_path, lang, page_word, of_word, unit_price):
    src = canonical_of(invoice_request(120))
    pdf = page.html_to_pdf(page.invoice_html(src, lang, "EN 16931"))
    pages = pdf_pages(pdf, tmp_path)
    n = len(pages)
    assert n >= 4
    for i, text in enumerate(pages, start=1):
        assert f"{page_word} {i} {of_word} {n}" in text
        if 1 < i < n:  # every page holding lines repeats the table header
            assert unit_price in text
    assert "RE-2024-0815" in pages[-1]


def test_weasyprint_fetches_nothing(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    html = (f'<html><head><link rel="stylesheet" href="file://{tmp_path}/x.css"></head><body>'
            f'<img src="file://{secret}"><img src="http://127.0.0.1:9/x.png">'
            f'<object data="file://{secret}"></object><p>visible</p></body></html>').encode()
    with pytest.raises(page.FetchRefused):
        page.refuse_all_urls(f"file://{secret}")
    pdf = page.html_to_pdf(html)
    text = "".join(pdf_pages(pdf, tmp_path))
    assert "visible" in text and "TOP-SECRET" not in text


def test_user_text_cannot_inject_markup():
    req = invoice_request(1)
    req["invoice"]["invoiceNote"] = '<img src="http://evil.example/x.png"><script>alert(1)</script>'
    html = page.invoice_html(canonical_of(req), "en")
    doc = lxml_html.fromstring(html)
    assert not doc.xpath("//img | //script")
    assert '<script>alert(1)</script>' in page_text(html)


def weasyprint_reference(html: bytes) -> bytes:
    """The same page through WeasyPrint's own entry point: its HTML5 parser and full user-agent stylesheet."""
    from weasyprint import HTML

    w = page._weasyprint()
    return HTML(string=html.decode("utf-8"), url_fetcher=w["fetcher"], base_url=None).write_pdf(
        stylesheets=[w["css"]], font_config=w["fonts"], pdf_variant="pdf/a-3b", pdf_identifier=None,
        custom_metadata=False)


@pytest.mark.parametrize("lang", ["en", "de"])
def test_fast_path_renders_the_same_pdf_as_weasyprints_entry_point(source, lang):
    """page.html_to_pdf parses with libxml2 and uses templates/page-ua.css instead of WeasyPrint's HTML5 parser
    and user-agent stylesheet; the PDF must be the same, byte for byte (a default missing from page-ua.css, or
    a parse difference, would change it)."""
    html = page.invoice_html(source, lang, "EN 16931")
    assert page.html_to_pdf(html) == weasyprint_reference(html)


def test_the_garbage_collector_is_paused_for_a_render_and_restored_after_it(monkeypatch):
    """WeasyPrint renders with Python's cyclic collector off (`pipeline.pdf.collector`: its passes cost 8-10% of a
    long page); afterwards the collector is as it was, also when the render fails, and a caller that had turned it
    off keeps it off."""
    import gc

    seen = []
    cls = page._weasyprint()["page"]
    write = cls.write_pdf

    def spy(self, *args, **kwargs):
        seen.append(gc.isenabled())
        return write(self, *args, **kwargs)

    monkeypatch.setattr(cls, "write_pdf", spy)
    assert gc.isenabled()
    assert page.html_to_pdf(b"<html><body><p>1</p></body></html>").startswith(b"%PDF-")
    assert seen == [False] and gc.isenabled()
    monkeypatch.setattr(cls, "write_pdf", lambda self, *a, **k: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        page.html_to_pdf(b"<html><body><p>2</p></body></html>")
    assert gc.isenabled()
    gc.disable()
    try:
        monkeypatch.setattr(cls, "write_pdf", spy)
        page.html_to_pdf(b"<html><body><p>3</p></body></html>")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_page_ua_stylesheet_covers_every_element_of_the_page(source):
    """Each element xslt/html.xsl writes is named in templates/page-ua.css (whose header lists them)."""
    header = page.UA_CSS_FILE.read_text().split("*/")[0]
    listed = set(re.search(r"\(([a-z0-9 ]+)\)", " ".join(header.split())).group(1).split())
    written = {el.tag for el in lxml_html.document_fromstring(page.invoice_html(source, "en")).iter()
               if isinstance(el.tag, str)}
    assert written <= listed, written - listed


# ---- the page of an incoming invoice (POST /v1/invoice/render, `pipeline render`) --------------------------------

RECEIVED = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"


@pytest.fixture(scope="module")
def client():
    import falcon.testing

    from pipeline.service.app import create_app
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.mark.slow
@pytest.mark.parametrize("source_file", [s for _, s, _ in CORPUS_CASES[::4]], ids=[s.name for _, s, _ in CORPUS_CASES[::4]])
def test_the_page_of_a_received_invoice_shows_what_a_clerk_approves(client, source_file, tmp_path):
    """Invoice number, seller, buyer, every line's item name and the amount due are on the page."""
    from test_parse import upload
    resp = upload(client, source_file.read_bytes(), path="/v1/invoice/render")
    assert resp.status_code == 200 and resp.headers["content-type"] == "application/pdf"
    text = " ".join(pdftotext(resp.content, tmp_path, "-raw").split())
    invoice = parse(source_file.read_bytes()).invoice
    wanted = [invoice["invoiceNumber"], invoice["seller"]["name"], invoice["buyer"]["name"]]
    wanted += [" ".join(line["itemInformation"]["name"].split()) for line in invoice["invoiceLines"]]
    for value in wanted:
        assert " ".join(value.split())[:30] in text, value
    due = invoice["documentTotals"]["payableAmount"]
    assert f"{due:,.2f}" in text, due


def test_render_answers_html_on_request_and_406_for_neither(client):
    from test_parse import upload
    html = upload(client, RECEIVED.read_bytes(), {"metadataLanguage": "de"}, path="/v1/invoice/render",
                  headers={"Accept": "text/html"})
    assert html.status_code == 200 and html.headers["content-type"].startswith("text/html")
    assert "Rechnungsnummer" in page_text(html.content) and "<script" not in html.text
    assert upload(client, RECEIVED.read_bytes(), path="/v1/invoice/render",
                  headers={"Accept": "application/json"}).status_code == 406
    assert upload(client, b"<a/>", path="/v1/invoice/render").status_code == 400


def test_a_pdf_page_past_the_line_limit_is_refused_before_layout_html_is_not(client, monkeypatch):
    """WeasyPrint lays out ~7 ms a line: the 18,000 lines an upload may hold would outlast the worker timeout.
    The render answers as ZUGFeRD generation does past EINVOICE_MAX_PDF_LINES; HTML has no layout cost."""
    from pipeline.settings import get_settings
    from test_parse import upload

    monkeypatch.setenv("EINVOICE_MAX_PDF_LINES", "1")
    get_settings.cache_clear()
    try:
        started = time.perf_counter()
        resp = upload(client, RECEIVED.read_bytes(), path="/v1/invoice/render")
        refused_in = time.perf_counter() - started
        html = upload(client, RECEIVED.read_bytes(), path="/v1/invoice/render", headers={"Accept": "text/html"})
    finally:
        monkeypatch.delenv("EINVOICE_MAX_PDF_LINES")
        get_settings.cache_clear()
    assert resp.status_code == 400, resp.text
    [err] = resp.json["errors"]
    assert (err["code"], err["field"], err["businessTerm"], err["rejectedValue"]) == ("TOO_MANY_LINES", "file",
                                                                                      "BG-25", 2)
    assert "Accept: text/html" in resp.json["message"] and refused_in < 2
    assert html.status_code == 200 and "123456XX" in page_text(html.content)
    assert upload(client, RECEIVED.read_bytes(), path="/v1/invoice/render").status_code == 200


def test_business_terms_and_the_verdict_are_on_the_page_when_asked(client):
    from test_parse import upload
    broken = RECEIVED.read_bytes().replace(b"<ram:DuePayableAmount>", b"<ram:DuePayableAmount>1", 1)
    plain = page_text(upload(client, broken, path="/v1/invoice/render", headers={"Accept": "text/html"}).content)
    assert "BT-1 Invoice number" not in plain and "BR-CO-16" not in plain
    shown = page_text(upload(client, broken, {"showBusinessTerms": True, "validate": True}, path="/v1/invoice/render",
                             headers={"Accept": "text/html"}).content)
    assert "Invalid" in shown and "BR-CO-16" in shown  # the verdict box with the failed rule
    assert re.search(r"BT-1 Invoice number\s*123456XX", shown) and re.search(r"BT-115 Amount due for payment\s*1", shown)


def test_cli_render(tmp_path):
    out = tmp_path / "page.pdf"
    done = subprocess.run([sys.executable, "-m", "pipeline", "render", str(RECEIVED), "--lang", "de", "--validate",
                           "-o", str(out)], capture_output=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    text = pdftotext(out.read_bytes(), tmp_path, "-raw")
    assert "Gültig" in text and "123456XX" in text


def test_an_attached_document_is_listed_by_its_size_not_its_base64():
    """showBusinessTerms on an invoice with a ~200 KB attachment: the list names its size (laying out the base64
    took WeasyPrint minutes)."""
    from pipeline.flows.render import render
    source = next((CORPUS / "xrechnung-testsuite").rglob("01.15a-INVOICE_uncefact.xml")).read_bytes()
    html = render(source, "en", business_terms=True, html=True)
    assert b"bytes (base64)" in html and len(html) < 100_000
    assert render(source, "en", business_terms=True).startswith(b"%PDF-")


def test_long_line_ids_and_long_words_wrap_readably(tmp_path):
    """The No. column widens for long line ids, which then break after their own separators (not a letter a row),
    and a long German word of an item name is hyphenated, not cut without a hyphen."""
    from pipeline.cli.golden import FIXTURES

    request = json.loads((FIXTURES / "vat-g-export.json").read_text())
    line = request["invoice"]["invoiceLines"][0]
    request["invoice"]["invoiceLines"] = [
        {**line, "lineIdentifier": "POS-0001-LANGE-KENNUNG",
         "itemInformation": {**line["itemInformation"], "name": "Donaudampfschifffahrtsgesellschaftskapitänsmütze"}},
        {**line, "lineIdentifier": "2"}]
    canonical = normalize(json.dumps(request).encode(), "zugferd")[1]
    html = page.invoice_html(canonical, "de")
    assert b'class="lines ids-long"' in html
    text = pdf_pages(page.html_to_pdf(html), tmp_path)[0]
    rows = [line.split() for line in text.splitlines()]
    pieces = [row[0] for row in rows if row and row[0] in ("POS-0001-", "LANGE-", "KENNUNG", "POS-0001-LANGE-", "LANGE-KENNUNG")]
    assert "".join(pieces) == "POS-0001-LANGE-KENNUNG", text  # whole parts after each hyphen
    # the word's pieces, each but the last ending with a hyphen (or U+2010), follow one another and make it whole
    whole, words = "Donaudampfschifffahrtsgesellschaftskapitänsmütze", [w for row in rows for w in row]
    pieces = [next(w for w in words if w.startswith("Donau"))]
    rest = whole[len(pieces[0]) - 1:]
    while pieces[-1].endswith(("-", "\u2010")) and len(pieces) < 6:
        pieces.append(next((w for w in words if len(w) > 2 and rest.startswith(w.rstrip("-\u2010"))), ""))
        rest = rest[len(pieces[-1].rstrip("-\u2010")):]
    assert len(pieces) > 1 and "".join(w[:-1] for w in pieces[:-1]) + pieces[-1] == whole, pieces


def _bbox_words(pdf: bytes, tmp_path: Path) -> list[tuple[float, float, float, str]]:
    """Page 1's words as (xMin, yMin, xMax, text)."""
    body = pdftotext(pdf, tmp_path, "-bbox").split("</page>")[0]
    return [(float(x0), float(y0), float(x1), w) for x0, y0, x1, w in re.findall(
        r'<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="[\d.]+">(.*?)</word>', body)]


@pytest.mark.parametrize("lang", ["en", "de"])
def test_party_values_wrap_inside_their_own_column(lang, tmp_path):
    """Seller and buyer of the all-fields fixture: labels and values in two columns. A value's words all lie in the
    value column, every line of it starting at the column's edge: before, a long value wrapped back under the label
    ("rechnung@muster-software.de" / "(EM)") and a long label ("Legal registration ID") pushed its value right."""
    body = json.loads(ALL_FIELDS.read_text())
    body["config"] = {"syntax": "CII"}
    html = page.invoice_html(canonical_of(body), lang, "EN 16931")
    words = _bbox_words(page.html_to_pdf(html), tmp_path)
    doc = lxml_html.document_fromstring(html)
    label_width = 30 * MM  # templates/invoice.css: dl.ids dt
    headings = [w for w in words if w[3] in {"en": ("SELLER", "BUYER", "INVOICE"),
                                              "de": ("VERKÄUFER", "KÄUFER", "RECHNUNGSANGABEN")}[lang]]
    (seller, *_), (buyer, *_), (_, details_y, *_) = [h[:2] for h in headings[:3]]
    for name, left, right in (("seller", seller, buyer), ("buyer", buyer, 1e9)):
        party = doc.find_class(name)[0]
        texts = lambda tag: " ".join(e.text_content() for e in party.iter(tag)).split()  # noqa: E731
        labels, values = texts("dt"), texts("dd")
        others = " ".join(e.text_content() for e in party if e.tag != "dl").split()  # name, address
        inside = [w for w in words if left - 1 <= w[0] < right - 1 and headings[0][1] < w[1] < details_y]

        def part_of(word, pool):
            return any(word.rstrip("\u2010-") in p for p in pool)

        value_lines: dict[float, float] = {}
        for x0, y0, x1, w in inside:
            if part_of(w, values) and not part_of(w, labels + others):
                assert x0 >= left + label_width - 0.5, f"{name}: value word {w!r} under the labels"
                value_lines[round(y0)] = min(x0, value_lines.get(round(y0), 1e9))
            elif part_of(w, labels) and not part_of(w, values + others):
                assert x1 <= left + label_width, f"{name}: label word {w!r} in the value column"
        assert len(value_lines) >= 6 and all(abs(x - (left + label_width)) < 0.5 for x in value_lines.values()), \
            (name, value_lines)
