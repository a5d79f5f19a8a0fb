"""The status endpoints in GET /v1/openapi.json: the request schema is the model's, and real answers (200s of every
kind, the 400 / 402 / 406 / 415 / 422 codes) are described with their status, error code, headers and body shape,
as tests/test_openapi.py holds the invoice endpoints."""
from __future__ import annotations

import json

import jsonschema
import pytest

from cdar_cases import MUTATIONS, example, mutated
from conftest import REPO
from pipeline.flows.status_read import parse_status, timeline
from pipeline.flows.status_validate import validate_status
from pipeline.invoice.cdar import StatusRequest
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.service.openapi_status import StatusParseResponse, StatusValidationResponse
from test_openapi import _check_described, _multipart
from test_platform_helpers import Platform, make_store

BASE = "/v1/invoice/fr-ctc/status"


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    store = make_store("sqlite", tmp_path_factory.mktemp("openapi-status"))
    p = Platform(store)
    yield p, p.client.simulate_get("/v1/openapi.json").json
    store.close()


def test_the_request_schema_is_the_models_with_mdt_terms(platform):
    _, doc = platform
    own = StatusRequest.model_json_schema(ref_template="#/components/schemas/{model}", mode="validation")
    described = doc["components"]["schemas"]["StatusRequest"]
    assert described["required"] == own["required"] == ["message", "status", "invoice"]
    code = doc["components"]["schemas"]["StatusInfo"]["properties"]["code"]
    assert "MDT-105" in code["description"] and code["pattern"] == r"^\d{3}$"
    assert doc["paths"][BASE]["post"]["requestBody"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/StatusRequest"}
    assert {BASE + s for s in ("", "/validate", "/validate/batch", "/parse", "/timeline", "/render")} <= set(doc["paths"])
    report = {"$ref": "#/components/schemas/StatusValidationResponse"}
    assert doc["paths"][BASE + "/validate"]["post"]["responses"]["200"]["content"]["application/json"]["schema"] == \
        report
    batch = doc["paths"][BASE + "/validate/batch"]["post"]["responses"]["200"]["content"]["application/json"]
    assert batch["schema"]["properties"]["results"]["items"]["properties"]["report"] == report
    assert doc["components"]["schemas"]["XRechnungValidationResponse"]["properties"]["syntax"]["enum"] == ["CII", "UBL"]
    # the status models' components stand beside the invoice's, none replacing another (Invoice is the invoice's)
    assert "seller" in doc["components"]["schemas"]["Invoice"]["properties"]
    assert len({op["post"]["operationId"] for path, op in doc["paths"].items() if "post" in op}) == \
        len([1 for op in doc["paths"].values() if "post" in op])   # no operationId twice


def test_real_answers_match_the_described_shapes(platform):
    _, doc = platform
    for data in (example("212").read_bytes(), mutated(MUTATIONS[3][2], MUTATIONS[3][1]), b"<a/>", b"x"):
        StatusValidationResponse.model_validate(validate_status(data).to_dict())
    read = load_request(dump_request(parse_status(example("207").read_bytes(), validate=True)))
    StatusParseResponse.model_validate(read)
    schema = doc["paths"][BASE + "/timeline"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    answer = json.loads(dump_request(timeline([("a.xml", example("200").read_bytes()), ("b.txt", b"no")], True)))
    jsonschema.validate(answer, schema)


def test_every_answer_is_described_with_its_code_and_headers(platform):
    p, doc = platform
    _, token = p.key(credits=5)
    _, broke = p.key(credits=0)
    request = (REPO / "fixtures" / "fr-status-210.json").read_bytes()
    no_reason = json.loads(request)
    del no_reason["status"]["details"][0]["reasonCode"]
    json_type = {"Content-Type": "application/json"}
    calls = [(BASE, request, json_type, 200, None), (BASE, json.dumps(no_reason).encode(), json_type, 400,
                                                     "INVALID_INPUT"),
             (BASE, request, {"Content-Type": "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE"),
             (BASE, request, {**json_type, "Accept": "image/png"}, 406, "NOT_ACCEPTABLE")]
    message = example("207").read_bytes()
    for path, request_part, status, code in (
            (BASE + "/validate", {}, 200, None), (BASE + "/validate", {"version": "9.9"}, 400, "UNSUPPORTED_VERSION"),
            (BASE + "/validate/batch", {}, 200, None), (BASE + "/parse", {"validate": True}, 200, None),
            (BASE + "/timeline", {}, 200, None), (BASE + "/render", {"language": "fr"}, 200, None),
            (BASE + "/render", {"language": "xx"}, 400, "INVALID_INPUT")):
        body, media = _multipart(message, request_part)
        calls.append((path, body, {"Content-Type": media}, status, code))
    body, media = _multipart(b"not a message", {})
    calls += [(BASE + "/parse", body, {"Content-Type": media}, 400, "NOT_A_STATUS_MESSAGE"),
              (BASE + "/render", body, {"Content-Type": media}, 400, "NOT_A_STATUS_MESSAGE")]
    for path, body, headers, status, code in calls:
        r = p.post(token, path=path, body=body, headers=headers)
        assert r.status_code == status, (path, r.status_code, r.text[:300])
        _check_described(doc, path, r)
        assert code is None or r.json["errorCode"] == code
    r = p.post(broke, path=BASE, body=request, headers=json_type)   # generation costs a credit
    assert r.status_code == 402
    _check_described(doc, BASE, r)
