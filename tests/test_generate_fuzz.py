"""A hostile client against the three generation endpoints, through the real app: a hostile value at every field
of a valid request (wrong types, 1e400, NaN, huge and negative numbers, control and bidi characters, impossible dates,
unknown codes, empty strings, deep nesting) and hostile bodies as a whole (100,001 lines, junk configs, non-objects);
10,000 lines make a valid document.
Never a 500; a 400/422 names the field and its business term where one exists; every 200 document passes the official
rules when validated on its own (`/validate`)."""
from __future__ import annotations

import copy
import json
import re

import pytest
from falcon import testing

from pipeline.cli.golden import FIXTURES
from pipeline.invoice import terms
from pipeline.service.app import create_app

BASE = json.loads(FIXTURES.joinpath("invoice-all-fields.json").read_text("utf-8"))
_RAW = "\x00raw\x00"   # a value written into the JSON text as it is (1e400, NaN, a lone surrogate: no Python value)
VALUES = (("list", []), ("object", {"a": 1}), ("true", True), ("string", "x"), ("int", 7), ("negative", -5),
          ("huge", 10 ** 30), ("1e400", _RAW + "1e400"), ("NaN", _RAW + "NaN"), ("-1e-400", _RAW + "-1e-400"),
          ("control", "a\u0001b"), ("bidi", "\u202eevil\u202c"), ("empty", ""), ("blank", "   "),
          ("2026-02-30", "2026-02-30"), ("code", "ZZZ"), ("null", None), ("long", "x" * 5000),
          ("surrogate", _RAW + '"\\ud800"'), ("fraction", _RAW + "0.00000000000000000001"),
          ("nested", _RAW + "[" * 3000 + "]" * 3000))
_RAW_VALUE = re.compile(r'"\\u0000raw\\u0000(.*?)"(?=[,}\]])')
_STEP = re.compile(r"[^.\[\]]+|\[\d+\]")


def _leaves(node, path=""):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, f"{path}[{i}]")
    else:
        yield path


def _with(path: str, value) -> bytes:
    request = copy.deepcopy(BASE)
    steps = [int(s[1:-1]) if s.startswith("[") else s for s in _STEP.findall(path)]
    node = request
    for step in steps[:-1]:
        node = node[step]
    node[steps[-1]] = value
    return _RAW_VALUE.sub(lambda m: json.loads(f'"{m.group(1)}"'), json.dumps(request)).encode()


LEAVES = list(_leaves(BASE))
# every field with every `stride`-th value, the values rotating over the fields (all values, all fields)
CASES = {stride: [(path, *VALUES[(i + k) % len(VALUES)]) for i, path in enumerate(LEAVES)
                  for k in range(0, len(VALUES), stride)] for stride in (3, 11)}


def _line(i: int) -> dict:
    return {"lineIdentifier": str(i), "itemInformation": {"name": f"Teil {i}"}, "quantity": 1, "unitCode": "C62",
            "priceDetails": {"netPrice": 1}, "lineVatInformation": {"vatCategoryCode": "S", "vatRate": 19}}


def _request(mutate) -> bytes:
    request = copy.deepcopy(BASE)
    mutate(request, request["invoice"])
    return json.dumps(request).encode()


def _many_lines(count: int):
    def mutate(_, inv):
        inv.update(invoiceLines=[_line(i) for i in range(count)], documentLevelAllowances=[],
                   documentLevelCharges=[], documentTotals={}, vatBreakdowns=[{"vatCategoryCode": "S",
                                                                               "vatCategoryRate": 19}])
        inv.pop("vatAccountingCurrencyCode")
    return mutate


WHOLE = {
    "100,001 lines": _request(lambda _, inv: inv.update(invoiceLines=[_line(i) for i in range(100_001)])),
    "1,001 allowances": _request(lambda _, inv: inv.update(documentLevelAllowances=[
        {"amount": 1, "vatCategoryCode": "S", "vatRate": 19, "reason": "x"}] * 1001)),
    "nested body": b"[" * 100_000 + b"]" * 100_000,
    "nested objects": b'{"invoice":' * 5000 + b"1" + b"}" * 5000,
    "array body": b"[1]", "number body": b"1e400", "null body": b"null", "NaN body": b"NaN",
    "not UTF-8": b'{"invoice": "\xff\xfe"}', "duplicate key": json.dumps(BASE).encode()[:-1] + b', "invoice": {}}',
    "invoice as text": _request(lambda r, _: r.update(invoice="x")),
    "lines as object": _request(lambda _, inv: inv.update(invoiceLines={"0": _line(0)})),
    "no lines": _request(lambda _, inv: inv.update(invoiceLines=[])),
    "junk config": _request(lambda r, _: r.update(config={"syntax": "XML", "profile": "FOO", "version": "9.9",
                                                          "strict": "yes", "x": 1})),
    "negative quantity": _request(lambda _, inv: inv["invoiceLines"][0].update(quantity=-3)),
    "negative price": _request(lambda _, inv: inv["invoiceLines"][0]["priceDetails"].update(netPrice=-3)),
    "zero quantity": _request(lambda _, inv: inv["invoiceLines"][0].update(quantity=0)),
    "15-digit amounts": _request(lambda _, inv: inv["invoiceLines"][0].update(
        quantity=99_999_999_999_999, priceDetails={"netPrice": 99_999_999_999_999})),
    "key with NUL": _request(lambda _, inv: inv.update({"a\u0000b": 1})),
    "100,000-character key": _request(lambda _, inv: inv.update({"k" * 100_000: 1})),
    "right-to-left name": _request(lambda _, inv: inv["seller"].update(name="\u202eXYZ GmbH\u202c مرحبا")),
    "U+FFFE in a note": _request(lambda _, inv: inv.update(invoiceNote="a\ufffeb")),
    "due before issue": _request(lambda _, inv: inv.update(paymentDueDate="1900-01-01")),
}


@pytest.fixture(scope="module")
def client():
    return testing.TestClient(create_app(platform=False))


def _validated_alone(client, spec: str, document: bytes) -> dict:
    name, media = ("invoice.pdf", "application/pdf") if spec == "zugferd" else ("invoice.xml", "application/xml")
    boundary = "fuzz7boundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            f"Content-Type: {media}\r\n\r\n").encode() + document + f"\r\n--{boundary}--\r\n".encode()
    answer = client.simulate_post(f"/v1/invoice/{spec}/validate", body=body,
                                  headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert answer.status_code == 200, answer.text
    return answer.json


def _judge(client, spec: str, body: bytes) -> list[str]:
    """What is wrong with the endpoint's answer to `body` (nothing: [])."""
    answer = client.simulate_post(f"/v1/invoice/{spec}", body=body, headers={"Content-Type": "application/json"})
    if answer.status_code == 200:
        report = _validated_alone(client, spec, answer.content)
        return [] if report["valid"] else [f"200 whose document fails on its own: {report['issues'][:3]}"]
    if answer.status_code >= 500 or not 400 <= answer.status_code < 500:
        return [f"{answer.status_code}: {answer.text[:300]}"]
    entries = answer.json.get("errors") or []
    wrong = [] if entries else [f"{answer.status_code} without errors[]"]
    for entry in entries:
        field = entry.get("field")
        if field is None:
            if entry["code"] not in ("MALFORMED_JSON", "EMPTY_BODY") and "request body" not in entry["message"]:
                # only the body as a whole has no field
                wrong.append(f"{entry['code']} without a field: {entry['message'][:200]}")
        elif terms.business_term(field) != entry.get("businessTerm"):
            wrong.append(f"{field}: businessTerm {entry.get('businessTerm')}, the field's is "
                         f"{terms.business_term(field)}")
    return wrong


@pytest.mark.parametrize("spec,stride", [("xrechnung", 3), ("en16931", 3), ("zugferd", 11)])
def test_a_hostile_value_at_any_field_is_refused_by_field_or_makes_a_valid_document(client, spec, stride):
    failures = {f"{path}={name}": wrong for path, name, value in CASES[stride]
                if (wrong := _judge(client, spec, _with(path, value)))}
    assert not failures, f"{len(failures)} of {len(CASES[stride])}: {dict(list(failures.items())[:10])}"


@pytest.mark.parametrize("spec", ["xrechnung", "en16931", "zugferd"])
def test_hostile_bodies_are_refused_by_field_or_make_a_valid_document(client, spec):
    failures = {name: wrong for name, body in WHOLE.items() if (wrong := _judge(client, spec, body))}
    assert not failures, failures


def test_ten_thousand_lines_make_a_valid_document(client):
    answer = client.simulate_post("/v1/invoice/en16931", body=_request(_many_lines(10_000)),
                                  headers={"Content-Type": "application/json"})
    assert answer.status_code == 200, answer.text[:500]
    assert answer.content.count(b"<ram:IncludedSupplyChainTradeLineItem>") == 10_000
    assert _validated_alone(client, "en16931", answer.content)["valid"]
