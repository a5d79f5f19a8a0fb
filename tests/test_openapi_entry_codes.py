"""The batch operation's description lists the codes of the entries for documents that were not checked. It was
written by hand and fell behind what the service gives: SMIME_OPAQUE (a damaged .p7m) and MSG_UNREADABLE (an
Outlook .msg that is no OLE file), both in the README's table of hostile mail, were missing. The list is one tuple
now (pipeline.service.openapi.ENTRY_CODES), held here to the codes pipeline.unpack's sources give and to the
README's tables, and every batch operation names each of its codes, in English and German."""
from __future__ import annotations

import ast
import re

import falcon.testing
import pytest

from pipeline.service.app import create_app
from pipeline.service.openapi import ENTRY_CODES
from pipeline.unpack import NOTICES
from test_platform_helpers import REPO
from test_validate_batch import post

CODE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def _given_by_unpack() -> set[str]:
    """The codes of the (code, message) pairs pipeline.unpack's modules write: `error=(...)`, `return code, message`
    and module constants such as EMPTY_FILE (a pair of names, `BATCH_FILES, JOB_FILES = ...`, is no such pair)."""
    codes = set()
    for source in sorted((REPO / "pipeline/unpack").glob("*.py")):
        for node in ast.walk(ast.parse(source.read_text("utf-8"))):
            if isinstance(node, ast.Tuple) and len(node.elts) == 2:
                code, message = node.elts
                if isinstance(code, ast.Constant) and isinstance(code.value, str) and CODE.fullmatch(code.value) \
                        and not (isinstance(message, ast.Constant) and CODE.fullmatch(str(message.value))):
                    codes.add(code.value)
    return codes - NOTICES


def _readme_entry_codes() -> set[str]:
    """The codes of the README's table of hostile mail and of its paragraph on hostile archives (entries all)."""
    text = (REPO / "README.md").read_text("utf-8")
    table = text[text.index("**Hostile mail**"):text.index("**Outlook messages and signed files.**")]
    codes = {code for line in table.splitlines() if line.startswith("| `")
             for code in re.findall(r"`([A-Z][A-Z0-9_]+)`", line.split("|")[1])}
    archives = text[text.index("Hostile archives:"):text.index("One bad member never fails the others.")]
    named = {code for code in re.findall(r"`([A-Z][A-Z0-9_]+)`", archives) if not code.startswith("EINVOICE_")}
    return codes | (named - {"BATCH_TOO_LARGE", "TOO_MANY_FILES"})  # (those refuse the upload as a whole)


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_the_list_is_the_codes_the_unpacking_gives():
    assert {"SMIME_OPAQUE", "MSG_UNREADABLE", "TNEF_UNREADABLE", "EMPTY_FILE"} <= _given_by_unpack()
    assert sorted(_given_by_unpack() ^ set(ENTRY_CODES)) == []
    assert len(ENTRY_CODES) == len(set(ENTRY_CODES))


def test_the_readme_names_no_entry_code_the_list_lacks():
    readme = _readme_entry_codes()
    assert {"SMIME_OPAQUE", "MSG_UNREADABLE", "UNSAFE_NAME", "DAMAGED_MEMBER"} <= readme
    assert sorted(readme - set(ENTRY_CODES)) == []


@pytest.mark.parametrize("lang", ["en", "de"])
def test_every_batch_operation_names_every_entry_code(client, lang):
    document = client.simulate_get("/v1/openapi.json", params={"lang": lang}).json
    batches = {path: item["post"]["description"] for path, item in document["paths"].items()
               if path.endswith("/validate/batch")}
    assert len(batches) >= 4, sorted(batches)
    for path, description in batches.items():
        named = set(re.findall(r"`([A-Z][A-Z0-9_]+)`", description))
        assert sorted(set(ENTRY_CODES) - named) == [], path
        assert "{codes}" not in description and "TIME_BUDGET" in named and "INVALID_PDF" in named


def test_the_entries_a_damaged_signed_file_and_a_broken_outlook_file_get_are_listed(client):
    """What the batch answers for them, against what its operation says it may."""
    damaged = b"-----BEGIN PKCS7-----\r\nMIIB\r\n-----END PKCS7-----\r\n"
    r = post(client, [("rechnung.xml.p7m", damaged), ("kaputt.msg", b"no OLE file")],
             headers={"X-Request-Id": "entry-codes"})
    assert r.status_code == 200, r.text
    got = [entry["error"]["code"] for entry in r.json["results"]]
    assert got == ["SMIME_OPAQUE", "MSG_UNREADABLE"], r.json
    description = client.simulate_get("/v1/openapi.json").json["paths"][
        "/v1/invoice/xrechnung/validate/batch"]["post"]["description"]
    assert all(f"`{code}`" in description for code in got)
