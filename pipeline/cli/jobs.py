"""`pipeline jobs submit|status|list|results|cancel|delete`: the jobs API (POST /v1/jobs) of a running service, from a shell.

    pipeline jobs submit DIR | FILES | ZIP | EML | MBOX | - [--operation validate|parse|convert] [--wait]
                         [validate: --spec S --version V --strict --html --lang L] [parse: --validate]
                         [convert: --to T --spec S --profile P --lang L --allow-loss]
                                        each file goes up as it is, a part of its own (the body built in a
                                        temporary file, streamed, never held in memory), so that ZIPs and e-mails
                                        are opened as `pipeline validate` opens them; a folder's documents named by
                                        their path in it; `-`: stdin, a document, a message, a mailbox or a
                                        ZIP (a mail filter's pipe), the part "(stdin)"; --wait shows a
                                        progress bar on a terminal and the summary table at the end
    pipeline jobs status ID             the job as JSON
    pipeline jobs results ID [--format jsonl|zip] [-o FILE] [--after N | --follow]
                                        --after N: the entries that came after the N-th (the N to ask next
                                        on stderr); --follow: the entries as they come, until the job ends
    pipeline jobs cancel ID
    pipeline jobs delete ID             the job and its results go (kept EINVOICE_JOB_RETENTION_DAYS otherwise)
    pipeline jobs list [--limit N] [--state S]

Every action takes --lang de: its messages, summary and table in German (the job's state in the web page's words,
the service's refusals as the page says them); the codes, the job's JSON and its results stay as they are. On
submit --lang is also the request's metadataLanguage where the operation takes one (validate, convert).

The service is EINVOICE_URL (default http://127.0.0.1:8000) or --url; the key EINVOICE_API_KEY or --key.
Exit codes: 0 done and every document valid (a parse job without --validate: every document read, none validated;
the summary counts them as `unchecked`, never as valid), 1 a document invalid or refused, 2 the job failed or was
cancelled (or the service said no), 3 done and some documents indeterminate (not judged), none invalid.
"""
from __future__ import annotations

import http.client
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from pathlib import Path

from pipeline.cli import job_request
from pipeline.cli.files import expand, read_as, say_skipped, shown
from pipeline.cli.language import in_language, lang_argument
from pipeline.errors import REFINES
from pipeline.unpack import HEAD, STDIN, kind, spool

POLL = 0.5


# What this command says itself, in each --lang (the service's messages: `_refused`)
SAID = {"en": {"no_key": "no API key given: set EINVOICE_API_KEY or pass --key (`pipeline keys create` makes one)",
               "unreachable": "{url}: {reason} (is `pipeline serve` running there? --url or EINVOICE_URL names "
                              "the service)",
               "nothing": "no e-invoice ({read}) in {paths}: nothing to submit",
               "needs_to": "--operation convert needs --to CII, UBL or ZUGFERD",
               "follow_zip": "--follow reads JSON Lines: leave out --format zip",
               "zip_terminal": "a ZIP is not written to a terminal: give -o FILE, or redirect stdout",
               "after": "--after {after}: give 0 or more", "limit": "--limit {limit}: give a count, or 0 for all",
               "next": "the job is {state}; what comes next: --after {after}",
               "deleted": "{id}: deleted with its results",
               "ended": "the job had ended ({state}): nothing was cancelled",
               "stdin_once": "'-' (stdin) can be given once"},
        "de": {"no_key": "kein API-Schlüssel angegeben: EINVOICE_API_KEY setzen oder --key angeben (`pipeline keys "
                         "create` erzeugt einen)",
               "unreachable": "{url} nicht erreichbar: {reason} (läuft dort `pipeline serve`? --url oder "
                              "EINVOICE_URL nennt den Dienst)",
               "nothing": "keine E-Rechnung ({read}) in {paths}: nichts einzureichen",
               "needs_to": "--operation convert braucht --to CII, UBL oder ZUGFERD",
               "follow_zip": "--follow liest JSON Lines: --format zip weglassen",
               "zip_terminal": "ein ZIP wird nicht ins Terminal geschrieben: -o DATEI angeben oder die "
                               "Standardausgabe umleiten",
               "after": "--after {after}: 0 oder mehr angeben",
               "limit": "--limit {limit}: eine Anzahl angeben, oder 0 für alle",
               "next": "Auftrag {state}; die nächsten Einträge: --after {after}",
               "deleted": "{id}: mit seinen Ergebnissen gelöscht",
               "ended": "der Auftrag war schon beendet ({state}): nichts abgebrochen",
               "stdin_once": "'-' (Standardeingabe) kann nur einmal angegeben werden"}}
# The summary's and the list's words (the page's words for the counts: "nicht beurteilbar", "nicht geprüft")
WORDS = {"en": {"job": "job", "state": "state", "operation": "operation", "documents": "documents",
                "valid": "valid", "invalid": "invalid", "indeterminate": "indeterminate", "unchecked": "unchecked",
                "errors": "errors",
                "noInvoice": "no invoice", "creditsCharged": "credits charged", "message": "message",
                "created": "created"},
         "de": {"job": "Auftrag", "state": "Zustand", "operation": "Vorgang", "documents": "Dokumente",
                "valid": "gültig", "invalid": "ungültig", "indeterminate": "nicht beurteilbar",
                "unchecked": "nur gelesen",
                "errors": "nicht geprüft", "noInvoice": "ohne Rechnung", "creditsCharged": "Credits abgebucht",
                "message": "Meldung", "created": "angelegt"}}
OPERATIONS = {"de": {"validate": "prüfen", "parse": "lesen", "convert": "umwandeln"}}


def _said(args, key: str, **values) -> str:
    return SAID[_language(args)][key].format(**values)


def _language(args) -> str:
    return getattr(args, "lang", None) or "en"


def _state(state: str, language: str) -> str:
    """A job's state in `language`: in German the web page's word for it (`wartet`, `läuft`, `fertig`, ...)."""
    if language != "de":
        return state
    from pipeline.flows.validation_report import page_words  # lazy: the page's texts only for German

    return page_words("de").get(f"job_state_{state}", state)


def _fail(message: str):
    print(f"pipeline jobs: {message}", file=sys.stderr)
    raise SystemExit(2)


def _call(args, method: str, path: str, data=None, headers=None, stream: bool = False):
    if not args.key:
        _fail(_said(args, "no_key"))
    request = urllib.request.Request(args.url.rstrip("/") + path, data=data, method=method,
                                     headers={"Authorization": f"Bearer {args.key}", **(headers or {})})
    try:
        resp = urllib.request.urlopen(request, timeout=600)  # noqa: S310 (the service the user names)
    except urllib.error.HTTPError as exc:
        _refused(exc.code, exc.read(), _language(args))
    except urllib.error.URLError as exc:
        _fail(_said(args, "unreachable", url=args.url, reason=exc.reason))
    if stream:
        return resp
    with resp:
        return json.loads(resp.read())


def _refused(status: int, body: bytes, language: str):
    """The service's refusal, its message in `language` as the web page says it: the sentence of our code that
    refines the spec's (JOBS_DISK_FULL for 503 STORAGE_UNAVAILABLE), else of the answer's own code."""
    text = body.decode("utf-8", "replace")
    try:
        answer = json.loads(text)
        code = answer.get("errorCode")
        refined = next((e.get("code") for e in answer.get("errors") or () if isinstance(e, dict)
                        and REFINES.get(e.get("code")) == code), None)
        text = in_language(language, refined, "", None) or in_language(language, code, answer.get("message", text))
        text = f"{code}: {text}" if code else text
        text += "".join(_entry(e, language) for e in answer.get("errors") or ()  # (its own code: said above)
                        if isinstance(e, dict) and e.get("code") != code)
    except (ValueError, AttributeError):  # (not our JSON: a proxy's page, said as it came)
        pass
    _fail(f"{status} {text}")


def _entry(error: dict, language: str) -> str:
    """One of a refusal's errors[] as a line of its own, as `pipeline generate` says them: in German the field and
    its message were lost behind the page's sentence ("die Tabelle nennt die Felder", with no table here). A
    field of the `request` part is named by the option that set it (request.to: --to)."""
    field = error.get("field") or ""
    option = job_request.option_of(field)
    where = " ".join(x for x in (field, f"({option})" if option else None) if x)
    message = in_language(language, error.get("code"), error.get("message") or "", error.get("messageDe"))
    return f"\n  {error.get('code')}{' ' + where if where else ''}: {message}"


def _upload(args, body: Path, headers: dict) -> dict:
    """POST /v1/jobs, the body streamed from its file. A service that refuses an upload before its end (413 past
    EINVOICE_MAX_JOB_BYTES, 408 below EINVOICE_JOB_UPLOAD_MIN_RATE or past EINVOICE_JOB_UPLOAD_DEADLINE, 503 a full
    jobs directory) answers and closes while the body is still on its way: that answer is read even so (urllib said
    only "Broken pipe"). Through a proxy (HTTP(S)_PROXY) urllib sends it, as every other call."""
    url = urllib.parse.urlsplit(args.url.rstrip("/") + "/v1/jobs")
    if not args.key or (urllib.request.getproxies().get(url.scheme) and not urllib.request.proxy_bypass(url.netloc)):
        with open(body, "rb") as data:
            return _call(args, "POST", "/v1/jobs", data=data, headers=headers)
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    conn, broke = kind(url.hostname, url.port, timeout=600), None
    try:
        try:
            conn.putrequest("POST", url.path + (f"?{url.query}" if url.query else ""))
            for name, value in {"Authorization": f"Bearer {args.key}", **headers}.items():
                conn.putheader(name, value)
            conn.endheaders()
            with open(body, "rb") as data:
                while chunk := data.read(1 << 20):
                    conn.send(chunk)
        except (BrokenPipeError, ConnectionResetError) as exc:  # the service stopped reading: its answer may be in
            broke = exc
        except OSError as exc:
            _fail(_said(args, "unreachable", url=args.url, reason=exc))
        try:
            resp = conn.getresponse()
            answer = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            _fail(_said(args, "unreachable", url=args.url, reason=broke or exc))
    finally:
        conn.close()
    if resp.status >= 400:
        _refused(resp.status, answer, _language(args))
    return json.loads(answer)


def _uploads(paths: list[Path], language: str = "en", tmp: Path | None = None) -> list[tuple[str, Path]]:
    """(name, file) of each `file` part: every file as it is, each its own part (a ZIP or an e-mail is opened by
    the service, as `pipeline validate` opens them: in one ZIP of them all, they were NESTED_ARCHIVE), a folder's
    documents, e-mails and ZIPs named by their path in it (its other files named on stderr, as `pipeline validate`
    does); `-` stdin, copied into `tmp` first (a mail filter pipes a message or a mailbox: "No such file: -")."""
    out = []
    for given in paths:
        if str(given) == "-" and tmp is not None:
            out.append((STDIN, spool(sys.stdin.buffer, tmp)))
            continue
        if not given.is_dir():
            out.append((shown(given.name), given))
            continue
        say_skipped(given, "pipeline jobs", language)
        out += [(shown(f.relative_to(given).as_posix()), f) for f in expand([given])]
    return out


def _body(request: dict, uploads: list[tuple[str, Path]], tmp: Path) -> tuple[Path, str]:
    """The multipart body in a temporary file, each document copied in as it is read (never held in memory)."""
    boundary = uuid.uuid4().hex
    body = tmp / "body"
    with open(body, "wb") as out:
        out.write((f"--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n"
                   f"Content-Type: application/json\r\n\r\n{json.dumps(request)}\r\n").encode())
        for name, path in uploads:
            out.write((f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
                       f"filename=\"{_quoted(name)}\"\r\nContent-Type: {_media_type(path)}\r\n\r\n").encode())
            with open(path, "rb") as src:
                shutil.copyfileobj(src, out)
            out.write(b"\r\n")
        out.write(f"--{boundary}--\r\n".encode())
    return body, boundary


def _quoted(name: str) -> str:
    """A file name inside the quotes of a form part's header, as browsers write it (HTML's multipart/form-data
    encoding): a quote and line breaks percent-encoded, so that no name can end the header or add one."""
    return name.replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


MEDIA_TYPES = {".eml": "message/rfc822", ".mbox": "application/mbox", ".zip": "application/zip",
               ".xml": "application/xml", ".pdf": "application/pdf", ".msg": "application/vnd.ms-outlook",
               ".p7m": "application/pkcs7-mime", ".emlx": "message/rfc822"}


def _media_type(upload: Path) -> str:
    """A part's media type by its file's suffix, else (stdin, a mailbox of no extension) by what its first bytes
    say it is (the service goes by the bytes either way)."""
    if upload.suffix.lower() in MEDIA_TYPES:
        return MEDIA_TYPES[upload.suffix.lower()]
    with open(upload, "rb") as f:
        what = kind(upload.name, f.read(HEAD))
    return MEDIA_TYPES.get(f".{what}", "application/octet-stream")


def _bar(job: dict, language: str) -> str:
    total, done = job["total"] or 1, job["done"]
    width = 30
    filled = width * done // total
    return f"\r\x1b[K[{'#' * filled}{'.' * (width - filled)}] {done}/{job['total']} {_state(job['state'], language)}"


def _documents(job: dict) -> int:
    """The job's documents: its entries without the messages that had no invoice, which are no document (a job of one
    such message said "documents 1" beside "no invoice 1"); the counts of a job that is done add up to it."""
    return job["total"] - job.get("noInvoice", 0)


def _summary(job: dict, language: str) -> str:
    """The job's counts, one `name value` line each, in `language`; a failed job's message (why) last."""
    indeterminate = job.get("indeterminate", 0)
    values = {"job": job["id"], "state": _state(job["state"], language), "documents": _documents(job),
              "valid": job["valid"], "invalid": job["invalid"] - indeterminate, "indeterminate": indeterminate,
              **({"unchecked": job["unchecked"]} if job.get("unchecked") else {}),  # read, not validated
              "errors": job["errors"], "noInvoice": job.get("noInvoice", 0),
              "creditsCharged": job.get("creditsCharged", 0)}
    if job.get("message"):
        values["message"] = (job.get("messageDe") or job["message"]) if language == "de" else job["message"]
    words = WORDS[language]
    width = max(len(words[k]) for k in values) + 1  # (English: 16, as before)
    return "\n".join(f"{words[k]:<{width}} {v}" for k, v in values.items())


def _exit_code(job: dict) -> int:
    if job["state"] in ("failed", "cancelled"):
        return 2
    indeterminate = job.get("indeterminate", 0)
    if job["errors"] or job["invalid"] > indeterminate:
        return 1
    return 3 if indeterminate else 0


def _submit(args) -> int:
    request = job_request.request_of(args)
    if request["operation"] == "convert" and not args.to:  # said here, in the options' words, before an upload
        _fail(_said(args, "needs_to"))
    if request["operation"] == "parse":  # a parse job has no language of its own: --lang is this command's only
        request.pop("metadataLanguage", None)
    if sum(str(p) == "-" for p in args.paths) > 1:  # (stdin is read once)
        _fail(_said(args, "stdin_once"))
    with tempfile.TemporaryDirectory(prefix="pipeline-jobs-") as tmp:
        uploads = _uploads(args.paths, _language(args), Path(tmp))
        if not uploads:  # a folder without documents: the service answered "send one or more 'file' parts"
            _fail(_said(args, "nothing", read=read_as(_language(args)), paths=", ".join(shown(p) for p in args.paths)))
        body, boundary = _body(request, uploads, Path(tmp))
        job = _upload(args, body, {"Content-Type": f"multipart/form-data; boundary={boundary}",
                                   "Content-Length": str(body.stat().st_size)})
    if not args.wait:
        print(job["id"])
        return 0
    show = sys.stderr.isatty()
    while job["state"] in ("queued", "running"):
        if show:
            sys.stderr.write(_bar(job, _language(args)))
            sys.stderr.flush()
        time.sleep(POLL)
        job = _call(args, "GET", f"/v1/jobs/{job['id']}")
    if show:
        sys.stderr.write("\r\x1b[K")
    args.exit_code = _exit_code(job)  # (kept if stdout's reader goes away: pipeline.cli.main)
    print(_summary(job, _language(args)))
    return args.exit_code


def _status(args) -> int:
    job = _call(args, "GET", f"/v1/jobs/{args.id}")
    print(json.dumps(job, indent=1))
    return 0


def _results(args) -> int:
    if args.follow and args.format != "jsonl":
        _fail(_said(args, "follow_zip"))
    if args.format == "zip" and not args.output and sys.stdout.isatty():  # its bytes garbled the screen
        _fail(_said(args, "zip_terminal"))
    if args.after is not None and args.after < 0:
        _fail(_said(args, "after", after=args.after))
    path = f"/v1/jobs/{args.id}/results?format={args.format}"
    after = 0 if args.follow and args.after is None else args.after
    out = open(args.output, "wb") if args.output else sys.stdout.buffer
    try:
        while True:
            resp = _call(args, "GET", path + ("" if after is None else f"&after={after}"), stream=True)
            with resp:
                shutil.copyfileobj(resp, out)
                out.flush()
                state, next_after = resp.headers.get("X-Job-State"), resp.headers.get("X-Results-Next")
            if after is None:
                return 0
            after = int(next_after)
            if not args.follow or state not in ("queued", "running"):
                break
            time.sleep(POLL)
    finally:
        if args.output:
            out.close()
    if not args.follow:
        print(f"pipeline jobs: {_said(args, 'next', state=_state(state, _language(args)), after=after)}",
              file=sys.stderr)
    return 0


def _list(args) -> int:
    """The key's jobs, newest first, one line each; `--limit` of them (0: all, page after page), `--state`
    those in these states only."""
    if args.limit < 0:
        _fail(_said(args, "limit", limit=args.limit))
    path, listed = f"/v1/jobs?limit={min(args.limit or 1000, 1000)}", 0
    if args.state:
        path += "&state=" + urllib.parse.quote(args.state, safe=",")
    language = _language(args)
    words, named = WORDS[language], OPERATIONS.get(language, {})
    # each column as wide as its heading or its widest value (an id: 36; German: "fehlgeschlagen", "umwandeln"),
    # with the room English had
    widest = {"job": 37, "state": max([10] + [len(_state(s, language)) for s in STATES]),
              "operation": max([10] + [len(named.get(o, o)) for o in job_request.OPERATIONS])}
    columns = [(k, ("<" if k in widest else ">") + str(max(len(words[k]), widest.get(k, 7)))) for k in LIST_COLUMNS]

    def line(cells: dict, created: str) -> str:
        return " ".join(f"{cells[k]:{spec}}" for k, spec in columns) + f"  {created}"

    header = line(words, words["created"])
    while path and (not args.limit or listed < args.limit):
        page = _call(args, "GET", path)  # (the header after the first answer: an error is said alone)
        if header:
            print(header)
            header = None
        for job in page["jobs"][:args.limit - listed if args.limit else None]:
            indeterminate = job.get("indeterminate", 0)  # counted in the API's invalid too; shown apart, as --wait
            print(line({"job": job["id"], "state": _state(job["state"], language),
                        "operation": named.get(job["operation"], job["operation"]), "documents": _documents(job),
                        "valid": job["valid"], "invalid": job["invalid"] - indeterminate,
                        "indeterminate": indeterminate, "errors": job["errors"],
                        "unchecked": job.get("unchecked", 0)}, job["createdAt"]))
            listed += 1
        path = page.get("next")
    return 0


LIST_COLUMNS = ("job", "state", "operation", "documents", "valid", "invalid", "indeterminate", "errors", "unchecked")
STATES = ("queued", "running", "done", "failed", "cancelled")


def _cancel(args) -> int:
    job = _call(args, "DELETE", f"/v1/jobs/{args.id}")
    print(_summary(job, _language(args)))
    if job["state"] != "cancelled":  # it had ended: its summary alone read as if the cancel had worked
        print(f"pipeline jobs: {_said(args, 'ended', state=_state(job['state'], _language(args)))}", file=sys.stderr)
    return 0


def _delete(args) -> int:
    """Cancel the job if it runs, then delete it and its results on the service."""
    _call(args, "DELETE", f"/v1/jobs/{urllib.parse.quote(args.id, safe='')}?forget=true", stream=True).close()
    print(_said(args, "deleted", id=args.id))
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("jobs", help="submit and follow jobs (many documents) on a running service")
    sub = p.add_subparsers(dest="jobs_command", metavar="ACTION")
    sub.required = True

    def command(name, func, help):
        c = sub.add_parser(name, help=help)
        # an empty EINVOICE_URL (an env file's `EINVOICE_URL=`) is no setting, as for every other variable
        c.add_argument("--url", default=os.environ.get("EINVOICE_URL") or "http://127.0.0.1:8000",
                       help="the service (EINVOICE_URL, else http://127.0.0.1:8000)")
        c.add_argument("--key", default=os.environ.get("EINVOICE_API_KEY", ""), help="API key (EINVOICE_API_KEY)")
        if name != "submit":  # (submit's --lang is also its request's: job_request)
            lang_argument(c, "language of the messages, summary and table (the JSON stays as it is)")
        c.set_defaults(func=func)
        return c

    s = command("submit", _submit, "submit a folder, files, a ZIP or e-mails (.eml, .mbox) as one job")
    s.add_argument("paths", nargs="+", type=Path, metavar="DIR|FILES|ZIP|EML|MBOX|-",
                   help="'-': stdin (a document, a message, a mailbox or a ZIP)")
    job_request.add_arguments(s)
    s.add_argument("--wait", action="store_true", help="follow the job (progress bar), print the summary")
    for name, func, help in (("status", _status, "the job"), ("cancel", _cancel, "cancel the job"),
                             ("delete", _delete, "delete the job and its results (cancelled first if it runs)")):
        command(name, func, help).add_argument("id")
    listing = command("list", _list, "the key's jobs, newest first")
    listing.add_argument("--limit", type=int, default=20, help="how many (default 20; 0: all)")
    listing.add_argument("--state", help="only jobs in these states, comma-separated (queued, running, done, "
                                         "failed, cancelled)")
    r = command("results", _results, "the results, JSON Lines (or a ZIP)")
    r.add_argument("id")
    r.add_argument("--format", choices=("jsonl", "zip"), default="jsonl",
                   help="JSON Lines, one entry per document (default), or a ZIP of the documents and reports")
    r.add_argument("-o", "--output", type=Path, help="write them here (default: stdout; a ZIP not to a terminal)")
    r.add_argument("--after", type=int, metavar="N", help="only the entries that came after the N-th (the N to "
                                                           "ask next is said on stderr)")
    r.add_argument("--follow", action="store_true", help="the entries as they come, until the job ends")
