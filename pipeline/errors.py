"""Typed API errors. Raise them anywhere; the service turns them into the ErrorResponse shape in one place.
Also `TransformError`, a failure of one of our own stylesheets (a bug to log, never the client's fault).

`status` in the ErrorResponse is the lower-case reason class of the HTTP status
(see STATUS_TEXT): clients can branch on it without parsing the code.
"""
from __future__ import annotations

import logging
import re
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Values of ErrorResponse.status, one per HTTP status we emit.
STATUS_TEXT = {
    400: "bad_request",
    401: "unauthorized",
    402: "payment_required",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",                   # answered by the HTTP server before the app
    413: "payload_too_large",
    414: "uri_too_long",                      # answered by the HTTP server (gunicorn) before the app
    415: "unsupported_media_type",
    417: "expectation_failed",                # answered by the HTTP server before the app
    422: "unprocessable_entity",
    429: "too_many_requests",
    431: "request_header_fields_too_large",   # answered by the HTTP server (gunicorn) before the app
    500: "internal_error",
    501: "not_implemented",                   # a transfer coding other than chunked, refused by the HTTP server
    503: "service_unavailable",
    505: "http_version_not_supported",        # answered by the HTTP server before the app
}


@dataclass
class ErrorDetail:
    code: str
    message: str
    field: str | None = None
    businessTerm: str | None = None
    rejectedValue: Any = None
    # the German this service wrote for its own finding (a content check refused by config.strict, a PDF that cannot
    # be read, a kept amount), or an official rule's text with the German of what the service adds to it (where a
    # convert's refusal found it in the source), for the page in German; absent elsewhere (an extension of the spec's
    # ErrorDetail)
    messageDe: str | None = None

    def to_dict(self) -> dict:
        d = {
            "code": self.code,
            "field": self.field,
            "businessTerm": self.businessTerm,
            "rejectedValue": _shown(self.rejectedValue),
            "message": self.message,
        }
        if self.messageDe:
            d["messageDe"] = self.messageDe
        return d


MAX_SHOWN_DEPTH = 20   # a rejected object or array nested deeper is left out of the error body


def _shown(value: Any, depth: int = 0) -> Any:
    """A rejected value as the error body can carry it: an object or array nested deeper than MAX_SHOWN_DEPTH (a
    hostile request part) is None, as writing it would exhaust the stack; anything else as it is."""
    if not isinstance(value, (dict, list, tuple)):
        return value
    if depth >= MAX_SHOWN_DEPTH:
        raise _TooDeep()
    try:
        if isinstance(value, dict):
            return {k: _shown(v, depth + 1) for k, v in value.items()}
        return [_shown(v, depth + 1) for v in value]
    except _TooDeep:
        if depth:
            raise
        return None


class _TooDeep(Exception):
    pass


@dataclass
class ApiError(Exception):
    """An error with an HTTP status, a stable error code and optional per-field details."""

    http_status: int
    error_code: str
    message: str
    errors: list[ErrorDetail] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_dict(self, request_id: str | None) -> dict:
        return {
            "requestId": request_id,
            "status": STATUS_TEXT.get(self.http_status, str(self.http_status)),
            "errorCode": self.error_code,
            "message": self.message,
            "errors": [e.to_dict() for e in self.errors],
        }


# The error codes of the service specification (section 7). A client switches on these.
SPEC_CODES = ("INVALID_INPUT", "INSUFFICIENT_CREDITS", "VALIDATION_FAILED", "PDF_A3_VALIDATION_FAILED",
              "RATE_LIMIT_EXCEEDED", "RATE_LIMIT_CONFIGURATION_UNAVAILABLE", "GENERATION_FAILED", "INTERNAL_ERROR")

# Our codes for cases the specification names a code for: such an error answers the spec's code in `errorCode` and
# ours in `errors[0].code` (a field the spec defines), with the spec's status, so a client that switches on the
# spec's codes lands in the right branch and one that knows ours learns more (`refined`).
REFINES = {
    "RULES_NOT_INSTALLED": "INTERNAL_ERROR",      # 500: no rule pack of the specification is installed
    "RULES_UNAVAILABLE": "INTERNAL_ERROR",        # 500: an installed rule pack cannot be loaded
    "STORAGE_UNAVAILABLE": "RATE_LIMIT_CONFIGURATION_UNAVAILABLE",   # 503: the store of keys, their limits and
                                                                     # credits is unreachable; retry later
    "RULES_CHANGED": "RATE_LIMIT_CONFIGURATION_UNAVAILABLE",  # 503: a rule pack the request was judged by was removed
                                                              # while it ran (pipeline rules); retry
    "JOBS_DISK_FULL": "RATE_LIMIT_CONFIGURATION_UNAVAILABLE",  # 503: a job upload found the jobs directory full;
                                                               # retry (pipeline.jobs.files.disk_full)
}


# Codes whose message is made from the server's rules home (`pipeline.check.packs`' errors name its folders and
# files): a client, of the API, a batch item or a job, learns which pack failed, never where the server keeps it.
_SERVER_PATHS = ("RULES_NOT_INSTALLED", "RULES_UNAVAILABLE", "RULES_CHANGED")
# An absolute path (or a file: URI) of two or more parts; an XPath's steps (`/rsm:X/ram:Y`) have a prefix's colon
_PATH = re.compile(r"(?<![\w.:/])(?:file:)?/+(?:[^\s/:()\[\]'\",;]+/)+[^\s/:()\[\]'\",;]*(?![^\s)\]'\",;:])")
log = logging.getLogger("pipeline.errors")


def without_paths(message: str) -> str:
    """`message` with each absolute path cut to its last two parts (`…/en16931/1.3.16`): what names the pack, not the
    server's folders (the whole path stays in the server's log and in `pipeline rules list`)."""
    def cut(found: re.Match) -> str:
        path = found.group(0).rstrip(".")  # a sentence's full stop
        parts = [p for p in path.split("/") if p and p != "file:"]
        return "…/" + "/".join(parts[-2:]) + found.group(0)[len(path):]
    return _PATH.sub(cut, message)


def refined(http_status: int, code: str, message: str, headers: dict[str, str] | None = None) -> ApiError:
    """An error of one of our REFINES codes: errorCode the spec's code, errors[0].code ours. A rules error's 500
    named the server's rules home (`/root/.cache/einvoice-pipeline/rules/peppol/2026.5/.pack.json`) to every client:
    its paths are cut (`without_paths`), the whole message goes to the log."""
    if code in _SERVER_PATHS and (shown := without_paths(message)) != message:
        log.warning("%s: %s", code, message)
        message = shown
    return ApiError(http_status, REFINES[code], message, [ErrorDetail(code, message)], headers=dict(headers or {}))


def rules_changed(message: str) -> ApiError:
    """503 RULES_CHANGED: a rule pack this request was judged by was removed or replaced while it ran (`pipeline rules
    remove / add / install` on a running service); nothing was done or charged, and the next request chooses among
    the packs installed then. The spec's retry-later 503, refined (REFINES)."""
    return refined(503, "RULES_CHANGED", message, {"Retry-After": "1"})


def invalid_input(message: str, errors: list[ErrorDetail] | None = None) -> ApiError:
    return ApiError(400, "INVALID_INPUT", message, errors or [])


def bad_request(code: str, message: str, errors: list[ErrorDetail] | None = None) -> ApiError:
    return ApiError(400, code, message, errors or [])


def unknown_fields(request: dict, known, taker: str) -> None:
    """400 INVALID_INPUT naming each key of a `request` part that `taker` (an endpoint, a job's operation) does not
    take, as the generation endpoints name an unknown field: a misspelt option must not be silently ignored."""
    known = tuple(known)
    unknown = [name for name in request if name not in known]
    if unknown:
        takes = ", ".join(known) or "no options"
        raise invalid_input(f"The 'request' part has {len(unknown)} unknown field(s) for {taker}; it takes {takes}.",
                            [ErrorDetail("UNKNOWN_FIELD", f"is not a field of {taker}'s request (unknown field)",
                                         field=f"request.{name}", rejectedValue=request[name]) for name in unknown])


def validation_failed(message: str, errors: list[ErrorDetail]) -> ApiError:
    return ApiError(422, "VALIDATION_FAILED", message, errors)


def pdf_validation_failed(message: str, errors: list[ErrorDetail]) -> ApiError:
    return ApiError(422, "PDF_A3_VALIDATION_FAILED", message, errors)


# A job that failed as a whole says why in its `message` (English, as the API's errors), and the same sentence in
# German in `messageDe`: (English, German) per cause, with the values that fill both. The German is found again from
# a stored message by its English form (`job_failure_de`), so that a job's row keeps one message.
JOB_FAILURES = {
    # pipeline.jobs.chunks.FilesMissing: the worker has not got the job's folder (a jobs directory not shared)
    "files_missing": ("job {job}: document {index} is not in {folder}",
                      "Auftrag {job}: Das Dokument {index} liegt nicht in {folder} (ist das Auftragsverzeichnis allen "
                      "Workern gemeinsam?)."),
    # pipeline.jobs.engine: a chunk failed on every attempt (its credits still held go back)
    "chunk_failed": ("A chunk of documents could not be worked on: {reason}",
                     "Ein Teil der Dokumente ließ sich auch nach mehreren Versuchen nicht bearbeiten; Meldung des "
                     "Dienstes: {reason}"),
}


def job_failure(cause: str, **values: object) -> str:
    """The English `message` of a job that failed for `cause` (JOB_FAILURES), filled with `values`."""
    return JOB_FAILURES[cause][0].format(**values)


def _english_form(template: str) -> re.Pattern:
    parts = [re.escape(text) + (f"(?P<{name}>.*?)" if name else "")
             for text, name, _, _ in string.Formatter().parse(template)]
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


_JOB_FORMS = [(_english_form(english), german) for english, german in JOB_FAILURES.values()]


def job_failure_de(message: str | None) -> str | None:
    """The German of a failed job's `message` (`job_failure`'s), None for a message of another form."""
    for form, german in _JOB_FORMS:
        found = form.match(message or "")
        if found:
            return german.format(**found.groupdict())
    return None


class TransformError(Exception):
    """A stylesheet failed at run time (or to compile). The message names the file and line."""

    def __init__(self, stylesheet: Path, message: str, xsl_messages: list[str] | None = None):
        self.stylesheet = Path(stylesheet)
        self.xsl_messages = xsl_messages or []
        text = f"{stylesheet}: {message}"
        if self.xsl_messages:
            text += "\n" + "\n".join(f"xsl:message: {m}" for m in self.xsl_messages)
        super().__init__(text)
