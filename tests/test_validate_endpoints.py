"""The XML validate endpoints (in-process) and the `pipeline validate` CLI."""
from __future__ import annotations

import json
import subprocess
import sys
import uuid

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.service.app import create_app

UBL_STD = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml"
ZUGFERD_PDF = CORPUS / "mustangproject/validator/validXRechnung.pdf"
CII_STD = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
CEN_UBL = CORPUS / "en16931-cen/ubl/examples/ubl-tc434-creditnote1.xml"


def multipart(**parts) -> tuple[bytes, str]:
    """Encode form parts: bytes/str values are sent as given; the `file` part carries a filename."""
    boundary = uuid.uuid4().hex
    out = []
    for name, value in parts.items():
        content = value.encode() if isinstance(value, str) else value
        disposition = f'form-data; name="{name}"' + ('; filename="invoice.xml"' if name == "file" else "")
        ctype = "application/xml" if name == "file" else "application/json"
        out.append(f"--{boundary}\r\nContent-Disposition: {disposition}\r\nContent-Type: {ctype}\r\n\r\n".encode()
                   + content + b"\r\n")
    out.append(f"--{boundary}--\r\n".encode())
    return b"".join(out), f"multipart/form-data; boundary={boundary}"


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def post(client, path, headers=None, **parts):
    body, ctype = multipart(**parts)
    return client.simulate_post(path, body=body, headers={"Content-Type": ctype, **(headers or {})})


@pytest.mark.parametrize("path", ["/v1/invoice/xrechnung/validate", "/v1/invoice/en16931/validate"])
def test_valid_document_gives_the_report_shape(client, path):
    r = post(client, path, headers={"X-Request-Id": "req-1"}, file=CII_STD.read_bytes(), request="{}")
    assert r.status_code == 200
    body = r.json
    # the service specification's fields, and the extensions verdict, notJudged and rules (issue 37)
    assert set(body) == {"valid", "verdict", "version", "syntax", "summary", "issues", "notJudged", "rules",
                         "requestId"}
    assert body["syntax"] == "CII" and body["requestId"] == "req-1"
    # an XRechnung invoice: judged as such at /xrechnung/validate; /en16931 judges the EN 16931 rules it builds on
    assert (body["valid"], body["verdict"]) == ((True, "valid") if "xrechnung" in path else (False, "indeterminate"))
    assert [r["pack"] for r in body["rules"]] == ["xrechnung" if "xrechnung" in path else "en16931"]
    assert body["version"] == ("3.0.2" if "xrechnung" in path else "1.3.16")
    for issue in body["issues"]:
        assert set(issue) >= {"severity", "code", "message"} and issue["severity"] in ("ERROR", "WARNING")


def test_version_selects_the_pack_and_unsupported_version_is_400(client):
    ok = post(client, "/v1/invoice/en16931/validate", file=CEN_UBL.read_bytes(), request='{"version": "1.3.16"}')
    assert ok.status_code == 200 and ok.json["version"] == "1.3.16" and ok.json["syntax"] == "UBL"
    bad = post(client, "/v1/invoice/en16931/validate", file=CEN_UBL.read_bytes(), request='{"version": "0.9"}')
    assert bad.status_code == 400 and bad.json["errorCode"] == "UNSUPPORTED_VERSION"
    assert bad.json["status"] == "bad_request" and bad.json["requestId"]


def test_invalid_document_is_200_with_findings(client):
    data = UBL_STD.read_text("utf-8").replace("<cbc:ID>123456XX</cbc:ID>", "", 1).encode()
    r = post(client, "/v1/invoice/xrechnung/validate", file=data, request='{"version": null}')
    assert r.status_code == 200 and r.json["valid"] is False
    codes = {i["code"] for i in r.json["issues"] if i["severity"] == "ERROR"}
    assert "BR-02" in codes
    assert r.json["summary"]["errors"] == sum(1 for i in r.json["issues"] if i["severity"] == "ERROR")


@pytest.mark.parametrize("parts, code, field", [
    ({"request": "{}"}, "MISSING_PART", "file"),
    ({"file": b"<x/>", "request": "{not json"}, "MALFORMED_JSON", "request"),
    ({"file": b"<x/>", "request": "[1, 2]"}, "MALFORMED_JSON", "request"),
    ({"file": b"<x/>", "request": '{"version": 3}'}, "INVALID_VERSION", "request.version"),
    # as strict as a JSON body: no NaN / Infinity (an error body echoing them would be no JSON), no duplicate keys,
    # nesting bounded (a RecursionError was a 500)
    ({"file": b"<x/>", "request": '{"strict": Infinity}'}, "MALFORMED_JSON", "request"),
    ({"file": b"<x/>", "request": '{"version": NaN}'}, "MALFORMED_JSON", "request"),
    ({"file": b"<x/>", "request": '{"version": null, "version": "3.0.2"}'}, "MALFORMED_JSON", "request"),
    ({"file": b"<x/>", "request": '{"version": ' + "[" * 5000 + "]" * 5000 + "}"}, "MALFORMED_JSON", "request"),
    ({"file": b"<x/>", "request": '{"x": ' + "[" * 900 + "]" * 900 + "}"}, "UNKNOWN_FIELD", "request.x"),
    ({"file": b"<x/>", "requests": '{"version": "9"}'}, "UNKNOWN_PART", "requests"),
    # checked whatever the report is answered as (a JSON report has no language, but the request was wrong)
    ({"file": b"<x/>", "request": '{"metadataLanguage": "fr"}'}, "UNSUPPORTED_LANGUAGE", "request.metadataLanguage"),
])
def test_request_level_problems_are_400(client, parts, code, field):
    r = post(client, "/v1/invoice/xrechnung/validate", **parts)
    assert r.status_code == 400, r.text
    assert r.json["errorCode"] == "INVALID_INPUT"
    assert r.json["errors"][0]["code"] == code and r.json["errors"][0]["field"] == field
    json.loads(r.text, parse_constant=lambda name: pytest.fail(f"{name} in the error body"))


def test_a_second_request_part_is_a_400_not_silently_dropped(client):
    body, ctype = multipart(file=UBL_STD.read_bytes(), request="{}")
    boundary = ctype.split("=", 1)[1]
    second = (f'--{boundary}\r\nContent-Disposition: form-data; name="request"\r\n'
              'Content-Type: application/json\r\n\r\n{"version": "9"}\r\n').encode()
    body = body.replace(f"--{boundary}--".encode(), second + f"--{boundary}--".encode())
    r = client.simulate_post("/v1/invoice/xrechnung/validate", body=body, headers={"Content-Type": ctype})
    assert r.status_code == 400 and r.json["errors"][0]["code"] == "UNKNOWN_PART", r.text
    assert "'request' twice" in r.json["message"]


@pytest.mark.parametrize("path", ["/v1/invoice/xrechnung/validate", "/v1/invoice/en16931/validate",
                                  "/v1/invoice/zugferd/validate", "/v1/invoice/xrechnung/validate/batch",
                                  "/v1/invoice/parse", "/v1/invoice/render"])
def test_the_request_part_is_optional_everywhere(client, path):
    """No `request` part means {} on every multipart endpoint (the single validate endpoints refused it with 400
    MISSING_PART while parse and batch took it)."""
    data = ZUGFERD_PDF.read_bytes() if "zugferd" in path else UBL_STD.read_bytes()
    without = post(client, path, file=data)
    with_empty = post(client, path, file=data, request="{}")
    assert without.status_code == with_empty.status_code == 200, without.text
    if without.headers["content-type"].startswith("application/json"):
        def strip(value):
            if isinstance(value, dict):
                return {k: strip(v) for k, v in value.items() if k != "requestId"}
            return [strip(v) for v in value] if isinstance(value, list) else value
        assert strip(without.json) == strip(with_empty.json)


def with_file_name(name: bytes, data: bytes) -> tuple[bytes, str]:
    """A form whose `file` part carries `name` as raw bytes in its Content-Disposition."""
    boundary = uuid.uuid4().hex
    body = (f"--{boundary}\r\n".encode() + b'Content-Disposition: form-data; name="file"; filename="' + name
            + b'"\r\nContent-Type: application/xml\r\n\r\n' + data + f"\r\n--{boundary}--\r\n".encode())
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("name, shown", [
    ("Rechnung ü.xml".encode("cp1252"), "Rechnung ü.xml"),  # an older Windows client's code page
    ("Rechnung ü.xml".encode(), "Rechnung ü.xml"),          # UTF-8, as RFC 7578 and browsers send it
    (b"\xed\xa0\x80.xml", None),                           # no encoding's text: read, its name as it decodes
])
def test_a_file_name_in_another_encoding_is_read_not_a_500(client, name, shown):
    """Falcon decodes a part's headers as strict UTF-8: a CP1252 file name made every upload a 500."""
    body, ctype = with_file_name(name, UBL_STD.read_bytes())
    page = client.simulate_post("/v1/invoice/xrechnung/validate", body=body,
                                headers={"Content-Type": ctype, "Accept": "text/html"})
    assert page.status_code == 200, page.text
    batch = client.simulate_post("/v1/invoice/xrechnung/validate/batch", body=body, headers={"Content-Type": ctype})
    assert batch.status_code == 200, batch.text
    assert batch.json["results"][0]["report"]["valid"] is True
    if shown is not None:
        assert shown in page.text and batch.json["results"][0]["name"] == shown


def test_half_a_surrogate_pair_is_a_field_error_echoed_as_sent_not_a_500(client):
    """A `\\ud800` escape is half a surrogate pair (a UTF-16 string cut in an emoji): JSON's grammar allows it, no
    UTF-8 can carry it. Its field's error echoed it and the error response itself failed (500, empty body)."""
    cases = [("/v1/invoice/xrechnung", b'{"invoice": {"invoiceNumber": "A\\ud800"}, "config": {}}', "invoice.invoiceNumber"),
             ("/v1/invoice/fr-ctc/status", b'{"status": {"code": "\\udfff"}}', "status.code")]
    for path, body, field in cases:
        r = client.simulate_post(path, body=body, headers={"Content-Type": "application/json"})
        assert r.status_code == 400, r.text
        assert field in {e["field"] for e in r.json["errors"]}
        assert rb'\u' in r.content  # the escape as sent, in the answer's valid JSON
    sent = '{"invoice": {"invoiceNumber": "A\\ud800"}, "config": {}}'
    r = client.simulate_post("/v1/invoice/xrechnung", body=sent.encode(), headers={"Content-Type": "application/json"})
    e = next(e for e in r.json["errors"] if e["field"] == "invoice.invoiceNumber")
    assert e["rejectedValue"] == json.loads(sent)["invoice"]["invoiceNumber"] and e["businessTerm"] == "BT-1"
    r = client.simulate_post("/v1/invoice/xrechnung", body=b'{"x\\ud800": 1}', headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and r.json["errors"]
    r = post(client, "/v1/invoice/xrechnung/validate", file=b"<x/>", request='{"version": "\\ud800"}')
    assert r.status_code == 400 and r.json["errorCode"] == "UNSUPPORTED_VERSION"


def test_not_multipart_is_400(client):
    r = client.simulate_post("/v1/invoice/xrechnung/validate", body=UBL_STD.read_bytes(),
                             headers={"Content-Type": "application/xml"})
    assert r.status_code == 400 and r.json["errors"][0]["code"] == "NOT_MULTIPART"


def test_malformed_xml_is_200_with_a_located_parse_finding(client):
    r = post(client, "/v1/invoice/xrechnung/validate", file=b"<Invoice>\n  <a></b>\n</Invoice>", request="{}")
    assert r.status_code == 200 and r.json["valid"] is False
    issue = r.json["issues"][0]
    assert issue["code"] == "XML-MALFORMED" and issue["location"]["line"] == 2 and issue["location"]["column"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pipeline", "validate", *args], capture_output=True, text=True)


def test_cli_exit_codes_and_json(tmp_path):
    ok = _cli(str(UBL_STD), "--json")
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["valid"] is True
    broken = tmp_path / "broken.xml"
    broken.write_bytes(UBL_STD.read_text("utf-8").replace("<cbc:ID>123456XX</cbc:ID>", "", 1).encode())
    bad = _cli(str(broken), "--spec", "en16931")
    assert bad.returncode == 1 and "BR-02" in bad.stdout
    assert _cli(str(UBL_STD), "--version", "0.1").returncode == 2
    assert _cli(str(tmp_path / "missing.xml")).returncode == 2
