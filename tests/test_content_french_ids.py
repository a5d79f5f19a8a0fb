"""CHECK-SIREN-SIRET: a French party's SIREN (scheme 0002) or SIRET (scheme 0009) whose Luhn key is wrong is a
content finding of a received invoice, as a wrong IBAN check digit is (the official rules, BR-FR included, check
the length at most: tests/test_fr_ctc_generate.py shows the official chain taking such a number). The documents are
real: the French fixtures generated and judged by the official fr-ctc chain, then one digit mistyped; the check
digits are trusted to an independent computation in this file, not to python-stdnum."""
from __future__ import annotations

import json
import re

import falcon.testing
import pytest

from conftest import REPO
from pipeline.check import content
from pipeline.check.report import Location
from pipeline.flows.generate_xml import generate_xml
from pipeline.service.app import create_app

FIXTURES = REPO / "fixtures"
STANDARD = REPO / "tests" / "data" / "request-standard.json"


# ---- independent computation ---------------------------------------------------------------------------------

def luhn_ok(digits: str) -> bool:
    total = 0
    for n, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if n % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def french_id_is_wrong(value: str) -> bool:
    """A number of the SIRENE register: nine digits (SIREN) or fourteen (SIRET) with a valid Luhn key; La Poste's
    establishments (SIREN 356000000, but its head office) have a digit sum divisible by 5 instead (INSEE)."""
    number = re.sub(r"[ .]", "", value)
    if len(number) not in (9, 14) or not number.isdigit():
        return True
    if len(number) == 14 and number.startswith("356000000") and number != "35600000000048":
        return sum(map(int, number)) % 5 != 0
    return not luhn_ok(number) or not luhn_ok(number[:9])


# SIRENs and SIRETs of real companies (published in their legal notices; the fixtures' seller and buyer)
VALID = [("0002", "732829320"), ("0002", "552100554"), ("0002", "542051180"), ("0002", "356000000"),
         ("0009", "73282932000074"), ("0009", "35600000000048"), ("0009", "35600000049837"),
         ("0002", "73282932000074"), ("0002", "732 829 320"), ("0009", "732.829.320.00074")]


@pytest.mark.parametrize("scheme, number", VALID)
def test_real_sirens_and_sirets_pass(scheme, number):
    assert not french_id_is_wrong(number)
    assert content.french_id_problem(scheme, number) is None


@pytest.mark.parametrize("scheme, number", [("0002", "732829320"), ("0002", "552100554"),
                                            ("0009", "73282932000074"), ("0002", "73282932000074")])
def test_every_one_digit_change_is_found(scheme, number):
    """Luhn finds every mistyped digit (La Poste's sum-of-digits rule does not: not used here)."""
    for position in range(len(number)):
        for digit in "0123456789":
            changed = number[:position] + digit + number[position + 1:]
            if changed == number:
                continue
            assert french_id_is_wrong(changed), changed
            problem = content.french_id_problem(scheme, changed)
            assert problem and "Luhn key" in problem, changed
            assert ("SIRET" if len(number) == 14 else "SIREN") in problem and "Luhn" in problem.de


def test_a_digit_missing_or_one_too_many_is_found_other_values_are_left_to_the_rules():
    assert "has 8 digits" in content.french_id_problem("0002", "73282932")
    assert "has 13 digits" in content.french_id_problem("0009", "7328293200007")
    assert "has 9 digits, but a SIRET" in content.french_id_problem("0009", "732829320")
    # no number of the register at all (the Peppol samples' placeholder, an e-mail address), another scheme
    for scheme, value in (("0002", "FR23342"), ("0009", "rechnungsausgang@test.com"), ("0088", "732829321"),
                          ("", "732829321"), ("0225", "732829321_STATUTS")):
        assert content.french_id_problem(scheme, value) is None, (scheme, value)


# ---- received documents: the fixtures generated, then a digit mistyped -------------------------------------------

@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def _generate(client, name: str, syntax: str) -> bytes:
    request = json.loads((FIXTURES / f"{name}.json").read_text("utf-8"))
    request["config"]["syntax"] = syntax
    r = client.simulate_post("/v1/invoice/fr-ctc", body=json.dumps(request).encode(),
                             headers={"Content-Type": "application/json"})
    assert r.status_code == 200, r.text
    return r.content


def _validate(client, data: bytes, strict: bool = False):
    boundary = "----frenchids7"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"invoice.xml\"\r\n"
            "Content-Type: application/xml\r\n\r\n").encode() + data + (
            f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n"
            f"Content-Type: application/json\r\n\r\n{json.dumps({'strict': strict})}\r\n--{boundary}--\r\n").encode()
    r = client.simulate_post("/v1/invoice/fr-ctc/validate", body=body,
                             headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert r.status_code == 200, r.text
    return r.json


def _mistype(data: bytes, scheme: str, right: str, wrong: str) -> tuple[bytes, int]:
    """`data` with the value `right` of scheme `scheme` (one element) made `wrong`, and the line it is on."""
    pattern = re.compile(rf'schemeID="{scheme}">{right}<'.encode())
    [found] = list(pattern.finditer(data))
    return pattern.sub(f'schemeID="{scheme}">{wrong}<'.encode(), data), data.count(b"\n", 0, found.start()) + 1


# (what, the numbers mistyped as (scheme, the fixture's number, the same with one digit mistyped, the business term
# of its place; None: not judged)): the seller's SIREN goes with its SIRET, which starts with it (BR-FR-09 checks that
# much), the buyer's with its electronic address of scheme 0225, which starts with it (BR-FR-21)
MISTYPED = [("seller SIREN", [("0002", "732829320", "732829321", "BT-30"),
                              ("0009", "73282932000074", "73282932100074", "BT-29")]),
            ("seller SIRET", [("0009", "73282932000074", "73282932000047", "BT-29")]),
            ("buyer SIREN", [("0002", "552100554", "552100545", "BT-47"),
                             ("0225", "552100554", "552100545", None)])]


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
@pytest.mark.parametrize("what, numbers", MISTYPED, ids=[m[0] for m in MISTYPED])
def test_a_mistyped_siren_or_siret_is_found_at_its_line_and_the_official_verdict_stays(client, syntax, what, numbers):
    document = _generate(client, "fr-b2b-goods", syntax)
    clean = _validate(client, document)
    assert clean["valid"] and not [i for i in clean["issues"] if i["code"] == content.SIREN_SIRET]
    changed, lines = document, []
    for scheme, right, wrong, _ in numbers:
        changed, line = _mistype(changed, scheme, right, wrong)
        lines.append(line)
    report = _validate(client, changed)
    official = [i for i in report["issues"] if not i["code"].startswith("CHECK-")]
    assert report["valid"] and official == [i for i in clean["issues"] if not i["code"].startswith("CHECK-")], official
    found = sorted((i for i in report["issues"] if i["code"] == content.SIREN_SIRET),
                   key=lambda i: i["location"]["line"])
    expected = sorted((line, number) for line, number in zip(lines, numbers) if number[3])
    assert len(found) == len(expected), found
    for finding, (line, (_, _, wrong, term)) in zip(found, expected):
        assert french_id_is_wrong(wrong)
        assert finding["severity"] == "WARNING" and finding["location"]["line"] == line, finding
        assert f"{term} " in finding["message"] and f"'{wrong}'" in finding["message"], finding
        assert "Luhn key" in finding["message"]
    strict = _validate(client, changed, strict=True)
    assert not strict["valid"] and {i["severity"] for i in strict["issues"] if i["code"] == content.SIREN_SIRET} \
        == {"ERROR"}


def test_the_finding_has_its_german_text_for_the_report_for_people(client):
    changed, _ = _mistype(_generate(client, "fr-b2b-goods", "CII"), "0002", "732829320", "732829321")
    boundary = "----frenchids8"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"invoice.xml\"\r\n"
            "Content-Type: application/xml\r\n\r\n").encode() + changed + (
            f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n"
            "Content-Type: application/json\r\n\r\n{\"metadataLanguage\": \"de\"}\r\n"
            f"--{boundary}--\r\n").encode()
    r = client.simulate_post("/v1/invoice/fr-ctc/validate", body=body, headers={
        "Content-Type": f"multipart/form-data; boundary={boundary}", "Accept": "text/html"})
    assert r.status_code == 200 and "CHECK-SIREN-SIRET" in r.text
    assert "falsche Prüfziffer (Luhn-Schlüssel) einer SIREN" in r.text


# ---- generation: the finding names the JSON field ------------------------------------------------------------------

def test_generation_warns_with_the_json_field_and_strict_refuses():
    body = json.loads(STANDARD.read_text("utf-8"))
    body["invoice"]["seller"]["vatIdentifier"] = "DE136695976"
    body["invoice"]["buyer"]["legalRegistrationIdentifier"] = "552100545"
    body["invoice"]["buyer"]["legalRegistrationIdentifierSchemeId"] = "0002"
    _, report = generate_xml(json.dumps(body).encode(), "en16931")
    [finding] = [i for i in report.issues if i.code == content.SIREN_SIRET]
    assert finding.location == Location(xpath="invoice.buyer.legalRegistrationIdentifier")
    assert (finding.business_term, finding.value, finding.severity) == ("BT-47", "552100545", "WARNING")
    body["config"]["strict"] = True
    with pytest.raises(Exception) as refused:
        generate_xml(json.dumps(body).encode(), "en16931")
    assert [(e.code, e.field, e.businessTerm) for e in refused.value.errors] == [
        (content.SIREN_SIRET, "invoice.buyer.legalRegistrationIdentifier", "BT-47")]
