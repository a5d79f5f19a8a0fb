"""Many documents at once: POST /v1/invoice/{spec}/validate/batch (a ZIP or several file parts) and
`pipeline validate DIR | FILES... | archive.zip --jobs N`. Hostile archives are built here with zipfile."""
from __future__ import annotations

import io
import json
import struct
import uuid
import zipfile

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.cli import main
from pipeline.service.app import create_app
from pipeline.service.platform import PlatformConfig
from pipeline.settings import get_settings
from test_platform_helpers import Platform, make_store

UBL_STD = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
CII_STD = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
CEN_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-creditnote1.xml"
BROKEN = b"<Invoice><unclosed></Invoice>"
BATCH = "/v1/invoice/xrechnung/validate/batch"


def form(files: list[tuple[str, bytes]], request: str | None = "{}") -> tuple[bytes, str]:
    """multipart/form-data with one `file` part per (filename, bytes), and the `request` part."""
    boundary = uuid.uuid4().hex
    out = [f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{name}"\r\n'
           f"Content-Type: application/octet-stream\r\n\r\n".encode() + data + b"\r\n" for name, data in files]
    if request is not None:
        out.append(f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
                   f"Content-Type: application/json\r\n\r\n{request}\r\n".encode())
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


def zipped(members: list[tuple[str, bytes]], method=zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for name, data in members:
            z.writestr(zipfile.ZipInfo(name), data, compress_type=method)
    return buf.getvalue()


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.fixture
def limits(monkeypatch):
    """Set EINVOICE_* limits for one test (settings are read once per process)."""
    def set_(**env):
        for k, v in env.items():
            monkeypatch.setenv(k, str(v))
        get_settings.cache_clear()
    yield set_
    monkeypatch.undo()
    get_settings.cache_clear()


def post(client, files, path=BATCH, request="{}", headers=None):
    body, ctype = form(files, request)
    return client.simulate_post(path, body=body, headers={"Content-Type": ctype, **(headers or {})})


def single(client, data, path="/v1/invoice/xrechnung/validate", request="{}"):
    body, ctype = form([("invoice.xml", data)], request)
    return client.simulate_post(path, body=body, headers={"Content-Type": ctype, "X-Request-Id": "rid"}).json


GOOD = [("a/01.01a-ubl.xml", UBL_STD.read_bytes()), ("b-cii.xml", CII_STD.read_bytes()),
        ("c-broken.xml", BROKEN), ("d-cen.xml", CEN_UBL.read_bytes())]


def test_archive_order_summary_and_each_report_equals_the_single_endpoint(client):
    r = post(client, [("batch.zip", zipped(GOOD))], headers={"X-Request-Id": "rid"})
    assert r.status_code == 200, r.text
    assert [e["name"] for e in r.json["results"]] == [n for n, _ in GOOD]
    for (_, data), got in zip(GOOD, r.json["results"]):
        assert got["report"] == single(client, data)
    assert r.json["summary"] == {"files": 4, "valid": 3, "invalid": 1, "indeterminate": 0, "errors": 0, "noInvoice": 0}


def test_several_file_parts_and_strict_reach_each_report(client):
    files = [("x.xml", UBL_STD.read_bytes()), ("y.xml", BROKEN)]
    r = post(client, files, request='{"strict": true}', headers={"X-Request-Id": "rid"})
    assert r.status_code == 200 and [e["name"] for e in r.json["results"]] == ["x.xml", "y.xml"]
    strict = single(client, UBL_STD.read_bytes(), request='{"strict": true}')
    assert r.json["results"][0]["report"] == strict
    assert any(i["code"].startswith("CHECK-") and i["severity"] == "ERROR" for i in strict["issues"])
    one = post(client, [("only.xml", CII_STD.read_bytes())])  # a single part that is no ZIP: a batch of one
    assert one.json["summary"] == {"files": 1, "valid": 1, "invalid": 0, "indeterminate": 0, "errors": 0, "noInvoice": 0}


def test_one_bad_member_never_fails_the_others(client):
    members = [GOOD[0], ("inner.zip", zipped([GOOD[1]])), ("../../etc/evil.xml", BROKEN), GOOD[1]]
    r = post(client, [("batch.zip", zipped(members))])
    assert r.status_code == 200
    codes = [e.get("error", {}).get("code") for e in r.json["results"]]
    assert codes == [None, "NESTED_ARCHIVE", "UNSAFE_NAME", None]
    assert r.json["summary"] == {"files": 4, "valid": 2, "invalid": 0, "indeterminate": 0, "errors": 2, "noInvoice": 0}
    assert all(e["error"]["message"] for e in r.json["results"] if "error" in e)


@pytest.mark.parametrize("name", ["../x.xml", "a/../../x.xml", "/etc/x.xml", "C:/x.xml", "..\\x.xml",
                                  "C:\\win\\x.xml"])
def test_path_traversal_names_get_an_error_entry_and_are_not_read(client, name):
    r = post(client, [("t.zip", zipped([(name, UBL_STD.read_bytes()), ("ok.xml", UBL_STD.read_bytes())]))])
    assert r.status_code == 200
    assert r.json["results"][0] == {"name": name, "error": r.json["results"][0]["error"]}
    assert r.json["results"][0]["error"]["code"] == "UNSAFE_NAME" and r.json["results"][1]["report"]["valid"]


def _unflagged(names: list[bytes]) -> bytes:
    """A ZIP whose member names are these bytes without the UTF-8 flag, as macOS's Finder and Info-ZIP's `zip`
    (UTF-8) or Windows' built-in compression (the OEM code page) write them: zipfile always flags a non-ASCII name,
    so each is written as an ASCII stand-in of its length and put in place after."""
    stand_ins = [b"%0*d.xml" % (len(name) - 4, n) for n, name in enumerate(names)]
    data = zipped([(stand_in.decode(), UBL_STD.read_bytes()) for stand_in in stand_ins])
    for stand_in, name in zip(stand_ins, names):
        assert data.count(stand_in) == 2  # the local header's and the central directory's
        data = data.replace(stand_in, name)
    return data


def test_member_names_written_without_the_utf8_flag_are_read_as_their_maker_wrote_them(client):
    """A folder zipped on a Mac or with Linux's `zip` named its members "Rechnung f├╝r M├ñrz.xml" in the results:
    unflagged names are CP437 by the ZIP specification, but those tools write UTF-8 there."""
    names = ["Rechnung für März.xml".encode("utf-8"), "Gebühr Ü.xml".encode("cp437"), b"plain.xml"]
    r = post(client, [("mac.zip", _unflagged(names))])
    assert r.status_code == 200, r.text
    assert [e["name"] for e in r.json["results"]] == ["Rechnung für März.xml", "Gebühr Ü.xml", "plain.xml"]
    assert all(e["report"]["valid"] for e in r.json["results"])

APPLE_DOUBLE = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(60)  # a resource fork's companion
DS_STORE = b"\x00\x00\x00\x01Bud1" + bytes(100)


def test_what_an_operating_system_keeps_beside_documents_is_left_out(client, tmp_path):
    """A folder zipped by macOS's Finder holds "__MACOSX/._name" companions and ".DS_Store": they were reported as
    documents that are no e-invoice (errors in every Mac user's batch). Known by name and content both: a real
    invoice named "._x.xml" is still validated. The command line's folder walk leaves them out alike."""
    members = [("Rechnungen/a.xml", UBL_STD.read_bytes()), ("Rechnungen/.DS_Store", DS_STORE),
               ("__MACOSX/Rechnungen/._a.xml", APPLE_DOUBLE), ("Rechnungen/._b.xml", CII_STD.read_bytes())]
    r = post(client, [("finder.zip", zipped(members)), (".DS_Store", DS_STORE)])
    assert r.status_code == 200, r.text
    assert [(e["name"], e["report"]["valid"]) for e in r.json["results"]] == [
        ("Rechnungen/a.xml", True), ("Rechnungen/._b.xml", True)]
    assert r.json["summary"]["errors"] == 0
    from pipeline.cli.files import expand

    (tmp_path / "a.xml").write_bytes(UBL_STD.read_bytes())
    (tmp_path / "._a.xml").write_bytes(APPLE_DOUBLE)
    (tmp_path / "._b.xml").write_bytes(CII_STD.read_bytes())
    assert [p.name for p in expand([tmp_path])] == ["._b.xml", "a.xml"]

def test_nested_archive_by_content_too(client):
    r = post(client, [("n.zip", zipped([("looks-like.xml", zipped([GOOD[0]]))]))])
    assert r.json["results"][0]["error"]["code"] == "NESTED_ARCHIVE"
    # several parts: each is unpacked as a single one is (as jobs do), a ZIP in a ZIP part is not; its members are
    # named under its name among several files (as jobs and `pipeline validate` name them)
    parts = post(client, [("a.xml", UBL_STD.read_bytes()), ("b.zip", zipped([GOOD[0], ("c.zip", zipped([GOOD[1]]))]))])
    assert [(e["name"], e.get("error", {}).get("code")) for e in parts.json["results"]] == [
        ("a.xml", None), (f"b.zip/{GOOD[0][0]}", None), ("b.zip/c.zip", "NESTED_ARCHIVE")]


def test_zip_bomb_member_is_read_no_further_than_the_bound(client, limits):
    limits(EINVOICE_MAX_UPLOAD_BYTES=200_000)
    bomb = b"<a>" + b" " * 50_000_000 + b"</a>"  # 50 MB that deflate to ~50 kB
    archive = zipped([("bomb.xml", bomb), ("ok.xml", UBL_STD.read_bytes())])
    assert len(archive) < 200_000
    r = post(client, [("b.zip", archive)])
    assert r.status_code == 200
    assert r.json["results"][0]["error"]["code"] == "FILE_TOO_LARGE" and r.json["results"][1]["report"]["valid"]


def test_a_member_lying_about_its_size_is_not_trusted(client, limits):
    limits(EINVOICE_MAX_UPLOAD_BYTES=200_000)
    archive = bytearray(zipped([("liar.xml", b"<a>" + b" " * 5_000_000 + b"</a>"), GOOD[0]]))
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):  # declare 10 bytes, local and central
        at = archive.find(sig)
        archive[at + offset:at + offset + 4] = struct.pack("<I", 10)
    r = post(client, [("l.zip", bytes(archive))])
    assert r.status_code == 200
    first = r.json["results"][0]
    assert first["error"]["code"] in ("DAMAGED_MEMBER", "FILE_TOO_LARGE")
    assert r.json["results"][1]["report"]["valid"]


def test_a_bomb_of_many_members_is_refused_413(client, limits):
    limits(EINVOICE_MAX_UPLOAD_BYTES=200_000)  # total bound: 5 uploads uncompressed
    each = b"<a>" + b" " * 190_000 + b"</a>"
    r = post(client, [("many.zip", zipped([(f"m{n}.xml", each) for n in range(8)]))])
    assert r.status_code == 413 and r.json["errors"][0]["code"] == "BATCH_TOO_LARGE"
    assert "zip bomb" in r.json["message"]


def test_too_many_files_is_400(client, limits):
    limits(EINVOICE_MAX_BATCH_FILES=3)
    r = post(client, [("four.zip", zipped([(f"{n}.xml", BROKEN) for n in range(4)]))])
    assert r.status_code == 400 and r.json["errorCode"] == "TOO_MANY_FILES" and "at most 3" in r.json["message"]
    parts = post(client, [(f"{n}.xml", BROKEN) for n in range(4)])
    assert parts.status_code == 400 and parts.json["errorCode"] == "TOO_MANY_FILES"
    ok = post(client, [("three.zip", zipped([(f"{n}.xml", BROKEN) for n in range(3)]))])
    assert ok.status_code == 200 and ok.json["summary"]["files"] == 3


def test_as_many_file_parts_as_the_readme_promises(client):
    """200 `file` parts (EINVOICE_MAX_BATCH_FILES' default) are one batch; the 201st is TOO_MANY_FILES. Before,
    Falcon's multipart parser gave up after 64 parts: 400 "maximum number of form body parts exceeded"."""
    assert get_settings().max_batch_files == 200
    r = post(client, [(f"{n}.xml", BROKEN) for n in range(200)])
    assert r.status_code == 200, r.text
    assert r.json["summary"] == {"files": 200, "valid": 0, "invalid": 200, "indeterminate": 0, "errors": 0, "noInvoice": 0}
    over = post(client, [(f"{n}.xml", BROKEN) for n in range(201)])
    assert over.status_code == 400 and over.json["errorCode"] == "TOO_MANY_FILES", over.text


def _flagged_latin1_name(archive: bytes) -> bytes:
    """The archive with its one member's name in Latin-1 while the directory says UTF-8 (a broken zipper)."""
    data = bytearray(archive.replace(b"a.xml", b"\xe4.xml"))
    for signature, flags in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature) + flags
        data[at + 1] |= 0x08   # general purpose bit 11: UTF-8 names
    return bytes(data)


def test_an_unreadable_zip_among_several_files_is_an_entry_and_alone_a_400(client):
    """A folder dropped on the batch with one damaged ZIP in it refused the other files (400), where a job of the
    same folder gave the ZIP an entry: both give it one now; the ZIP alone is still refused."""
    r = post(client, [("cut.zip", b"PK\x03\x04 not really"), ("a.xml", UBL_STD.read_bytes())])
    assert r.status_code == 200, r.text
    cut, good = r.json["results"]
    assert cut["name"] == "cut.zip" and cut["error"]["code"] == "INVALID_ARCHIVE", cut
    assert cut["error"]["message"].startswith("The file is not a readable ZIP archive"), cut
    assert good["name"] == "a.xml" and good["report"]["valid"] is True


def test_request_level_refusals(client):
    assert post(client, [("x.zip", b"PK\x03\x04 not really")]).json["errorCode"] == "INVALID_ARCHIVE"
    broken = post(client, [("x.zip", _flagged_latin1_name(zipped([("a.xml", UBL_STD.read_bytes())])))]).json
    assert broken["errorCode"] == "INVALID_ARCHIVE" and "marked as UTF-8 but is not UTF-8" in broken["message"]
    bad = post(client, [("a.xml", BROKEN)], request='{"version": "0.9"}')
    assert bad.status_code == 400 and bad.json["errorCode"] == "UNSUPPORTED_VERSION"
    body, ctype = form([], "{}")
    none = client.simulate_post(BATCH, body=body, headers={"Content-Type": ctype})
    assert none.status_code == 400 and none.json["errors"][0]["code"] == "MISSING_PART"


ZUGFERD_PDF = CORPUS / "mustangproject/library/EN16931_1_Teilrechnung.pdf"   # valid: tests/test_zugferd_validate.py


def test_a_month_of_pdfs_and_xml_is_judged_each_by_what_it_is(client):
    """A receiver's archive mixes ZUGFeRD PDFs and XML: each gets the report of the path that takes it (as a job
    does), never a format error for being a PDF on XML rules or XML on the ZUGFeRD batch."""
    members = [("invoice.pdf", ZUGFERD_PDF.read_bytes()), ("a.xml", UBL_STD.read_bytes())]
    for path in (BATCH, "/v1/invoice/zugferd/validate/batch"):
        r = post(client, [("month.zip", zipped(members))], path=path)
        assert r.status_code == 200, r.text
        pdf, xml = (result["report"] for result in r.json["results"])
        assert pdf["valid"] and pdf["syntax"] == "CII" and "EN16931" in pdf["version"], pdf["issues"]
        assert xml["valid"] and xml["syntax"].startswith("UBL") and xml["version"].startswith("3.0"), xml["issues"]


def test_the_zugferd_batch_gives_a_non_pdf_non_xml_file_its_format_finding(client):
    r = post(client, [("a.txt", b"just text")], path="/v1/invoice/zugferd/validate/batch")
    assert r.status_code == 200
    report = r.json["results"][0]["report"]
    assert not report["valid"] and [i["code"] for i in report["issues"]] == ["XML-MALFORMED"]


def test_credits_are_charged_per_validated_document_at_the_validate_cost(tmp_path):
    store = make_store("sqlite", tmp_path)
    p = Platform(store, config=PlatformConfig(rate_limit=1000, costs={"/v1/invoice/xrechnung/validate": 2}))
    key_id, token = p.key(credits=10)
    body, ctype = form([("b.zip", zipped([GOOD[0], GOOD[2], ("../x.xml", BROKEN)]))])
    r = p.post(token, BATCH, body=body, headers={"Content-Type": ctype})
    assert r.status_code == 200 and r.json["summary"]["files"] == 3
    assert store.get_key(key_id).balance == 10 - 2 * 2  # two validated, the refused member costs nothing
    body, ctype = form([("b.zip", zipped([(f"{n}.xml", GOOD[0][1]) for n in range(4)]))])
    r = p.post(token, BATCH, body=body, headers={"Content-Type": ctype})
    assert r.status_code == 402 and r.json["errorCode"] == "INSUFFICIENT_CREDITS"
    assert store.get_key(key_id).balance == 6  # nothing charged
    store.close()


# -- the command line --------------------------------------------------------------------------------------------

@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "in"
    (d / "sub").mkdir(parents=True)
    (d / "a.xml").write_bytes(UBL_STD.read_bytes())
    (d / "sub" / "b.xml").write_bytes(CII_STD.read_bytes())
    (d / "c.xml").write_bytes(BROKEN)
    (d / "notes.txt").write_text("not a document")
    return d


def test_cli_folder_in_parallel_json_and_html_dir(folder, tmp_path, capsys):
    out = tmp_path / "html"
    assert main(["validate", str(folder), "--jobs", "2", "--json", "--html-dir", str(out)]) == 1
    body = json.loads(capsys.readouterr().out)
    assert [e["name"] for e in body["results"]] == ["a.xml", "c.xml", "sub/b.xml"]
    assert body["summary"] == {"files": 3, "valid": 2, "invalid": 1, "indeterminate": 0, "errors": 0, "noInvoice": 0}
    pages = sorted(p.name for p in out.iterdir())
    assert pages == ["a.xml.html", "c.xml.html", "sub_b.xml.html"]
    assert "BR-" in (out / "c.xml.html").read_text() or "XML-MALFORMED" in (out / "c.xml.html").read_text()


def test_cli_zip_with_jobs_2_table_and_exit_codes(tmp_path, capsys):
    archive = tmp_path / "month.zip"
    archive.write_bytes(zipped([GOOD[0], ("../evil.xml", BROKEN), GOOD[1]]))
    assert main(["validate", str(archive), "--jobs", "2"]) == 2  # one member could not be validated
    text = capsys.readouterr().out
    assert "UNSAFE_NAME" in text and "3 documents: 2 valid, 0 invalid, 0 indeterminate, 1 could not be validated" in text
    good = tmp_path / "good.zip"
    good.write_bytes(zipped([GOOD[0], GOOD[1]]))
    assert main(["validate", str(good), "--jobs", "2"]) == 0


def test_cli_several_files_and_a_single_file_keeps_its_output(tmp_path, capsys):
    a, b = tmp_path / "a.xml", tmp_path / "b.xml"
    a.write_bytes(UBL_STD.read_bytes())
    b.write_bytes(BROKEN)
    assert main(["validate", str(a), str(b), "--jobs", "1"]) == 1
    assert "2 documents: 1 valid, 1 invalid" in capsys.readouterr().out
    assert main(["validate", str(a)]) == 0
    assert capsys.readouterr().out.startswith(f"VALID: {a} (xrechnung")


@pytest.mark.parametrize("path", ["/v1/invoice/en16931/validate", "/v1/invoice/parse", "/v1/invoice/render"])
def test_a_second_file_on_a_single_endpoint_is_refused_not_left_unchecked(client, path):
    """Two `file` parts on an endpoint that takes one: the second was skipped and the answer (200, "valid") spoke
    of the first only. Now a 400 that points to the batch endpoint and the jobs API."""
    r = post(client, [("a.xml", UBL_STD.read_bytes()), ("b.xml", BROKEN)], path=path)
    assert r.status_code == 400, r.text
    assert r.json["errors"][0]["code"] == "TOO_MANY_FILES" and "batch" in r.json["message"]
