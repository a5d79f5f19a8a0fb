"""The German page painted the service's English wherever a code had no German sentence (issue 38, item 5): a date
sent as a number on the generate tab ("must be a date string YYYY-MM-DD (INVALID_TYPE)"), the documents of a job
that could not be checked ("NESTED_ARCHIVE: The document is itself a ZIP archive ..."), a 503 whose code only names
its class ("RATE_LIMIT_CONFIGURATION_UNAVAILABLE: The key and credit store is unavailable ..."). Every code the page
can meet has its German sentence now, and the head line of an answer says the code of ours that refines the spec's.
Looked at in headless chromium against a started `pipeline serve`."""
from __future__ import annotations

import io
import json
import re
import zipfile

import falcon.testing
import pytest

from conftest import SHARED
from test_platform_helpers import REPO, Server
from test_web_browser import (VALID, WAIT, browser, by_id, enter_key, follow_job, live, page,  # noqa: F401
                              screenshots, visible, wait)
from pipeline.service.app import create_app
from pipeline.service.resources.web import strings

GERMAN = strings()["de"]["errors"]
# what the service's English says where a German page showed it
ENGLISH = re.compile(r"\b(?:The|the|is|must|not|was|cannot|it)\b")


def _openapi_codes() -> set[str]:
    """Every errorCode an operation may answer, each code of ours refining one, and the codes of the documents of a
    batch or job that could not be checked (named in the batch operation's description)."""
    document = falcon.testing.TestClient(create_app(platform=False)).simulate_get("/v1/openapi.json").json
    codes = set()

    def walk(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "errorCode" and isinstance(value, dict):
                    codes.update(value.get("enum", ()))
                elif key == "x-refinements":
                    codes.update(value)
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(document)
    batch = json.dumps(document["paths"]["/v1/invoice/xrechnung/validate/batch"])
    return codes | set(re.findall(r"`([A-Z][A-Z0-9_]{3,})`", batch))


def _readme_mail_codes() -> set[str]:
    """The codes of the README's table of hostile mail (SMIME_OPAQUE, MSG_UNREADABLE beside the batch's)."""
    text = (REPO / "README.md").read_text("utf-8")
    table = text[text.index("**Hostile mail**"):text.index("**Outlook messages and signed files.**")]
    return {code for line in table.splitlines() if line.startswith("| `")
            for code in re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1])}


def test_every_code_the_page_can_meet_has_its_german_sentence():
    codes = _openapi_codes() | _readme_mail_codes()
    assert {"STORAGE_UNAVAILABLE", "TIME_BUDGET", "NESTED_ARCHIVE", "SMIME_OPAQUE", "MSG_UNREADABLE"} <= codes
    assert sorted(codes - set(GERMAN)) == []
    # the fields of a request the generate tab sends, as the invoice model refuses them
    assert {"INVALID_TYPE", "INVALID_FORMAT", "OUT_OF_RANGE", "TOO_LONG", "TOO_MANY_LINES", "EMPTY_BODY",
            "NOT_CARRIED"} <= set(GERMAN)


def test_a_field_of_the_wrong_type_is_said_in_german_with_the_form_asked_for(page, live):  # noqa: F811
    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    by_id(page, "tab-generate").click()
    request = json.loads((REPO / "fixtures/invoice-all-fields.json").read_text())
    request["invoice"]["issueDate"] = 20240115
    area = by_id(page, "request")
    page.execute_script("arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input'))", area,
                        json.dumps(request, indent=2))
    by_id(page, "generate-button").click()
    error = wait(page, visible("generate-error"), WAIT).text
    assert "invoice.issueDate" in error and "BT-2" in error, error
    assert "Der Wert hat hier den falschen Typ" in error and "Form: JJJJ-MM-TT." in error, error
    assert "must be" not in error and "YYYY" not in error, error


def test_documents_a_job_could_not_check_are_said_in_german(page, live, tmp_path):  # noqa: F811
    server, token = live
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("a.xml", VALID.read_bytes())
    archive = tmp_path / "eingang.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("innen.zip", inner.getvalue())
        z.writestr("../flucht.xml", VALID.read_bytes())
        z.writestr("rechnung.xml", VALID.read_bytes())
    empty = tmp_path / "leer.eml"
    empty.write_bytes(b"")
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    by_id(page, "tab-jobs").click()
    by_id(page, "job-files").send_keys(f"{archive}\n{empty}")
    by_id(page, "job-button").click()
    follow_job(page)
    listed = wait(page, lambda d: "leer.eml" in by_id(d, "job-documents").text and by_id(d, "job-documents").text)
    for code in ("NESTED_ARCHIVE", "UNSAFE_NAME", "EMPTY_FILE"):
        assert f"{code}: {GERMAN[code]}" in listed, listed
    assert not ENGLISH.search(listed), listed


@pytest.fixture(scope="module")
def store_down(tmp_path_factory):
    """A server whose key store cannot be reached (PostgreSQL on a port nothing listens on)."""
    data = tmp_path_factory.mktemp("store-down")
    server = Server({"EINVOICE_DATA_DIR": str(data), "EINVOICE_DATABASE_URL": "postgresql://127.0.0.1:9/none",
                     "EINVOICE_REDIS_URL": ""}, log_path=data / "serve.log")
    yield server
    server.stop()


def test_a_503_says_what_happened_in_german(page, live, store_down):  # noqa: F811
    """503 RATE_LIMIT_CONFIGURATION_UNAVAILABLE names only the class; errors[0].code STORAGE_UNAVAILABLE says it."""
    page.get(f"{store_down.url}/?lang=de")
    enter_key(page, live[1])  # a key of the right form: the store is asked
    by_id(page, "file").send_keys(str(VALID))
    error = wait(page, visible("validate-error"), WAIT).text
    assert error.startswith("503 RATE_LIMIT_CONFIGURATION_UNAVAILABLE: " + GERMAN["STORAGE_UNAVAILABLE"]), error
    assert "store is unavailable" not in error, error


def test_an_invoice_on_the_status_tab_is_refused_in_german(page, live):  # noqa: F811
    """The status tab's 400 NOT_A_STATUS_MESSAGE listed "file: The file is no lifecycle status message (CDV).
    (XML-UNKNOWN-ROOT)"."""
    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    by_id(page, "tab-status").click()
    by_id(page, "status-files").send_keys(str(VALID))
    by_id(page, "status-button").click()
    error = wait(page, visible("status-error"), WAIT).text
    assert error.startswith("400 NOT_A_STATUS_MESSAGE: " + GERMAN["NOT_A_STATUS_MESSAGE"]), error
    assert f"{GERMAN['XML-UNKNOWN-ROOT']} (XML-UNKNOWN-ROOT)" in error and not ENGLISH.search(error), error


def test_what_a_conversion_cannot_carry_is_said_in_german_at_its_place(page, live):  # noqa: F811
    """A CII whose contact has a department beside the person, converted to UBL: the 422 CONVERSION_LOSS row said
    "... = 'Muster-Einkauf': UBL's contact has one name, the person's ..."; the place and value stay, the rest is
    German: the entry's own reason (its messageDe), not only the code's general sentence."""
    from test_web_browser import validate

    server, token = live
    page.get(f"{server.url}/?lang=de")
    enter_key(page, token)
    validate(page, SHARED / "realworld/corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml")
    button = next(b for b in (by_id(page, "convert-button"), by_id(page, "convert-button-2")) if "UBL" in b.text)
    button.click()
    error = wait(page, visible("download-error"), WAIT).text
    assert error.startswith("422 CONVERSION_LOSS: " + GERMAN["CONVERSION_LOSS"]), error
    assert ("/rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/ram:ApplicableHeaderTradeAgreement/"
            "ram:SellerTradeParty/ram:DefinedTradeContact/ram:DepartmentName (Zeile 184) = 'Muster-Einkauf': ein "
            "Kontakt hat in UBL nur einen Namen, den der Kontaktstelle (BT-41, BT-56); das umgewandelte Dokument "
            "hätte sie daher nicht (NOT_CARRIED)") in " ".join(error.split()), error
    assert "UBL's contact" not in error and "would not have it" not in error, error
