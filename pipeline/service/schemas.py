"""Pydantic models of the JSON the service sends (and the validation request part), for the OpenAPI document.

The objects themselves are built by `pipeline.check.report.Report.to_dict` and `pipeline.errors.ApiError.to_dict`;
tests/test_openapi.py validates real outputs of both against these models (extra fields forbidden), so the
description cannot drift from the code.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import STATUS_TEXT


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorDetail(_Strict):
    code: str
    field: str | None = Field(None, description="JSON path of the offending input, e.g. `invoice.seller.name`.")
    businessTerm: str | None = Field(None, description="EN 16931 business term id, e.g. `BT-27`.")
    rejectedValue: Any = Field(None, description="The value that was rejected, as sent.")
    message: str


class ErrorResponse(_Strict):
    requestId: str | None
    status: Literal[tuple(sorted(set(STATUS_TEXT.values())))] = Field(  # type: ignore[valid-type]
        description="Reason class of the HTTP status: " + ", ".join(f"`{v}` ({k})" for k, v in sorted(STATUS_TEXT.items())))
    errorCode: str
    message: str
    errors: list[ErrorDetail]


class Location(_Strict):
    xpath: str | None = None
    line: int | None = None
    column: int | None = None


class Issue(_Strict):
    severity: Literal["ERROR", "WARNING"]
    code: str
    message: str
    location: Location | None = None


class ValidationSummary(_Strict):
    errors: int
    warnings: int


class XRechnungValidationResponse(_Strict):
    valid: bool
    version: str | None
    syntax: str | None
    summary: ValidationSummary
    issues: list[Issue]
    requestId: str | None


class XRechnungValidationRequest(BaseModel):
    version: str | None = Field(None, description="Validation package version; omitted or null: the latest "
                                                  "active package matching the detected syntax.")
