"""The multipart upload of the validation endpoints (service spec 4.2): a `file` part and a `request` JSON part.

Shared by the XML and the ZUGFeRD validate endpoints. The file is read in bounded chunks: an upload over
`settings.max_upload_bytes` is answered 413 without being read to the end. A chunked upload
(Transfer-Encoding: chunked, no Content-Length; many HTTP clients stream so) is read to its end under the same
bound first, since Falcon's multipart parser needs a length.
"""
from __future__ import annotations

import functools
import io
import re

import falcon
from falcon.media.multipart import MultipartParseOptions
from pydantic import BaseModel

from pipeline.errors import ApiError, ErrorDetail, unknown_fields
from pipeline.flows.validation_report import readable_report
from pipeline.invoice.model import loads, metadata_language
from pipeline.service.schemas import XRechnungValidationRequest
from pipeline.settings import get_settings
from pipeline.unpack import name_text

# Room for the multipart framing and the request part on top of the file itself.
_FRAMING_SLACK = 64 * 1024
_MAX_REQUEST_PART = 64 * 1024
_CHUNK = 1 << 16


def _bad(code: str, message: str, field: str | None = None, rejected=None) -> ApiError:
    return ApiError(400, "INVALID_INPUT", message, [ErrorDetail(code, message, field=field, rejectedValue=rejected)])


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "PAYLOAD_TOO_LARGE", f"The uploaded file exceeds the limit of {limit} bytes.",
                    [ErrorDetail("FILE_TOO_LARGE", f"at most {limit} bytes", field="file")])


def _read_bounded(stream, limit: int) -> bytes | None:
    """Read at most `limit` bytes; None if there is more."""
    chunks, size = [], 0
    while True:
        chunk = stream.read(min(_CHUNK, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return None


# Parts beyond the files a request may carry: its `request` part and a few others, which are skipped.
_OTHER_PARTS = 16


def form_parts(req: falcon.Request, max_files: int):
    """The parts of a multipart/form-data body, read one after another, up to `max_files` files and a few other
    parts. Falcon's parser stops at 64 parts by default, below a batch's 200 files and a job's many more; beyond
    this count it raises MediaMalformedError ("maximum number of form body parts exceeded"). The body is read
    through `EmptyParts`, so that an empty part never takes the next one with it."""
    _, options = falcon.parse_header(req.content_type or "")
    boundary = options.get("boundary", "").encode()  # (as Falcon encodes it)
    if not boundary:  # Falcon's parser names what is wrong
        return _form_handler(max_files + _OTHER_PARTS).deserialize(req.bounded_stream, req.content_type,
                                                                    req.content_length)
    # (the length only bounds what Falcon's reader asks for: the body ends where the request's stream does)
    return _form_handler(max_files + _OTHER_PARTS).deserialize(EmptyParts(req.bounded_stream.read, boundary),
                                                                req.content_type, 1 << 62)


class EmptyParts:
    """A multipart body as Falcon's parser needs it to see an empty part. RFC 2046 5.1.1 lets a part end right
    after its header lines (`body-part := MIME-part-headers [CRLF *OCTET]`), so an empty file part may be its
    headers followed at once by the next delimiter (`...filename="a.xml"\r\n\r\n--B`), and some clients leave
    out the header lines' last CRLF too (`...filename="a.xml"\r\n--B`). Falcon reads a part's headers up to a
    blank line and its body up to CRLF + delimiter: it took the next part's headers and body as the empty file's
    content (the `request` part was lost) or as more of its headers (the file part was lost). Here the missing
    line ends are put back as the body streams through (in bounded pieces), so such a part is an empty file and
    the next part stays a part."""

    _PIECE = 1 << 16
    _HEADS = 16 * 1024  # a part's headers longer than this are left as they are (Falcon's limit is 8 KiB)

    def __init__(self, read, boundary: bytes):
        self._read, self._dash, self._delimiter = read, b"--" + boundary, b"\r\n--" + boundary
        self._state = self._preamble
        self._buffer, self._out, self._eof = bytearray(), bytearray(), False

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._out) < size) and not (self._eof and not self._buffer):
            if not self._eof:
                piece = self._read(size if size > 0 else self._PIECE)
                self._eof = not piece
                self._buffer += piece
            while self._buffer and self._state():  # each state says whether it could go on
                pass
            if self._eof and self._buffer:  # the body ends inside something undecided: as it came
                self._emit(len(self._buffer))
        if size < 0 or size >= len(self._out):
            taken, self._out = bytes(self._out), bytearray()
            return taken
        taken = bytes(self._out[:size])
        del self._out[:size]
        return taken

    def _emit(self, n: int, added: bytes = b"") -> None:
        self._out += self._buffer[:n]
        self._out += added
        del self._buffer[:n]

    def _up_to(self, mark: bytes) -> bool:
        """Pass the bytes through `mark` on to the next state; without it, all but what may begin it."""
        at = self._buffer.find(mark)
        if at < 0:
            self._emit(max(0, len(self._buffer) - len(mark) + 1))
            return False
        self._emit(at + len(mark))
        self._state = self._delimited
        return True

    def _preamble(self) -> bool:
        return self._up_to(self._dash)

    def _body(self) -> bool:
        return self._up_to(self._delimiter)

    def _delimited(self) -> bool:
        """After a delimiter: `--` ends the form, else the rest of its line goes and a part's headers follow."""
        if len(self._buffer) < 2:
            return False
        if self._buffer[:2] == b"--":
            self._state = self._epilogue
            return True
        end = self._buffer.find(b"\r\n")
        if end < 0 and len(self._buffer) <= self._HEADS:
            return False
        self._emit(end + 2 if end >= 0 else len(self._buffer))
        self._state = self._headers if end >= 0 else self._epilogue
        return True

    def _headers(self) -> bool:
        blank, delimiter = self._buffer.find(b"\r\n\r\n"), self._buffer.find(self._delimiter)
        if delimiter < 0 and not self._eof and (blank < 0 or len(self._buffer) < blank + 2 + len(self._delimiter)):
            if blank < 0 and len(self._buffer) > self._HEADS:
                self._state = self._epilogue  # no part's headers: Falcon's parser says what is wrong
                return True
            return False  # (whether the delimiter follows the blank line at once is not known yet)
        if delimiter >= 0 and (blank < 0 or delimiter < blank):  # header lines, then at once the delimiter
            self._emit(delimiter, b"\r\n\r\n")
        elif blank < 0:
            self._state = self._epilogue
            return True
        else:
            self._emit(blank + 4)
            if delimiter == blank + 2:  # the blank line's CRLF was the delimiter's: an empty body, and its CRLF
                self._buffer[:0] = b"\r\n"
        self._state = self._body
        return True

    def _epilogue(self) -> bool:
        self._emit(len(self._buffer))
        return False


def part_names(part) -> tuple[str | None, str | None]:
    """(form field name, file name) of a part. RFC 7578 (4.2) wants them in UTF-8 and Falcon decodes them strictly,
    but older clients send their code page (a German Windows tool: "Rechnung ü.xml" in CP1252): such a header is
    read as `unpack.name_text` reads it instead of failing the whole upload. A quoted `filename` is taken back from
    HTML's form encoding (`form_unescaped`); an RFC 5987 `filename*` (Falcon reads it) is percent-decoded already."""
    raw = part._headers.get(b"content-disposition", b"")  # Falcon keeps a part's headers as sent, as bytes
    _, params = falcon.parse_header(name_text(raw))
    try:
        name, filename = part.name, part.filename
    except UnicodeDecodeError:
        name, filename = params.get("name"), params.get("filename")
    if filename is not None and filename == params.get("filename"):
        filename = form_unescaped(filename)
    return name, filename


# What browsers percent-encode in a multipart file name (HTML's multipart/form-data encoding algorithm): `"`, CR
# and LF, so that no name ends the quoted string or the header. Nothing else: "%" itself is sent as it is, so
# "100%.xml" and "Rechnung%20März.xml" are names as written; `pipeline jobs submit` encodes the same three.
_FORM_ESCAPES = {"%22": '"', "%0d": "\r", "%0a": "\n"}
_FORM_ESCAPED = re.compile(r"%(?:22|0[dDaA])")


def form_unescaped(filename: str) -> str:
    """A form part's file name as the file is named: `a%22b.xml` -> `a"b.xml`."""
    return _FORM_ESCAPED.sub(lambda m: _FORM_ESCAPES[m.group(0).lower()], filename)


@functools.lru_cache(maxsize=8)
def _form_handler(max_parts: int) -> falcon.media.MultipartFormHandler:
    options = MultipartParseOptions()
    options.max_body_part_count = max_parts
    return falcon.media.MultipartFormHandler(options)


def _one_file(n: int) -> ApiError:
    message = ("This endpoint takes one document in one 'file' part; for several, use the batch endpoint "
               "(.../validate/batch) or the jobs API (POST /v1/jobs).")
    return ApiError(400, "INVALID_INPUT", message, [ErrorDetail("TOO_MANY_FILES", message, field="file",
                                                                rejectedValue=n)])


def read_parts(req: falcon.Request, limit: int, max_files: int | None = 1,
               too_many=None) -> tuple[list[tuple[str | None, bytes]], bytes | None]:
    """The `file` parts (name, bytes) and the raw `request` part of a multipart/form-data upload, read under one
    upload's bound: 413 when the body or the files together exceed `limit`; beyond `max_files` `too_many(n)` is
    raised (a single-file endpoint: 400 TOO_MANY_FILES, never a second document silently left unchecked). Shared by the single and the batch
    validation endpoints and the reading endpoints."""
    if req.content_length is not None and req.content_length > limit + _FRAMING_SLACK:
        raise _too_large(limit)
    refuse_encoded(req)
    if not (req.content_type or "").lower().startswith("multipart/form-data"):
        raise _bad("NOT_MULTIPART", "Send multipart/form-data with a 'file' part (and optionally a 'request' JSON part).",
                   rejected=req.content_type)
    if req.content_length is None and "chunked" in (req.get_header("Transfer-Encoding") or "").lower():
        body = _read_bounded(req.stream, limit + _FRAMING_SLACK)
        if body is None:
            raise _too_large(limit)
        req.stream = req.env["wsgi.input"] = io.BytesIO(body)  # the parser reads this copy, with its length
        req.env["CONTENT_LENGTH"] = str(len(body))
    files: list[tuple[str | None, bytes]] = []
    request_raw, left = None, limit
    try:
        for part in form_parts(req, max_files or 1):
            name, filename = part_names(part)
            if name == "file":
                if max_files is not None and len(files) >= max_files:
                    raise (too_many or _one_file)(len(files) + 1)
                data = _read_bounded(part.stream, left)
                if data is None:
                    raise _too_large(limit)
                left -= len(data)
                files.append((filename, data))
            elif name == "request" and request_raw is None:
                request_raw = _read_bounded(part.stream, _MAX_REQUEST_PART)
                if request_raw is None:
                    raise _bad("REQUEST_TOO_LARGE", "The 'request' part is too large.", field="request")
            else:
                raise unexpected_part(name)
    except falcon.MediaMalformedError as exc:
        raise _bad("MALFORMED_MULTIPART", f"The multipart body could not be read: {exc.description or exc}") from exc
    if not files:
        raise _bad("MISSING_PART", "The 'file' part is missing.", field="file")
    return files, request_raw


def refuse_encoded(req) -> None:
    """415 for a compressed body (Content-Encoding gzip, br, ...): it would be read as if it were plain and fail as
    malformed JSON or XML, saying nothing of the cause."""
    encoding = (req.get_header("Content-Encoding") or "").strip().lower()
    if encoding not in ("", "identity"):
        raise ApiError(415, "UNSUPPORTED_MEDIA_TYPE", f"Content-Encoding {encoding} is not supported; send the body "
                       "uncompressed.")


def unexpected_part(name: str | None) -> ApiError:
    """400 UNKNOWN_PART for a second `request` part or a part of another name (`requests`, `Request`): its options
    must not be silently lost, as a misspelt key in the request part is not."""
    shown = (name or "")[:100]
    return _bad("UNKNOWN_PART", f"The form has a part named {shown!r}" + (" twice" if name == "request" else "")
                + "; this endpoint takes 'file' parts and one 'request' part.", field=shown or None)


def read_validation_upload(req: falcon.Request, fields: type[BaseModel] = XRechnungValidationRequest,
                           max_bytes: int | None = None) -> tuple[bytes, dict]:
    """(file bytes, request object) from a multipart/form-data upload. The `request` part is optional on every
    endpoint: absent means {} (the defaults), as a newcomer's first `curl -F file=@...` expects; its keys are those
    of `fields`, the model the OpenAPI document describes it with.
    Raises ApiError 400 (not multipart, no file part, malformed JSON, an unknown key, bad `version`) or 413 (file
    too large)."""
    files, request_raw = read_parts(req, max_bytes or get_settings().max_upload_bytes)
    (name, file_bytes), = files
    req.context.upload_name = name  # named in a report for people
    if request_raw is None:
        return file_bytes, {}
    request = parse_request_part(request_raw, fields, req.path)
    report_language(request)  # checked before the work, whatever the report is answered as (a JSON report too)
    return file_bytes, request


def field_names(model: type[BaseModel]) -> tuple[str, ...]:
    """The JSON keys of a request part's model (aliases where they differ from the Python names)."""
    return tuple(f.alias or name for name, f in model.model_fields.items())


def parse_request_part(raw: bytes, fields: type[BaseModel] | None, taker: str) -> dict:
    """The `request` part as a JSON object; with `fields`, a key the model does not have is a 400 (for `taker`,
    the endpoint's path). The jobs API checks its keys per operation instead (`job_document.check_options`)."""
    try:  # as strict as a JSON body (no NaN, Infinity, duplicate keys; nesting bounded), a BOM allowed
        request = loads(raw.decode("utf-8-sig") if raw.strip() else "null")
    except (ValueError, RecursionError) as exc:  # (UnicodeDecodeError and JSONDecodeError are ValueErrors)
        raise _bad("MALFORMED_JSON", f"The 'request' part is not valid JSON: {exc}", field="request") from None
    if not isinstance(request, dict):
        # `{}` is right for every endpoint; `version` is a key of the validate endpoints only
        raise _bad("MALFORMED_JSON", "The 'request' part must be a JSON object (its keys are the endpoint's options; "
                   "{} takes the defaults).", field="request", rejected=request)
    version = request.get("version")
    if version is not None and not isinstance(version, str):
        raise _bad("INVALID_VERSION", "'version' must be a string or null.", field="request.version", rejected=version)
    if fields is not None:
        unknown_fields(request, field_names(fields), taker)
    return request


def strict_flag(request: dict) -> bool:
    """`request.strict` of a validation request: true makes the content-check findings ERRORs. A JSON boolean or
    absent/null (false); anything else is 400 INVALID_INPUT."""
    strict = request.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise _bad("INVALID_STRICT", "'strict' must be true or false.", field="request.strict", rejected=strict)
    return bool(strict)


REPORT_MEDIA = ("application/json", "text/html", "application/pdf")


def report_media(req: falcon.Request) -> str:
    """What the validation report is answered as, by the Accept header: JSON (default, and for */*), HTML or PDF
    for people (406 when the header allows none of the three)."""
    media = req.client_prefers(list(REPORT_MEDIA))
    if media is None:
        raise ApiError(406, "NOT_ACCEPTABLE", "The validation report is application/json, text/html or "
                       "application/pdf; the Accept header excludes all three.")
    return media


def report_language(request: dict) -> str:
    """`request.metadataLanguage` of a validation request: the language of an HTML / PDF report (en | de, as
    config.metadataLanguage takes it: `model.metadata_language`)."""
    language = request.get("metadataLanguage")
    try:
        return "en" if language is None else metadata_language(language)
    except (TypeError, ValueError) as exc:
        raise _bad("UNSUPPORTED_LANGUAGE", f"'metadataLanguage' {exc}.", field="request.metadataLanguage",
                   rejected=language) from None


def answer_report(req: falcon.Request, resp: falcon.Response, data: bytes, request: dict, report, media: str) -> None:
    """The report as the client asked for it: JSON, or the page for people (`pipeline.flows.validation_report`)."""
    if media == "application/json":
        resp.media = report.to_dict()
        return
    name = getattr(req.context, "upload_name", None) or "upload"
    resp.data = readable_report(data, report, name, report_language(request), pdf=media == "application/pdf")
    resp.content_type = media + ("; charset=utf-8" if media == "text/html" else "")
