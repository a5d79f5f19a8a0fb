"""A job's document whose refusal cannot even be written ends as its own INTERNAL_ERROR line.

`job_document.work` writes a refused document's line from the endpoint's error; when that writing itself raised (a
rejected value json could not write: a Decimal, before `error_line` wrote amounts as the API does) the exception left
`work`, the engines took the chunk up again, it failed again, and the job stayed "running" at that document for good.
Here a convert flow refuses with a detail that cannot be written (fault injection at the flow's boundary): the
document gets an INTERNAL_ERROR line instead of an exception.
"""
from __future__ import annotations

import json

from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows import job_document


class _Unwritable(ErrorDetail):
    """A detail whose writing fails, as a Decimal's did in json.dumps."""

    def to_dict(self) -> dict:
        raise TypeError("Object of type Decimal is not JSON serializable")


def test_a_refusal_that_cannot_be_written_is_the_documents_internal_error(monkeypatch):
    calls = []

    def refuse(data, *args, **kwargs):
        calls.append(data)
        raise ApiError(422, "VALIDATION_FAILED", "refused", [_Unwritable("X-1", "bad", "invoice.x", "BT-1")])

    monkeypatch.setattr(job_document.convert_flow, "convert", refuse)
    done = job_document.work("convert", {"to": "UBL"}, "a.xml", b"<x/>", request_id="job-1")
    assert done.kind == "error"
    line = json.loads(done.line)
    assert line["name"] == "a.xml"
    assert line["error"]["code"] == "INTERNAL_ERROR"
    assert "TypeError" in line["error"]["message"]
    assert calls == [b"<x/>"]


def test_a_refusal_naming_an_amount_is_written_as_the_api_writes_it(monkeypatch):
    from decimal import Decimal

    def refuse(data, *args, **kwargs):
        raise ApiError(422, "SOURCE_INVALID", "refused", [ErrorDetail("R120", "amount", "invoice.lines[0]", "BT-131",
                                                                       Decimal("80.00"))])

    monkeypatch.setattr(job_document.convert_flow, "convert", refuse)
    done = job_document.work("convert", {"to": "UBL"}, "b.xml", b"<x/>", request_id="job-2")
    assert done.kind == "error"
    assert '"rejectedValue": 80.00' in done.line or '"rejectedValue":80.00' in done.line
    assert json.loads(done.line)["error"]["code"] == "SOURCE_INVALID"
