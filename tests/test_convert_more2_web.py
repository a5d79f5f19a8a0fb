"""The page shows a conversion's X-* headers as the service means them: a header value outside visible ASCII travels
percent-encoded (resources/reading.header_text: a BT-24 in another script, `%` as %25), and the page decodes it, so
the notes under the convert button read the source's identifier, not `%E2%86%92`."""
from __future__ import annotations

import pytest

from conftest import SHARED
from test_platform_helpers import Server, cli, free_port_in
from test_web_browser import WAIT, browser, by_id, enter_key, validate, visible, wait  # noqa: F401  (fixture)

CLAIM = "urn:cen.eu:en16931:2017#compliant#urn:example\u2192\u4e2d 100%"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    data = tmp_path_factory.mktemp("web-convert-headers")
    env = {"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": "",
           "EINVOICE_RATE_LIMIT": "10000/min"}
    token = cli(env, "keys", "create", "--name", "headers", "--env", "test", "--credits", "20").stdout.strip()
    server = Server(env, workers=1, port=free_port_in(19100, 19199), log_path=data / "serve.log")
    yield server, token
    server.stop()


def test_the_convert_notes_show_a_percent_encoded_header_decoded(browser, served, tmp_path):  # noqa: F811
    server, token = served
    source = (SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml").read_text("utf-8")
    path = tmp_path / "claim.cii.xml"
    path.write_text(source.replace("<ram:ID>urn:cen.eu:en16931:2017</ram:ID>", f"<ram:ID>{CLAIM}</ram:ID>", 1),
                    "utf-8")
    browser.get(server.url + "/?lang=en")
    browser.execute_script("sessionStorage.clear()")
    enter_key(browser, token)
    validate(browser, path)
    for old in browser.downloads.iterdir():
        old.unlink()
    by_id(browser, "convert-button").click()   # (to UBL: the source is a CII)
    wait(browser, lambda d: any(browser.downloads.iterdir()) and visible("convert-notes")(d), WAIT)
    notes = by_id(browser, "convert-notes").text
    assert f"BT-24 {CLAIM} -> urn:cen.eu:en16931:2017" in notes, notes
    assert "%E2" not in notes and "%25" not in notes, notes
