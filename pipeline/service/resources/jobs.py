"""The jobs API: many documents at once, worked on in the background (pipeline.jobs). HTTP only here.

    POST   /v1/jobs                 multipart: `file` parts (documents or ZIP archives) + a `request` JSON part
                                    {"operation": "validate" | "parse" | "convert", and the options of its
                                    single endpoint (job_document.FIELDS)} -> 202, Location: /v1/jobs/{id}
    GET    /v1/jobs                 the key's jobs, newest first (?limit, ?before, ?state=queued,running)
    GET    /v1/jobs/{id}            the job: state, counts, times
    GET    /v1/jobs/{id}/results    JSON Lines in archive order, streamed: {"name", "report" | "invoice" |
                                    "document" (base64) | "error" | "notice"} (an error or notice with
                                    `messageDe` beside each message); ?format=zip: the converted documents, the
                                    HTML reports (validate with "html": true) or the JSON entries in a ZIP;
                                    ?after=n: only the entries that came after the n-th, in the order they came,
                                    and X-Results-Next: the n to ask next (results read while the job runs)
    DELETE /v1/jobs/{id}            cancel: documents done keep their results, the credits held for the rest
                                    go back; ?forget=true: then the job and its results are deleted (204)

A job that ended more than EINVOICE_JOB_RETENTION_DAYS ago (default 30) is deleted with its results
(pipeline.jobs.retention). A job belongs to the key that made it; another key gets 404 JOB_NOT_FOUND. Credits: each accepted document holds
what its single endpoint costs (EINVOICE_CREDIT_COSTS; validate and parse 0, convert 1 by default; validate: the
dearest it may be routed to) from the submission on (402 INSUFFICIENT_CREDITS: nothing stored), and is charged when
it gets its result (validate: the price of the rules it got).

The upload is streamed to disk (pipeline.jobs.files), never held whole: at most EINVOICE_MAX_JOB_BYTES (413).
"""
from __future__ import annotations

import io
import json
import zipfile

import falcon

from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.job_document import check_options, routes
from pipeline.flows.validation_report import refusal_page, with_german
from pipeline import jobs
from pipeline.jobs import files, local, retention
from pipeline.service.platform import shared, storage_unavailable
from pipeline.service.resources.batch import validate_path
from pipeline.service.upload import form_parts, parse_request_part, part_names, refuse_encoded, unexpected_part
from pipeline.settings import get_settings
from pipeline.storage import StorageUnavailable
from pipeline.storage.jobs import JOB_STATES, JOBS_PAGE, MAX_JOBS_PAGE

_FRAMING_SLACK = 1 << 20
_MAX_REQUEST_PART = 64 * 1024
_CHUNK = 1 << 16
_PAGE = 500  # rows read from the database at a time while streaming results


def _backends(req):
    return getattr(req.context, "platform", None) or shared()


def _store(req):
    try:
        return _backends(req).store()
    except StorageUnavailable:
        raise storage_unavailable() from None


def _key(req) -> str:
    """The key the jobs belong to ("" without the platform layer: create_app(platform=False))."""
    return getattr(req.context, "key_id", None) or ""


def _not_found(job_id: str) -> ApiError:
    return ApiError(404, "JOB_NOT_FOUND", f"No job {job_id!r} belongs to this API key.",
                    [ErrorDetail("JOB_NOT_FOUND", "unknown job", field="id", rejectedValue=job_id)])


def _bad(code: str, message: str, field: str | None = None) -> ApiError:
    return ApiError(400, "INVALID_INPUT", message, [ErrorDetail(code, message, field=field)])


def job_prices(config, operation: str, options: dict) -> tuple[int, dict]:
    """(what each document holds, the options to store): the operation's single endpoint's cost (`config`: the
    PlatformConfig); a validate document holds the dearest validate endpoint it may be routed to and is charged the
    one it got, so the options carry each route's price ("prices", read by the worker that records it)."""
    if operation != "validate":
        return config.cost("POST", {"parse": "/v1/invoice/parse", "convert": "/v1/invoice/convert"}[operation]), options
    prices = {spec: config.cost("POST", validate_path(spec)) for spec in routes(options["spec"])}
    return max(prices.values()), {**options, "prices": prices}


def document_cost(req, operation: str, options: dict) -> tuple[int, dict]:
    """`job_prices` with this process's configuration; nothing costs anything without the platform layer."""
    backends = getattr(req.context, "platform", None)
    if backends is None or getattr(req.context, "key_id", None) is None:
        return 0, options
    return job_prices(backends.limiter_and_config()[1], operation, options)


def _spool_chunked(req, intake: files.Intake) -> None:
    """A chunked body (no Content-Length) goes to a file first: Falcon's multipart parser needs a length."""
    path = intake.dir / "body.part"
    left = get_settings().max_job_bytes + _FRAMING_SLACK
    with open(path, "wb") as out:
        while True:
            chunk = req.stream.read(_CHUNK)
            if not chunk:
                break
            left -= len(chunk)
            if left < 0:
                raise files.job_too_large(get_settings().max_job_bytes)
            out.write(chunk)
    body = open(path, "rb")
    path.unlink()  # the open file stays readable; nothing is left behind whatever happens next
    req.stream = req.env["wsgi.input"] = body
    req.env["CONTENT_LENGTH"] = str(body.seek(0, io.SEEK_END))
    body.seek(0)


def read_job_upload(req, intake: files.Intake) -> dict:
    """Stream the `file` parts into `intake`; returns the `request` part (parsed)."""
    limit = get_settings().max_job_bytes
    if req.content_length is not None and req.content_length > limit + _FRAMING_SLACK:
        raise files.job_too_large(limit)
    refuse_encoded(req)
    if not (req.content_type or "").lower().startswith("multipart/form-data"):
        raise _bad("NOT_MULTIPART", "Send multipart/form-data with `file` parts and a `request` JSON part.")
    if req.content_length is None and "chunked" in (req.get_header("Transfer-Encoding") or "").lower():
        _spool_chunked(req, intake)
    request_raw = None
    try:
        for part in form_parts(req, get_settings().max_job_files):
            name, filename = part_names(part)
            if name == "file":
                intake.add_stream(filename or None, part.stream)
            elif name == "request" and request_raw is None:
                request_raw = part.stream.read(_MAX_REQUEST_PART + 1)
                if len(request_raw) > _MAX_REQUEST_PART:
                    raise _bad("REQUEST_TOO_LARGE", "The 'request' part is too large.", "request")
            else:
                raise unexpected_part(name)
    except falcon.MediaMalformedError as exc:
        raise _bad("MALFORMED_MULTIPART", f"The multipart body could not be read: {exc.description or exc}") from exc
    intake.finish()
    if not intake.names:
        raise _bad("MISSING_PART", "The job has no documents: send one or more 'file' parts.", "file")
    return parse_request_part(request_raw, None, req.path) if request_raw is not None else {}


class Jobs:
    def on_post(self, req, resp):
        _only_params(req, ())
        store = _store(req)
        job_id = jobs.new_job_id()
        try:
            held = store.stored_bytes(_key(req))
        except StorageUnavailable:
            raise storage_unavailable() from None
        try:
            intake = files.Intake(job_id, held)
        except OSError as exc:
            raise files.disk_full(exc) or exc from None
        try:
            request = read_job_upload(req, intake)
            operation, options = check_options(request)
            cost, options = document_cost(req, operation, options)
        except BaseException as exc:
            intake.discard()
            if isinstance(exc, OSError) and files.disk_full(exc):
                raise files.disk_full(exc) from None
            raise
        try:
            job = jobs.submit(store, job_id, _key(req), operation, options, intake, cost)
        except StorageUnavailable:
            raise storage_unavailable() from None
        except OSError as exc:  # (the documents' flush; submit has removed them)
            raise files.disk_full(exc) or exc from None
        if job is None:
            accepted = len(intake.names) - len(intake.refused)
            raise ApiError(402, "INSUFFICIENT_CREDITS", f"This job holds {cost * accepted} credit(s) ({accepted} "
                           "document(s)); the key's balance is too low. Nothing was stored or charged.")
        if jobs.embedded(store):
            local.ensure_started(_backends(req).store)
        resp.status = falcon.HTTP_202
        resp.location = f"/v1/jobs/{job.id}"
        resp.media = job.to_dict()

    def on_get(self, req, resp):
        """The key's jobs, newest first, a page at a time: `limit` (1-1000, default 100), `before` (the last job
        id of the page before, as `next` gives it) and `state` (one or several, comma-separated: only those)."""
        _only_params(req, ("limit", "before", "state"))
        store = _store(req)
        if jobs.embedded(store):
            local.ensure_started(_backends(req).store)
        limit = _page_size(req.get_param("limit"))
        before_id = req.get_param("before")
        before = store.get_job(before_id, _key(req)) if before_id else None
        if before_id and before is None:
            raise ApiError(400, "INVALID_INPUT", f"before: no job {before_id[:80]!r} of this key.",
                           [ErrorDetail("INVALID_VALUE", "a job id of this key, as `next` gives it", field="before",
                                        rejectedValue=before_id[:80])])
        states = _states(req.get_param("state"))
        listed = store.list_jobs(_key(req), limit + 1, before, states)
        filtered = f"&state={','.join(states)}" if states else ""
        resp.media = {"jobs": [j.to_dict() for j in listed[:limit]],
                      **({"next": f"/v1/jobs?limit={limit}{filtered}&before={listed[limit - 1].id}"}
                         if len(listed) > limit else {})}


def _only_params(req, known: tuple[str, ...]) -> None:
    """400 UNKNOWN_FIELD naming each query parameter the route does not take: a misspelt filter (`?stauts=done`)
    must not answer as if none had been asked for, as an unknown key of a `request` part is not ignored either."""
    unknown = [name for name in req.params if name not in known]
    if unknown:
        takes = ", ".join(known) or "none"
        raise ApiError(400, "INVALID_INPUT", f"{len(unknown)} unknown query parameter(s) for {req.method} "
                       f"{req.path[:200]}; it takes {takes}.",
                       [ErrorDetail("UNKNOWN_FIELD", f"is not a query parameter of {req.method} {req.path[:200]}",
                                    field=name[:100], rejectedValue=str(req.params[name])[:80]) for name in unknown])


def _page_size(value: str | None) -> int:
    if value is None:
        return JOBS_PAGE
    if not value.isdigit() or not 1 <= int(value) <= MAX_JOBS_PAGE:
        raise ApiError(400, "INVALID_INPUT", f"limit must be a whole number from 1 to {MAX_JOBS_PAGE}.",
                       [ErrorDetail("INVALID_VALUE", f"1 to {MAX_JOBS_PAGE}", field="limit", rejectedValue=value[:80])])
    return int(value)


def _states(value: str | None) -> tuple[str, ...]:
    states = tuple(dict.fromkeys(s.strip() for s in (value or "").split(",") if s.strip()))
    wrong = [s for s in states if s not in JOB_STATES]
    if wrong:
        raise ApiError(400, "INVALID_INPUT", f"state must be one or several of {', '.join(JOB_STATES)}, "
                       "comma-separated.", [ErrorDetail("INVALID_VALUE", ", ".join(JOB_STATES), field="state",
                                                        rejectedValue=value[:80])])
    return states


class JobItem:
    def _job(self, req, job_id):
        store = _store(req)
        job = store.get_job(job_id, _key(req))
        if job is None:
            raise _not_found(job_id)
        if job.active and jobs.embedded(store):
            local.ensure_started(_backends(req).store)
        return store, job

    def on_get(self, req, resp, job_id):
        _only_params(req, ())
        resp.media = self._job(req, job_id)[1].to_dict()

    def on_delete(self, req, resp, job_id):
        """Cancel the job; with `forget=true`, then delete it with its results (204; GET answers 404 after)."""
        _only_params(req, ("forget",))
        forget = req.get_param_as_bool("forget", default=False)
        store, job = self._job(req, job_id)
        job = store.cancel_job(job.id, job.key_id)
        if forget:
            retention.forget(store, job.id)
            resp.status = falcon.HTTP_204
            return
        if not job.active:
            files.remove(job.id)
        resp.media = job.to_dict()


def _entries(store, job, pages: bool = False, after: int | None = None):
    """(index, name, line, page) of each document with a result in archive order; once the job has ended, the
    documents never worked on get their NOT_PROCESSED line (while it runs they are left out: not done yet).
    With `after`: those whose result came after the `after`-th (`_last`), in the order they came; an ended job's
    NOT_PROCESSED lines come last, numbered on in archive order."""
    if after is not None:
        yield from _entries_after(store, job, pages, after)
        return
    ended = not job.active
    for row in store.result_lines(job.id, _PAGE, pages=pages):
        index, name, outcome, line = row[:4]
        if line is None:
            if not ended:
                continue
            line = _not_processed(job, name)
        yield index, name, _with_german(outcome, line), row[4] if pages else None


def _entries_after(store, job, pages: bool, after: int):
    for row in store.results_since(job.id, after, job.done, _PAGE, pages=pages):
        yield row[0], row[1], _with_german(row[2], row[3]), row[4] if pages else None
    if job.active or job.done == job.total:
        return
    skip = max(0, after - job.done)  # the NOT_PROCESSED lines are job.done + 1, + 2, ... in archive order
    for row in store.result_lines(job.id, _PAGE, pages=pages):
        if row[3] is None:
            if skip:
                skip -= 1
                continue
            yield row[0], row[1], _not_processed(job, row[1]), None


def _not_processed(job, name: str) -> str:
    return json.dumps({"name": name, "error": with_german({
        "code": "NOT_PROCESSED", "message": f"The job was {job.state} before this document was worked on."})},
        ensure_ascii=False)


# The outcomes whose line says why a document has no result: refused (error), a message without an invoice (none)
_WITHOUT_RESULT = ("error", "none")


def _with_german(outcome: str | None, line: str) -> str:
    """The line of a document without a result with `messageDe` beside each message of its `error` / `notice`
    (`validation_report.with_german`), as the API's errors have it. Added as the line is read, not stored: the
    lines of every job carry it, those recorded before it existed too, and a report's line is never parsed."""
    if outcome not in _WITHOUT_RESULT:
        return line
    entry = json.loads(line)
    for kind in ("error", "notice"):
        if isinstance(entry.get(kind), dict):
            entry[kind] = with_german(entry[kind])
    return json.dumps(entry, ensure_ascii=False)


def _last(job) -> int:
    """The number of the last entry so far: every document has one once the job has ended."""
    return job.done if job.active else job.total


def _after(value: str | None) -> int | None:
    if value is None:
        return None
    if not value.isdigit() or len(value) > 18:
        raise ApiError(400, "INVALID_INPUT", "after must be a whole number, 0 or more (as X-Results-Next gives it).",
                       [ErrorDetail("INVALID_VALUE", "0 or more", field="after", rejectedValue=value[:80])])
    return int(value)


def _lines(store, job, after: int | None = None) -> "iter[bytes]":
    for _, _, line, _ in _entries(store, job, after=after):
        yield line.encode("utf-8") + b"\n"


class _Sink(io.RawIOBase):
    """A write-only stream whose bytes are taken out as they come: a ZIP written while it is sent."""

    def __init__(self):
        self.buf = bytearray()

    def writable(self):
        return True

    def write(self, b):
        self.buf += b
        return len(b)

    def take(self) -> bytes:
        out, self.buf = bytes(self.buf), bytearray()
        return out


def _zip(store, job, after: int | None = None) -> "iter[bytes]":
    """The converted documents, else the HTML reports (a validate job with `html`: in its language, a document
    without a report too, refused or a message without an invoice, `validation_report.refusal_page`), else the JSON
    entries (those a cancel left unprocessed too, as the JSON lines have them). Each is named after its source: the
    source's name where the result keeps its extension (a.xml converted to UBL: a.xml), else the name with the
    result's extension added (a.pdf -> a.pdf.xml, a.xml.html, a.xml.json, a refused a.xml.error.json or, with
    `html`, a.xml.error.html); never another source's name nor one taken before (then the document's index goes in
    front of the file name, in the source's folder: mail/3-a.pdf.xml)."""
    import base64  # lazy: only the ZIP form decodes documents
    options = json.loads(job.options or "{}")
    people = job.operation == "validate" and options.get("html")  # a page for people for every document
    language = options.get("language") or "en"
    sink = _Sink()
    sources = {files.zip_member_name(n) for n in store.document_names(job.id)}
    seen: set[str] = set()
    with zipfile.ZipFile(sink, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, name, line, page in _entries(store, job, pages=True, after=after):
            entry = json.loads(line)
            name = files.zip_member_name(name)
            if "document" in entry:
                ext = {"application/pdf": ".pdf"}.get(entry.get("mediaType"), ".xml")
                data = base64.b64decode(entry["document"])
            elif page is not None:
                ext, data = ".html", page.encode("utf-8")
            elif people:
                ext, data = (".error.html" if "error" in entry else ".html"), refusal_page(entry, language)
            else:
                ext, data = (".error.json" if "error" in entry else ".json"), line.encode("utf-8")
            member = name if name.lower().endswith(ext) else name + ext
            folder, _, file = member.rpartition("/")
            while member in seen or (member != name and member in sources):
                file = f"{index}-{file}"
                member = f"{folder}/{file}" if folder else file
            seen.add(member)
            archive.writestr(member, data)
            yield sink.take()
    yield sink.take()


class JobResults:
    def on_get(self, req, resp, job_id):
        _only_params(req, ("format", "after"))
        store = _store(req)
        job = store.get_job(job_id, _key(req))
        if job is None:
            raise _not_found(job_id)
        fmt = req.get_param("format", default="jsonl")  # `format=` is no format: 400 below, not jsonl
        after = _after(req.get_param("after"))
        if after is not None and after > _last(job):
            # a number no answer gave: the entries between would be skipped without a word
            raise ApiError(400, "INVALID_INPUT", f"after is past the job's last entry so far ({_last(job)}): ask with "
                           "0 or the X-Results-Next an earlier answer gave.",
                           [ErrorDetail("INVALID_VALUE", f"0 to {_last(job)}", field="after", rejectedValue=after)])
        if fmt == "zip":
            resp.content_type = "application/zip"
            resp.set_header("Content-Disposition", f'attachment; filename="{job.id}.zip"')
            resp.stream = _zip(store, job, after)
        elif fmt == "jsonl":
            resp.content_type = "application/jsonl"
            resp.stream = _lines(store, job, after)
        else:
            raise ApiError(400, "INVALID_INPUT", "format must be jsonl or zip.",
                           [ErrorDetail("INVALID_VALUE", "jsonl or zip", field="format", rejectedValue=fmt)])
        resp.set_header("X-Job-State", job.state)
        if after is not None:  # (the job as read above: its results up to `_last` are all recorded)
            resp.set_header("X-Results-Next", str(_last(job)))


def add_routes(app: falcon.App) -> None:
    app.add_route("/v1/jobs", Jobs())
    app.add_route("/v1/jobs/{job_id}", JobItem())
    app.add_route("/v1/jobs/{job_id}/results", JobResults())
