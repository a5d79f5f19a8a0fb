"""Product path: one document of a job, through the flow its single endpoint uses, as one JSON Lines entry.

    validate  -> validate_batch.document_outcome (the batch's and the single validate endpoint's report; with
                 `html`, validation_report.readable_report: the endpoint's page for people as well), each document
                 on the rules for what it is (`pipeline.check.detect.route`: "auto", the default, detects them
                 as the web page and `pipeline validate` do; a PDF is a ZUGFeRD / Factur-X PDF whatever XML rules
                 were named)
    parse     -> parse.parse_report             (the invoice JSON POST /v1/invoice/parse answers; with `validate`,
                                                 its source's report, whose verdict the document gets; without it
                                                 the document is `unchecked`: read, never called valid)
    convert   -> convert.convert                (the document POST /v1/invoice/convert answers, base64, and what its
                                                 headers say: `Conversion.summary`; valid: convert hands back only
                                                 a document its target's rules passed, a ZUGFeRD PDF's PDF/A check
                                                 included, and refuses any other)

`check_options` refuses a job's request before anything is stored (ApiError 400 with the field's path), so that
a job's documents only fail one by one, never as a whole. `work` never raises for a document: a refusal of the
flow (an ApiError, with its errors[]) or a crash becomes the entry's `error`.
"""
from __future__ import annotations

import base64
import json
import logging
from typing import NamedTuple

from pipeline.check.detect import AUTO, SPECS, route
from pipeline.errors import ApiError, unknown_fields
from pipeline.flows import convert as convert_flow
from pipeline.flows.options import bad_option, convert_options, flag, language
from pipeline.flows.parse import parse_report
from pipeline.flows.validate_batch import check_request, document_outcome, origin
from pipeline.flows.validation_report import readable_report
from pipeline.invoice.request_json import dump_request, dumps

log = logging.getLogger("pipeline.jobs.document")

OPERATIONS = ("validate", "parse", "convert")
VALIDATE_SPECS = (AUTO, *SPECS)


# The keys of a job's `request` part, by operation: what its single endpoint takes (a key another operation takes
# is refused, not ignored: a convert job's `strict` would promise a check that never runs).
FIELDS = {"validate": ("operation", "spec", "version", "strict", "html", "metadataLanguage"),
          "parse": ("operation", "validate"),
          "convert": ("operation", "to", "spec", "profile", "metadataLanguage", "allowLoss")}


def check_options(request: dict) -> tuple[str, dict]:
    """(operation, options) of a job's `request` part (`FIELDS`): validate {"spec", "version", "strict", "html" and
    "metadataLanguage" (a report for people per document too)}, parse {"validate"}, convert as POST
    /v1/invoice/convert (`options.convert_options`). ApiError 400 for anything the operation does not take."""
    operation = request.get("operation") or "validate"
    if operation not in OPERATIONS:
        raise bad_option("operation", f"must be one of {', '.join(OPERATIONS)}", operation)
    unknown_fields(request, FIELDS[operation], f"a {operation} job")
    if operation == "convert":
        converting = convert_options(request)
        return operation, {"to": converting.to, "spec": converting.spec, "profile": converting.profile,
                           "language": converting.language, "allowLoss": converting.allow_loss}
    if operation == "parse":
        return operation, {"validate": flag(request, "validate")}
    version = request.get("version")
    if version is not None and not isinstance(version, str):
        raise bad_option("version", "must be a string or null", version)
    spec = request.get("spec") or AUTO
    if spec not in VALIDATE_SPECS:
        raise bad_option("spec", f"must be one of {', '.join(VALIDATE_SPECS)}", spec)
    if spec == AUTO and version is not None:
        raise bad_option("version", "needs a spec: each document's detected rules have versions of their own", version)
    if spec != AUTO:
        check_request(spec, version)
    html = flag(request, "html")
    return operation, {"strict": flag(request, "strict"), "spec": spec, "version": version, "html": html,
                       "language": language(request) or "en"}


def routes(spec: str) -> tuple[str, ...]:
    """Every spec `detect.route` may choose for a document of a validate job on `spec`: a document holds the dearest
    of their prices and is charged the one it got."""
    if spec in (AUTO, "zugferd"):  # detected: XML on zugferd is held to the rules it names
        return SPECS
    # a PDF on XML rules gets the ZUGFeRD checks, a status message on invoice rules FNFE's chain
    return tuple(dict.fromkeys((spec, *(() if spec == "fr-ctc" else ("zugferd",)), "fr-cdar")))


class Done(NamedTuple):
    """One document's result: kind valid | invalid | indeterminate | unchecked (it got its result) or error; line
    its JSON Lines entry; page the HTML report (validate with `html`); rules the spec it was validated on (its
    price), else None."""
    kind: str
    line: str
    page: str | None = None
    rules: str | None = None


def error_line(name: str, code: str, message: str, email: dict | None = None,
               errors: list[dict] | None = None, signature: dict | None = None) -> str:
    """An `error` entry; `errors` the single endpoint's errors[] (field, business term, rejected value; the message
    names the source's xpath) where it gave any. A rejected amount is a Decimal, written as the endpoint's error body
    writes it (`dumps`: the number, digit for digit); json.dumps raised on it, out of `work`'s own except clause, and
    the job stalled at that document ("running" for good: a convert to Peppol UBL failing PEPPOL-EN16931-R120)."""
    return dumps({"name": name, **origin(email or None, signature),
                  "error": {"code": code, "message": message, **({"errors": errors} if errors else {})}})


def run(operation: str, options: dict, name: str, data: bytes, request_id: str | None = None,
        email: dict | None = None, signature: dict | None = None) -> tuple[str, str, str | None]:
    """(kind, line, page) of one document, as `work` gives them."""
    return work(operation, options, name, data, request_id, email, signature)[:3]


def work(operation: str, options: dict, name: str, data: bytes, request_id: str | None = None,
         email: dict | None = None, signature: dict | None = None) -> Done:
    """One document through its operation's flow (`Done`). `email`: the message the document came from, and
    `signature`: what the signature of the signed file it came out of says, put in its line. Whatever fails, the
    writing of a refusal included, ends as this document's INTERNAL_ERROR line: an exception out of here would hold
    the job at this document for good (the engines take the chunk up again, and it fails again)."""
    try:
        return _work(operation, options, name, data, request_id, email, signature)
    except Exception as exc:  # noqa: BLE001 - one document's crash must not cost the others their results
        log.exception("a job's document failed request_id=%s", request_id)
        return Done("error", error_line(name, "INTERNAL_ERROR", f"The document could not be processed: "
                                                                f"{type(exc).__name__}", email, None, signature))


def _work(operation: str, options: dict, name: str, data: bytes, request_id: str | None,
          email: dict | None, signature: dict | None) -> Done:
    head = json.dumps({"name": name, **origin(email or None, signature)}, ensure_ascii=False)[:-1]
    try:
        if operation == "validate":
            rules = route(data, options["spec"])
            outcome, report_obj = document_outcome(data, rules, options.get("version"), request_id,
                                                   options.get("strict", False))
            if "error" in outcome:
                failed = outcome["error"]
                return Done("error", error_line(name, failed["code"], failed["message"], email, failed.get("errors"),
                                                signature))
            report = outcome["report"]
            page = None
            if options.get("html"):
                page = readable_report(data, report_obj, name, options.get("language", "en")).decode("utf-8")
            line = head + ', "report": ' + json.dumps(report) + "}"
            return Done(report["verdict"], line, page, rules)  # valid | invalid | indeterminate
        if operation == "parse":
            result = parse_report(data, options.get("validate", False), request_id)
            # what nothing validated is not valid (issue 37): the job counts it apart, and an inbox does not file it
            # as valid
            kind = result["validation"]["verdict"] if "validation" in result else "unchecked"
            # amounts exactly as the document states them; the indentation's line breaks would split the line
            invoice = dump_request(result).decode("utf-8").replace("\n", "")
            return Done(kind, head + ', "invoice": ' + invoice + "}")
        conversion = convert_flow.convert(data, options["to"], options.get("spec"), options.get("profile"),
                                          options.get("language"), options.get("allowLoss", False), request_id)
        document = base64.b64encode(conversion.document).decode("ascii")
        return Done("valid", head + ', "mediaType": ' + json.dumps(conversion.media_type) + ', "conversion": '
                    + dumps(conversion.summary()) + ', "document": "' + document + '"}')
    except ApiError as exc:
        return Done("error", error_line(name, exc.error_code, exc.message, email, [e.to_dict() for e in exc.errors],
                                        signature))
