"""POST /v1/invoice/{xrechnung,en16931,zugferd}/validate/batch: many documents at once.

The body is the single validate endpoints' multipart form: `file` parts, each a document, a ZIP archive or an
e-mail (.eml, .mbox: each message's invoices; `pipeline.unpack`), and the optional `request` JSON part (`version`,
`strict` as on the single endpoints). 200 JSON `{"summary": {...}, "results": [...]}` in archive
(or part) order; each report is exactly what the single endpoint answers for that file. The work is
`pipeline.flows.validate_batch`; here only HTTP, the multipart parts and the credits.

Bounds: the whole body as one upload (EINVOICE_MAX_UPLOAD_BYTES, 413), each document as one upload uncompressed
(FILE_TOO_LARGE entry), all members together at most BATCH_TOTAL_FACTOR uploads uncompressed (413
BATCH_TOO_LARGE: a zip bomb), at most EINVOICE_MAX_BATCH_FILES documents (400 TOO_MANY_FILES).

Credits: a batch costs what its documents would cost one by one on the single endpoint (its configured cost,
EINVOICE_CREDIT_COSTS `/v1/invoice/<spec>/validate=n`, default 0) for each document that gets a report;
documents refused before validation (error entries) cost nothing. The platform middleware has reserved the batch
path's own cost before the body was read; once the documents are known that reservation is exchanged for one of
`documents x validate cost` (402 INSUFFICIENT_CREDITS if the balance does not cover it, nothing validated),
which the middleware then charges on the 200 or gives back on any failure, as for every request. Documents the
request's time budget left unvalidated (TIME_BUDGET entries) cost nothing either: the reservation shrinks to the
documents validated before the answer goes out.
"""
from __future__ import annotations

import time

import falcon

from pipeline.check.detect import SPECS
from pipeline.errors import ApiError
from pipeline.flows.validate_batch import Limits, Member, check_request, too_many_files, validate_batch
from pipeline.service.platform import storage_unavailable
from pipeline.service.schemas import XRechnungValidationRequest
from pipeline.invoice.specs import facturx_release
from pipeline.service.resources.zugferd import SUPPORTED_VERSIONS as ZUGFERD_VERSIONS
from pipeline.service.upload import parse_request_part, read_parts, report_language, strict_flag
from pipeline.settings import get_settings
from pipeline.storage import StorageUnavailable
from pipeline.unpack import Unpacker, apple
from pipeline.unpack.members import OS_METADATA_HEAD, os_metadata

BATCH_TOTAL_FACTOR = 5  # all members together decompress to at most 5 uploads' worth


def validate_path(spec: str) -> str:
    """The single validate endpoint of a spec, whose cost a batch or job document costs (fr-cdar: France's status
    messages, validated at /v1/invoice/fr-ctc/status/validate)."""
    return "/v1/invoice/fr-ctc/status/validate" if spec == "fr-cdar" else f"/v1/invoice/{spec}/validate"


def limits() -> Limits:
    settings = get_settings()
    return Limits(settings.max_batch_files, settings.max_upload_bytes, BATCH_TOTAL_FACTOR * settings.max_upload_bytes)


def read_batch_upload(req: falcon.Request, bounds: Limits) -> tuple[list[Member], dict]:
    """(documents in order, request object) from the multipart body: `file` parts and an optional `request`.
    The body is read under one upload's bound (413), as on the single endpoints."""
    files, request_raw = read_parts(req, get_settings().max_upload_bytes, bounds.max_files,
                                    lambda n: too_many_files(n, bounds.max_files))
    files = [(name or f"file-{n}", data) for n, (name, data) in enumerate(files, start=1)]
    files = [(name, data) for name, data in files if not os_metadata(name, data[:OS_METADATA_HEAD])]  # no documents
    request = parse_request_part(request_raw, XRechnungValidationRequest, req.path) if request_raw is not None else {}
    # its keys checked as the single endpoint checks them, before any unpacking: the reports are JSON here, yet
    # `metadataLanguage: "fr"` is a 400 there and so here (it was silently taken)
    strict_flag(request)
    report_language(request)
    unpacker, members = Unpacker(bounds), []
    # one unreadable ZIP among several files is an entry, alone a 400; among several, a ZIP's or an e-mail's
    # documents are named under its file name (`month.zip/a.xml`) as a job and `pipeline validate` name them, and
    # Apple Mail's attachments stored apart from a message (a folder's parts) are read as that message's
    for name, data, apart in _with_stored(files):
        for member in (unpacker.file(name, data) if len(files) == 1 else
                       unpacker.one_of_several(name, data, name, apart)):
            members.append(member)
            if len(members) > bounds.max_files:
                raise too_many_files(len(members), bounds.max_files)
    return members, request


def _with_stored(files: list[tuple[str, bytes]]):
    """(name, bytes, its stored attachments) of each file, in order; the stored files a message took are its own,
    those no message took (`Stored.unread`, known once the messages were read) come last as files of their own."""
    given = dict(files)
    stored = apple.Stored([name for name, _ in files] if len(files) > 1 else [], lambda n: Member(n, given[n]))
    for name, data in files:
        if name not in stored.claimed:
            yield name, data, stored.of(name)
    for name in stored.unread():
        yield name, given[name], None


def settle_per_document(req: falcon.Request, spec: str, documents: int) -> None:
    """Exchange the middleware's reservation (the batch path's cost) for `documents` x the single validate
    endpoint's cost (module docstring). Without the platform layer (create_app(platform=False)) nothing to do."""
    ctx = req.context
    backends = getattr(ctx, "platform", None)
    if backends is None or getattr(ctx, "key_id", None) is None:
        return
    _, config = backends.limiter_and_config()
    cost = documents * config.cost("POST", validate_path(spec))
    held = getattr(ctx, "reservation", None)
    if held is not None and cost == ctx.reservation_cost:
        return
    store = backends.store()
    if held is not None:
        ctx.reservation = None
        store.release(held)
    if cost <= 0:
        return
    ctx.reserved_at = time.time()
    reservation = store.reserve(ctx.key_id, cost, getattr(ctx, "request_id", None), req.uri_template or req.path,
                                config.reservation_ttl)
    if reservation is None:
        raise ApiError(402, "INSUFFICIENT_CREDITS", f"This batch costs {cost} credit(s) ({documents} document(s)); "
                       "the key's balance is too low. Nothing was done or charged.")
    ctx.reservation, ctx.reservation_cost, ctx.reservation_ttl = reservation, cost, config.reservation_ttl


class BatchValidation:
    def __init__(self, spec: str):
        self.spec = spec

    def on_post(self, req, resp):
        if not req.client_accepts_json:
            raise ApiError(406, "NOT_ACCEPTABLE", "The batch report is application/json; the Accept header "
                           "excludes it.")
        members, request = read_batch_upload(req, limits())
        version, strict = request.get("version"), strict_flag(request)
        if self.spec == "zugferd" and version is not None and facturx_release(version) is None:
            raise ApiError(400, "UNSUPPORTED_VERSION", f"ZUGFeRD validation version {version!r} is not supported; "
                           f"supported: {', '.join(ZUGFERD_VERSIONS)}")
        check_request(self.spec, version)
        settled = sum(1 for m in members if m.error is None)
        try:
            settle_per_document(req, self.spec, settled)
        except StorageUnavailable:
            raise storage_unavailable() from None
        outcome = validate_batch(members, self.spec, version, getattr(req.context, "request_id", None), strict)
        validated = sum(1 for r in outcome["results"] if "report" in r)
        if validated < settled:  # the time budget left documents unvalidated: they cost nothing
            try:
                settle_per_document(req, self.spec, validated)
            except StorageUnavailable:
                raise storage_unavailable() from None
        resp.media = outcome


def add_routes(app: falcon.App) -> None:
    for spec in SPECS:
        app.add_route(validate_path(spec) + "/batch", BatchValidation(spec))
