"""What a German reader was shown in English or in a broken form (issue 38), looked at in headless chromium against a
started `pipeline serve` and in the reports for people:

- the file inputs painted the browser's own "Choose File" / "No file chosen" / "5 files" on the German page: the
  page's own picker says "Datei auswählen", "Keine Datei ausgewählt", "5 Dateien" (the input stays in the tab order);
- counts read "1 Datei(en)", "1 file(s)": each says its number's form ("1 Datei, die keine ... ist", "2 Dateien");
- a German report carried the English summary sentence beneath the German one (an English report keeps the German
  one beneath: the BMF letter's own terms);
- a PDF finding's place (no line) began with a stray "·" ("· obj 8 0")."""
from __future__ import annotations

from lxml import html as lxml_html

from conftest import CORPUS
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.flows.validation_report import readable_report
from test_web_browser import WAIT, by_id, browser, enter_key, live, page, screenshots, wait  # noqa: F401

VALID = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
ZUGFERD = CORPUS / "mustangproject/validator/validXRechnung.pdf"
PICKERS = ("file", "request-file", "job-files", "job-folder", "status-files")


def _pickers(driver) -> dict[str, tuple[str, str, dict]]:
    """input id -> (its picker's button, what it says was chosen, the input's painted size)."""
    found = {}
    for input_id in PICKERS:
        label = driver.find_element("css selector", f'label.picker[for="{input_id}"]')
        size = by_id(driver, input_id).size
        found[input_id] = tuple(label.find_element("css selector", part).get_attribute("textContent")
                                for part in (".pick", ".picked")) + (size,)  # (textContent: also in a hidden tab)
    return found


def test_the_german_page_paints_its_own_file_pickers_and_counts(page, live, tmp_path, screenshots):  # noqa: F811
    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    shown = _pickers(page)
    assert {k: v[:2] for k, v in shown.items() if k in ("file", "job-folder")} == {
        "file": ("Datei auswählen", "Keine Datei ausgewählt"), "job-folder": ("Ordner auswählen", "Keine Datei ausgewählt")}
    assert all(size["width"] <= 1 and size["height"] <= 1 for _, _, size in shown.values()), shown  # no native button
    body = page.find_element("tag name", "body").text
    assert "Choose File" not in body and "No file chosen" not in body
    # a folder of an invoice and a note: the picker counts both, the job leaves the note out in the singular
    folder = tmp_path / "eingang"
    folder.mkdir()
    (folder / "rechnung.xml").write_bytes(VALID.read_bytes())
    (folder / "notiz.txt").write_text("Bitte zahlen.")
    by_id(page, "tab-jobs").click()
    by_id(page, "job-folder").send_keys(str(folder))
    assert _pickers(page)["job-folder"][1] == "2 Dateien"
    by_id(page, "job-button").click()
    wait(page, lambda d: by_id(d, "job-skipped").text)
    page.save_screenshot(str(screenshots / "german-pickers-and-counts.png"))
    assert by_id(page, "job-skipped").text == ("Aus dem Ordner weggelassen: 1 Datei, die keine .xml-, .pdf-, .eml-, "
                                               ".emlx-, .mbox-, .msg-, .p7m- oder .zip-Datei ist und keine E-Mail "
                                               "enthält (eingang/notiz.txt).")
    wait(page, lambda d: "1 von 1 Dokument:" in by_id(d, "job-status").text, WAIT)
    # the page's formatter, as every count line uses it: the number's form in both languages
    fmt = "return window.einvoicePage.fmt(arguments[0], arguments[1])"
    strings = page.execute_script("return window.einvoicePage.t")
    assert page.execute_script(fmt, strings["job_uploading"], {"count": 1}) == "1 Datei wird hochgeladen…"
    assert page.execute_script(fmt, strings["job_uploading"], {"count": "5.000"}) == "5.000 Dateien werden hochgeladen…"
    assert page.execute_script(fmt, strings["job_list_none"], {"count": 1}) == "Das geprüfte Dokument ist gültig"
    page.get(f"{server.url}/?lang=en")
    strings = page.execute_script("return window.einvoicePage.t")
    assert page.execute_script(fmt, strings["job_list_none"], {"count": "3"}) == "All 3 documents checked are valid"
    assert page.execute_script(fmt, strings["convert_lost"], {"count": 1}) == "1 value of the source left out."


def test_the_file_picker_is_reached_and_named_by_keyboard(page, live):  # noqa: F811
    """The native input is unseen, not gone: Tab reaches it, and its picker shows that it has the focus."""
    server, _ = live
    page.get(f"{server.url}/?lang=de")
    page.execute_script("document.getElementById('file').focus()")
    assert page.switch_to.active_element.get_attribute("id") == "file"
    outline = page.execute_script("return getComputedStyle(document.querySelector("
                                  "'label.picker[for=\"file\"] .pick')).outlineStyle")
    assert outline == "solid", outline


def _verdict_box(page: bytes) -> lxml_html.HtmlElement:
    return lxml_html.fromstring(page).xpath("//section[contains(@class, 'verdict')]")[0]


def test_a_german_report_is_german_and_a_pdf_finding_s_place_starts_with_its_object():
    data = ZUGFERD.read_bytes()
    report = validate_pdf(data)
    assert any(i.location and i.location.pdfObject and not i.location.line for i in report.issues)
    german = lxml_html.fromstring(readable_report(data, report, "z.pdf", "de"))
    places = [w.text_content().strip() for w in german.xpath("//div[@class='where']")]
    assert places and not [p for p in places if p.startswith("·")], places
    assert any(p.startswith("obj ") for p in places), places
    # the summary: German alone in a German report, the German beneath the English in an English one
    assert not _verdict_box(readable_report(data, report, "z.pdf", "de")).xpath("p[@class='meaning-also']")
    xml = VALID.read_bytes()
    valid = validate_xml(xml, "xrechnung")
    beneath = _verdict_box(readable_report(xml, valid, "x.xml", "en")).xpath("p[@class='meaning-also']")
    assert [(p.get("lang"), p.text_content()) for p in beneath] == [("de", valid.meaning("de"))]
    text = " ".join(_verdict_box(readable_report(xml, valid, "x.xml", "de")).text_content().split())
    assert valid.meaning("en") not in text and "Kein Fehler" in text


def test_the_generate_button_stands_apart_from_the_options_above(page, live):  # noqa: F811
    """The generate tab's button touched the endpoint and syntax selects above it (0 px between them)."""
    server, _ = live
    page.get(f"{server.url}/?lang=de")
    by_id(page, "tab-generate").click()
    gap = page.execute_script("""const button = document.getElementById('generate-button').getBoundingClientRect();
        const row = document.getElementById('endpoint').closest('.row').getBoundingClientRect();
        return button.top - row.bottom;""")
    assert gap >= 8, gap
