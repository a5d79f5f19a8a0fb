"""What the page paints when a file is too large or the service cannot be reached, in both languages (headless
chromium against a started `pipeline serve` with a small upload limit).

A file past the upload limit was sent whole and answered 413: in English with the limit in bytes, on the German page
"Der Upload ist zu groß." without it. The page now says it before sending, with both sizes. A lost connection said
the browser's own English words ("Failed to fetch") after the German sentence.
"""
from __future__ import annotations

import pytest

from test_platform_helpers import serve_with_key
from test_web_browser import CHROMEDRIVER, CHROMIUM, VALID, browser, by_id, enter_key, page, screenshots, \
    visible, wait  # noqa: F401 (the fixtures are used by name)

pytestmark = pytest.mark.skipif(not (CHROMIUM.exists() and CHROMEDRIVER.exists()), reason="needs Debian's chromium")

LIMIT = 200 * 1024  # EINVOICE_MAX_UPLOAD_BYTES: a "huge" file of 300 KiB is enough to pass it
JOB_LIMIT = 500 * 1024  # EINVOICE_MAX_JOB_BYTES: three such files pass it
SAID = {"en": ("big.xml is {size}; the service takes a file of at most {limit}.",
               "The service could not be reached (no connection, or it broke off)"),
        "de": ("big.xml ist {size} groß; der Dienst nimmt eine Datei von höchstens {limit}.",
               "Der Dienst ist nicht erreichbar (keine Verbindung, oder sie brach ab)")}
JOB_SAID = {"en": "The 3 files are {size} together; a job takes at most {limit}: submit them as several jobs.",
            "de": "Die 3 Dateien sind zusammen {size} groß; ein Auftrag nimmt höchstens {limit}: bitte auf mehrere "
                  "Aufträge verteilen."}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server, _, token = serve_with_key(tmp_path_factory.mktemp("web-limits"), "limits", 100, warm=False,
                                      env={"EINVOICE_MAX_UPLOAD_BYTES": str(LIMIT),
                                                                          "EINVOICE_MAX_JOB_BYTES": str(JOB_LIMIT)})
    yield server, token
    server.stop()


def _requests_sent(driver) -> int:
    return driver.execute_script("return performance.getEntriesByType('resource')"
                                 ".filter((e) => e.name.includes('/v1/')).length")


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_file_past_the_limit_is_said_before_it_is_sent(page, live, tmp_path, lang):
    server, token = live
    big = tmp_path / "big.xml"
    big.write_bytes(b"<a>" + b"x" * (300 * 1024) + b"</a>")
    page.get(f"{server.url}/?lang={lang}")
    enter_key(page, token)
    by_id(page, "file").send_keys(str(big))
    shown = wait(page, visible("validate-error"), 30)
    assert shown.text == SAID[lang][0].format(size=_mb(big.stat().st_size, lang), limit=_mb(LIMIT, lang))
    assert _requests_sent(page) == 0  # nothing went up: the answer came from the page
    assert not by_id(page, "result").is_displayed()


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_job_past_its_limit_is_said_before_it_is_sent(page, live, tmp_path, lang):
    server, token = live
    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(3):
        (folder / f"{n}.xml").write_bytes(b"<a>" + b"x" * (200 * 1024) + b"</a>")
    page.get(f"{server.url}/?lang={lang}")
    enter_key(page, token)
    by_id(page, "tab-jobs").click()
    by_id(page, "job-folder").send_keys(str(folder))
    by_id(page, "job-button").click()
    shown = wait(page, visible("job-error"), 30)
    total = sum(p.stat().st_size for p in folder.iterdir())
    assert shown.text == JOB_SAID[lang].format(size=_mb(total, lang), limit=_mb(JOB_LIMIT, lang))
    assert _requests_sent(page) == 0
    assert by_id(page, "job-button").is_enabled() and not by_id(page, "job-cancel").is_displayed()


def _mb(size: int, lang: str) -> str:
    """As web.js `megabytes` says a size: MB (of 1024 x 1024 bytes), one decimal below 10."""
    mb = size / (1024 * 1024)
    text = f"{mb:.1f}" if mb < 10 else f"{mb:.0f}"
    return (text.replace(".", ",") if lang == "de" else text) + " MB"


@pytest.mark.parametrize("lang", ["en", "de"])
def test_a_lost_connection_is_said_in_the_page_s_language(page, live, lang):
    server, token = live
    page.get(f"{server.url}/?lang={lang}")
    enter_key(page, token)
    page.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
    try:
        by_id(page, "file").send_keys(str(VALID))
        shown = wait(page, visible("validate-error"), 60)
        assert shown.text.startswith(SAID[lang][1]), shown.text
        assert "fetch" not in shown.text.lower()  # the browser's own (English) words are not the page's
    finally:
        page.delete_network_conditions()
