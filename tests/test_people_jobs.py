"""The page's jobs tab as a newcomer uses it, in headless chromium against a started `pipeline serve` (embedded
SQLite jobs): a ZIP of a dozen real invoices (valid and invalid XML, ZUGFeRD and Factur-X PDFs from
../shared/realworld) goes up as one job, the page follows it to its end, the person opens a document's findings and
downloads the reports, on a desktop and on a 375 px phone, in English and German.

On PostgreSQL the jobs run in `pipeline worker` processes: a newcomer who started `pipeline serve` alone saw
"queued, 0 of 12" for ever. The page now says, after a few seconds, that no worker has taken the job.

Before, a person could read three findings of each document ("and 24 more", which led nowhere) and download the
results as JSON Lines only: no report a person reads. Now "and 24 more" opens to them, the job asks each document's
report for people in the page's language (a box, on by default) and "Download the reports (ZIP)" gives them.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import uuid
import zipfile

import pytest
import requests

from conftest import SHARED
from pipeline.storage.postgres import PostgresStore
from test_platform_helpers import REPO, Server, cli, pg_url
from test_web_browser import WAIT, by_id, live, page, screenshots, wait, browser  # noqa: F401
from test_web_browser import follow_job, listed_findings, shown, start_job, visible

REAL = SHARED / "realworld" / "corpus"
DOZEN = ["XML-Rechnung/UBL/EN16931_Einfach.ubl.xml",
         "XML-Rechnung/UBL/not_validating_full_invoice_based_onTest_EeISI_300_CENfullmodel.ubl.xml",
         "XML-Rechnung/CII/EN16931_Rabatte.cii.xml",
         "XML-Rechnung/CII/not_validating_full_invoice_based_onTest_EeISI_300_CENfullmodel.cii.xml",
         "XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml", "XML-Rechnung/UBL/EN16931_OEPNV.ubl.xml",
         "ZUGFeRDv1/fail/Mustangproject/fail2.pdf", "ZUGFeRDv1/correct/Intarsys/ZUGFeRD_1p0_COMFORT_Rabatte.pdf",
         "XML-Rechnung/CII/EN16931_Einfach_negativePaymentDue.cii.xml",
         "XML-Rechnung/UBL/XRECHNUNG_Betriebskostenabrechnung.ubl.xml",
         "ZUGFeRDv2/correct/FNFE-factur-x-examples/Avoir_FR_type381_BASIC.pdf",
         "ZUGFeRDv2/correct/FNFE-factur-x-examples/Facture_DOM_MINIMUM.pdf"]
# What the jobs tab itself says (not the documents' names nor the official rules' texts), in German: no English word
ENGLISH = {"valid", "invalid", "indeterminate", "download", "results", "reports", "documents", "job", "done", "more",
           "and", "of", "not", "running", "queued", "report", "people", "document"}


@pytest.fixture(scope="module")
def dozen(tmp_path_factory):
    path = tmp_path_factory.mktemp("dozen") / "dozen.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name in DOZEN:
            archive.write(REAL / name, name.rsplit("/", 1)[-1])
    return path


@pytest.mark.parametrize("lang, width", [("en", 1280), ("de", 375)])
def test_a_zip_of_a_dozen_real_invoices_as_a_job(page, live, dozen, screenshots, lang, width):
    server, token = live
    auth = {"Authorization": f"Bearer {token}"}
    page.set_window_size(width, 1000)
    start_job(page, server.url, token, lang, "job-files", dozen)   # reports for people: the box is on by default
    status = follow_job(page)
    assert by_id(page, "job-html").is_selected()
    job_id = status.split()[1].rstrip(":")
    job = requests.get(f"{server.url}/v1/jobs/{job_id}", headers=auth, timeout=WAIT).json()
    assert job["state"] == "done" and job["total"] == 12 and job["valid"] >= 4 and job["invalid"] >= 4, job
    assert page.execute_script("const b = document.getElementById('job-progress'); return [b.value, b.max]") == [12, 12]
    word = {"en": ("valid", "invalid"), "de": ("gültig", "ungültig")}[lang]
    assert f"{job['valid']} {word[0]}" in status and f"{job['invalid'] - job['indeterminate']} {word[1]}" in status
    lines = {e["name"]: e for e in map(json.loads, requests.get(f"{server.url}/v1/jobs/{job_id}/results",
                                                                headers=auth, timeout=WAIT).text.splitlines())}
    assert len(lines) == 12 and all("report" in e for e in lines.values())
    assert all(e["report"]["summary"]["meaning"] for e in lines.values())

    # a document's findings beyond the first three: "and N more" opens to every error of its report
    wait(page, lambda d: d.find_elements("css selector", "#job-documents li.invoice"))
    items = page.find_elements("css selector", "#job-documents > li.invoice")
    assert len(items) == 12 - job["valid"]
    opened = 0
    for item in items:
        name = item.find_element("css selector", ".name").text
        more = item.find_elements("css selector", "li.more details")
        if not more:
            continue
        more[0].find_element("css selector", "summary").click()
        # each finding once (the same one at several places: "(3 times)")
        errors = [i["code"] for i, _ in listed_findings(
            [i for i in lines[name]["report"]["issues"] if i["severity"] == "ERROR"], lang)]
        codes = lambda: [c.text for c in item.find_elements("css selector", "ul.detail code")]  # noqa: E731
        wait(page, lambda d: len(codes()) == len(errors), 30)   # drawn when opened (the toggle event)
        assert codes() == errors, name
        opened += 1
    assert opened >= 2

    # the reports for people, in the page's language, one per document, named after it
    for old in page.downloads.iterdir():
        old.unlink()
    button = by_id(page, "job-zip")
    assert button.text == {"en": "Download the reports (ZIP)", "de": "Prüfberichte herunterladen (ZIP)"}[lang]
    button.click()
    target = page.downloads / f"{job_id}.zip"
    wait(page, lambda d: target.exists() and target.stat().st_size > 0, 60)
    time.sleep(0.5)   # chromium renames the finished download into place
    with zipfile.ZipFile(io.BytesIO(target.read_bytes())) as archive:
        names = sorted(archive.namelist())
        assert names == sorted(n.rsplit("/", 1)[-1] + ".html" for n in DOZEN)
        for name in names:
            html = archive.read(name).decode("utf-8")
            assert f'<html lang="{lang}">' in html, name
            verdict = lines[name[:-len(".html")]]["report"]["verdict"]
            assert f'<section class="verdict {verdict}">' in html, name

    # painted: nothing wider than the screen, both downloads in view; in German no English word of the tab's own
    assert page.execute_script("return document.documentElement.scrollWidth") <= \
        page.execute_script("return document.documentElement.clientWidth")
    assert shown(page, "job-zip") and shown(page, "job-results")
    if lang == "de":
        own = page.execute_script("""
            return ['job-status', 'job-list-title', 'job-valid-summary', 'job-zip', 'job-results', 'job-button']
                .map((id) => document.getElementById(id).innerText)
                .concat(Array.from(document.querySelectorAll('#panel-jobs label, #job-documents .badge,'
                                                              + ' #job-documents summary'), (e) => e.innerText))
                .join(' ')""")
        own = own.replace(job_id, "").replace("ZIP", "").replace("JSON Lines", "").replace("HTML", "")
        assert not {w.strip(".,:;()…").lower() for w in own.split()} & ENGLISH, own
    page.save_screenshot(str(screenshots / f"job-{lang}-{width}.png"))


@pytest.fixture
def postgres_node(tmp_path):
    """`pipeline serve` on PostgreSQL (a schema of its own) with no `pipeline worker` yet: (server, key, env)."""
    schema = "people_jobs_" + uuid.uuid4().hex[:12]
    store = PostgresStore(pg_url(schema))   # creates the schema, the job tables and Procrastinate's
    env = {"EINVOICE_DATABASE_URL": pg_url(schema), "EINVOICE_DATA_DIR": str(tmp_path / "data"),
           "EINVOICE_REDIS_URL": "", "EINVOICE_RATE_LIMIT": "100000/min"}
    server = None
    try:
        token = cli(env, "keys", "create", "--name", "people", "--env", "test", "--credits", "100").stdout.strip()
        server = Server(env, workers=1, log_path=tmp_path / "serve.log")
        yield server, token, env
    finally:
        if server is not None:
            server.stop()
        store.drop_schema()
        store.close()


def test_on_postgresql_a_job_no_worker_takes_is_said_and_runs_once_one_starts(browser, postgres_node, dozen, tmp_path,
                                                                              screenshots):
    server, token, env = postgres_node
    browser.set_window_size(375, 900)
    start_job(browser, server.url, token, "de", "job-files", dozen)
    hint = wait(browser, lambda d: d.find_elements("css selector", "#job-status .waiting"), 60)[0]
    assert "pipeline worker" in hint.text and "wartet" in by_id(browser, "job-status").text
    assert hint.rect["width"] > 0 and hint.rect["x"] + hint.rect["width"] <= 375
    browser.execute_script("arguments[0].scrollIntoView()", hint)
    browser.save_screenshot(str(screenshots / "job-waiting-de-375.png"))
    log = open(tmp_path / "worker.log", "wb")
    worker = subprocess.Popen([sys.executable, "-m", "pipeline", "worker"], cwd=REPO, stdout=log,
                              stderr=subprocess.STDOUT, env={**os.environ, **env})
    try:
        status = follow_job(browser)
        assert "fertig, 12 von 12 Dokumenten" in status and not browser.find_elements("css selector",
                                                                                      "#job-status .waiting")
        assert visible("job-zip")(browser) and by_id(browser, "job-zip").text == "Prüfberichte herunterladen (ZIP)"
    finally:
        worker.terminate()
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
        log.close()
