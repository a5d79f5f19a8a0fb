"""What a newcomer read on the page's job list and status line, in headless chromium against a started
`pipeline serve` (embedded SQLite jobs), with a real ZUGFeRD PDF of ../shared/realworld whose embedded XML breaks
the schema:

- an XSD finding named the element in Clark notation, "Element '{urn:un:unece:uncefact:data:standard:
  ReusableAggregateBusinessInformationEntity:100}Name'", 90 characters of namespace where the report for people says
  "ram:Name": the list now writes it with the document's prefix, which the finding's path gives (the JSON keeps it);
- the same rule's text at several places stood there as often, three equal lines ("BR-S-02: An Invoice that
  contains ...") hiding the document's other findings behind "and 9 more": now once, with how often;
- under a text file (no invoice page: "the file is not a readable e-invoice") the page still offered "Invoice as
  JSON", which answers 400 for it: now offered where the page has the invoice;
- the German page said "Fertig in 0.2 s." among German numbers ("5.000 Dokumente"): now "0,2 s"."""
from __future__ import annotations

import re
import zipfile

import requests

from conftest import SHARED
from test_web_browser import WAIT, by_id, browser, enter_key, live, page, screenshots, validate, wait  # noqa: F401
from test_web_browser import follow_job, start_job

BROKEN_PDF = SHARED / "realworld/corpus/ZUGFeRDv2/fail/MustangRE-20171118_506_ZUGFeRD1and2.pdf"
REPEATED = SHARED / "realworld/corpus/ZUGFeRDv2/fail/ZUGFeRD_2.0_fully_compliant_complete.pdf"  # BR-S-02 on each line
CLARK_NAME = "{urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100}Name"


def test_the_job_list_names_elements_with_the_documents_prefixes(page, live, tmp_path, screenshots):  # noqa: F811
    server, token = live
    # the service's JSON says it in Clark notation, with the prefixed path beside it
    answer = requests.post(f"{server.url}/v1/invoice/zugferd/validate", headers={"Authorization": f"Bearer {token}"},
                           files={"file": (BROKEN_PDF.name, BROKEN_PDF.read_bytes())}, timeout=WAIT).json()
    xsd = next(i for i in answer["issues"] if i["code"] == "XSD-ELEMENT-CONTENT")
    assert CLARK_NAME in xsd["message"] and xsd["location"]["xpath"].endswith("/ram:Name"), xsd
    repeated = requests.post(f"{server.url}/v1/invoice/zugferd/validate", headers={"Authorization": f"Bearer {token}"},
                             files={"file": (REPEATED.name, REPEATED.read_bytes())}, timeout=WAIT).json()
    times = sum(1 for i in repeated["issues"] if i["code"] == "BR-S-02")
    assert times >= 3
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(BROKEN_PDF, BROKEN_PDF.name)
        z.write(REPEATED, REPEATED.name)
    start_job(page, server.url, token, "en", "job-files", archive)
    follow_job(page)
    wait(page, lambda d: len(d.find_elements("css selector", "#job-documents li.invoice")) == 2, WAIT)
    listed = by_id(page, "job-documents").text
    page.save_screenshot(str(screenshots / "job-prefixed-names.png"))
    # (each line: the rule, the first business term the JSON names, the text)
    assert "XSD-ELEMENT-CONTENT · BG-16: Element 'ram:Name': This element is not expected." in listed, listed
    assert "{urn:" not in listed, listed
    # the rule at each line: one line that says how often
    lines = [line for line in listed.splitlines() if line.startswith("BR-S-02 · BG-25: ")]
    assert len(lines) == 1 and lines[0].endswith(f"(BT-63). ({times} times)"), lines


def test_the_german_status_line_writes_seconds_with_a_decimal_comma(page, live):  # noqa: F811
    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    validate(page, BROKEN_PDF)
    done = by_id(page, "validate-status").text
    assert re.fullmatch(r"Fertig in \d+,\d s\.", done), done


def test_invoice_as_json_is_offered_only_where_there_is_an_invoice(page, live, tmp_path):  # noqa: F811
    server, token = live
    text = tmp_path / "notes.txt"
    text.write_text("Bitte bis Freitag zurückrufen.\n")
    enter_key(page, token)
    buttons = lambda: [b.text for b in page.find_elements("css selector", "#result button[data-download]")  # noqa: E731
                       if b.is_displayed()]
    validate(page, text)
    wait(page, lambda d: by_id(d, "invoice-error").is_displayed(), WAIT)
    assert buttons() == ["JSON report", "PDF report"], buttons()
    # the service says the same: no invoice to give as JSON
    answer = requests.post(f"{server.url}/v1/invoice/parse", headers={"Authorization": f"Bearer {token}"},
                           files={"file": (text.name, text.read_bytes())}, timeout=WAIT)
    assert answer.status_code == 400, answer.text
    # a real invoice next: offered again
    validate(page, BROKEN_PDF)
    wait(page, lambda d: by_id(d, "invoice-frame").get_attribute("srcdoc"), WAIT)
    assert "Invoice as JSON" in buttons(), buttons()
