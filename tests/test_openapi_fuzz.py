"""OpenAPI fuzzing in process: schemathesis generates requests from the document the service serves
(GET /v1/openapi.json) and sends them to the Falcon app through WSGI, no server. Every answer must be described:
no 5xx, its status listed for the operation, its content type and headers as declared, its body valid on the
response's schema (errors in the ErrorResponse shape), and a request that breaks the document refused (4xx).

Bounded and deterministic (hypothesis derandomized, no example database): EXAMPLES cases per operation in each
generation mode, positive (valid on the document) and negative (breaking it). The jobs API is left to the live run
in tests/test_openapi.py, named below (EXCLUDED): a job starts the embedded pool's thread in this process. Real
documents go through the reading and validation paths too, since random bytes rarely reach a 200 there."""
from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.checks import (content_type_conformance, negative_data_rejection, not_a_server_error,
                                 response_headers_conformance, response_schema_conformance, status_code_conformance)
from schemathesis.config import SchemathesisConfig
from schemathesis.core.failures import Failure, FailureGroup

from conftest import CORPUS
from pipeline.service import apikeys
from pipeline.service.app import create_app
from pipeline.service.platform import Backends, PlatformConfig
from pipeline.settings import get_settings
from pipeline.storage.ratelimit import MemoryLimiter
from pipeline.storage.sqlite import SqliteStore
from test_platform_helpers import REPO

EXAMPLES = 8  # per operation and mode: 31 operations x 2 modes, ~30 s of CPU (40-100 s on 2 busy cores)
EXCLUDED = {  # operation -> why it is not fuzzed here (each must still be in the document)
    "POST /v1/jobs": "starts the embedded job pool's thread; live run in tests/test_openapi.py",
    "GET /v1/jobs": "the jobs API: live run in tests/test_openapi.py",
    "GET /v1/jobs/{job_id}": "the jobs API: live run in tests/test_openapi.py",
    "DELETE /v1/jobs/{job_id}": "the jobs API: live run in tests/test_openapi.py",
    "GET /v1/jobs/{job_id}/results": "the jobs API: live run in tests/test_openapi.py",
}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
          response_schema_conformance]
# No extra query parameters or headers (the service ignores unknown query parameters, which the document does not
# forbid), and no generated Authorization header: every request carries the test key.
CONFIG = """
[generation]
deterministic = true
allow-extra-parameters = false
with-security-parameters = false
"""


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    """(schema, Authorization header) of an app on a fresh SQLite store with one key of many credits."""
    data = tmp_path_factory.mktemp("fuzz")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EINVOICE_DATA_DIR", str(data))
        # Werkzeug's test client names its multipart boundary "---...WerkzeugFormPart_{time()}{random()}", beyond
        # RFC 2046's 70 characters one time in five (a 400 for the header, not the answer under test): a short
        # random part keeps every boundary valid and still unique per request through time().
        env.setattr("werkzeug.test.random", lambda: 0.5)
        get_settings.cache_clear()
        store = SqliteStore(data / "platform.sqlite3")
        app = create_app(backends=Backends(store, MemoryLimiter(), PlatformConfig(rate_limit=10 ** 6)))
        key_id, token, digest = apikeys.mint("test")
        store.create_key(key_id, "fuzz", "test", digest, 10 ** 6, None)
        schema = schemathesis.openapi.from_wsgi("/v1/openapi.json", app,
                                                config=SchemathesisConfig.from_str(CONFIG))
        yield schema, {"Authorization": f"Bearer {token}"}
        store.close()
    get_settings.cache_clear()


def _sendable(case):
    """The case with one byte in an empty `file` part: Werkzeug (the WSGI transport) writes an empty part without
    the blank line before the next boundary (RFC 2046 allows a part of headers only), which Falcon's parser reads
    as the file's bytes up to the boundary after, the `request` part with them; curl and requests send the blank
    line, and the live run in tests/test_openapi.py sends empty files so."""
    if isinstance(case.body, dict) and case.body.get("file") in (b"", ""):
        case.body = {**case.body, "file": b" "}
    return case


def _nothing_to_break(operation: dict) -> bool:
    """No body and only parameters any text fits (a page's `lang`, a file's `name`): no request breaks the
    document, so the negative mode has no case to make."""
    return "requestBody" not in operation and all(
        set(p["schema"]) <= {"type", "examples"} and p["schema"].get("type") == "string"
        for p in operation.get("parameters", []))


def _operations(schema) -> dict:
    return {op.label: op for op in (result.ok() for result in schema.get_all_operations())}


def test_fuzzed_requests_get_described_answers_and_broken_ones_are_refused(service):
    schema, auth = service
    operations = _operations(schema)
    assert set(EXCLUDED) <= set(operations), "an excluded operation is no longer in the document"
    failures, seen, unbreakable = {}, {}, set()  # failures: the first per operation and mode
    for label, op in operations.items():
        if label in EXCLUDED:
            continue
        for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
            checks = CHECKS + ([negative_data_rejection] if mode == schemathesis.GenerationMode.NEGATIVE else [])
            statuses = seen.setdefault(label, set())

            @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                      phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
            @given(case=op.as_strategy(generation_mode=mode).map(_sendable))
            def run(case):
                try:
                    response = case.call_and_validate(headers=auth, checks=checks)
                except (Failure, FailureGroup) as exc:
                    failures.setdefault(f"{label} ({mode.value})", str(exc)[:1500])
                else:
                    statuses.add(response.status_code)

            try:
                run()
            except Unsatisfiable:  # nothing to break: no parameters, no body (asserted below)
                unbreakable.add(label)
    assert not failures, "\n\n".join(f"{where}: {what}" for where, what in list(failures.items())[:10])
    assert unbreakable == {label for label, op in operations.items()
                           if label not in EXCLUDED and _nothing_to_break(op.definition.raw)}, unbreakable
    # every operation was reached (a case whose every request failed would add no status)
    assert all(seen[label] for label in seen), {label for label in seen if not seen[label]}
    assert len(seen) + len(EXCLUDED) == len(operations) >= 36


def _form(file: bytes, request: dict | None = None) -> dict:
    return {"file": file, **({"request": request} if request is not None else {})}


def test_real_documents_get_answers_valid_on_the_document(service):
    """200 answers of real documents held against their schemas: the parse result, the validation report and
    the batch report of official test documents, a generated status message read back."""
    schema, auth = service
    operations = _operations(schema)
    ubl = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
    cii = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
    calls = [("POST /v1/invoice/parse", _form(ubl, {"validate": False})),
             ("POST /v1/invoice/parse", _form(cii)),
             ("POST /v1/invoice/xrechnung/validate", _form(ubl, {"version": None, "strict": True})),
             ("POST /v1/invoice/xrechnung/validate/batch", _form(cii, {"strict": None}))]
    for label, body in calls:
        response = operations[label].Case(body=body, media_type="multipart/form-data").call_and_validate(
            headers=auth, checks=CHECKS)
        assert response.status_code == 200, (label, response.text[:300])
    report = json.loads(response.text)["results"][0]["report"]
    assert report["valid"] is True and report["syntax"] == "CII"
    status = json.loads((REPO / "fixtures" / "fr-status-200.json").read_text())
    message = operations["POST /v1/invoice/fr-ctc/status"].Case(body=status, media_type="application/json") \
        .call_and_validate(headers=auth, checks=CHECKS)
    assert message.status_code == 200, message.text[:300]
    parsed = operations["POST /v1/invoice/fr-ctc/status/parse"].Case(
        body=_form(message.content), media_type="multipart/form-data").call_and_validate(headers=auth, checks=CHECKS)
    assert parsed.status_code == 200, parsed.text[:300]
    assert json.loads(parsed.text)["status"]["code"] == status["status"]["code"]


# -- what the fuzzing found, fixed -------------------------------------------------------------------------------

def test_request_parts_are_documented_closed_and_strict_null_is_documented(service):
    """The `request` parts take their documented keys only (400 UNKNOWN_FIELD otherwise), so their schemas say
    `additionalProperties: false`; `strict: null` and status render's `language: null` are taken as the defaults,
    so the schemas allow null."""
    schema, _ = service
    components = schema.raw_schema["components"]["schemas"]
    for name in ("XRechnungValidationRequest", "ParseRequest", "ConvertRequest", "RenderRequest",
                 "StatusReadRequest", "StatusRenderRequest"):
        assert components[name]["additionalProperties"] is False, name
    assert {"type": "null"} in components["XRechnungValidationRequest"]["properties"]["strict"]["anyOf"]
    assert {"type": "null"} in components["StatusRenderRequest"]["properties"]["language"]["anyOf"]


@pytest.mark.parametrize("spec", ["xrechnung", "zugferd", "fr-ctc/status"])
def test_batch_refuses_a_report_language_the_single_endpoint_refuses(service, spec):
    """`request.metadataLanguage` of a batch was taken whatever it was (`"fr"`, `{}`): now a 400 naming it, as the
    single endpoint answers, before any document is read."""
    schema, auth = service
    batch = _operations(schema)[f"POST /v1/invoice/{spec}/validate/batch"]
    for language, status in (("fr", 400), ({}, 400), (7, 400), ("de", 200), (None, 200)):
        response = batch.Case(body=_form(b"<x/>", {"metadataLanguage": language}),
                              media_type="multipart/form-data").call_and_validate(headers=auth, checks=CHECKS)
        assert response.status_code == status, (language, response.text[:300])
        if status == 400:
            error = json.loads(response.text)
            assert error["errorCode"] == "INVALID_INPUT" and error["errors"], (language, error)
            assert error["errors"][0]["field"] == "request.metadataLanguage"
            assert error["errors"][0]["code"] == "UNSUPPORTED_LANGUAGE"
