"""`pipeline validate FILE [--spec auto|xrechnung|en16931|fr-ctc|peppol|fr-cdar] [--version V] [--json] [--strict]
[--html OUT] [--pdf OUT] [--lang de]`: exit 0 valid, 1 invalid, 2 error, 3 indeterminate (not judged:
`pipeline.check.verdict`). --html / --pdf also write the report for people (as the validate endpoints answer
Accept: text/html / application/pdf).

`pipeline validate DIR | FILES... | archive.zip | mail.eml | box.mbox [--jobs N] [--html-dir OUT]`: many documents
(a folder's *.xml, *.pdf, *.eml and *.mbox, recursively; an archive's members and an e-mail's invoices, read as
POST .../validate/batch reads them: `pipeline.unpack`)
validated in N worker processes (default: CPU cores; forkserver / spawn, never fork: Saxon must not cross a fork),
a progress line on a terminal, one line per document and a summary table (--json: the batch endpoint's
`{"summary", "results"}`); --html-dir writes each document's report for people there. Exit 2 if any document could
not be validated, else 1 if any is invalid, else 3 if any is indeterminate, else 0. Ctrl-C stops the workers at once
and reports the documents done; the others are `INTERRUPTED` errors (exit 2). `-` reads stdin as a file: one
document, or a message, a mailbox or a ZIP (a mail filter's pipe: procmail, sieve, `formail -s`) whose invoices are
checked as a .eml, .mbox or .zip file's are.

Without `--spec` (auto) each document is held to the rules detected from it, as the web page and a job's "auto" do
(`pipeline.check.detect`). A PDF (by its `%PDF-` header) is checked as ZUGFeRD / Factur-X: PDF/A-3, XMP and the embedded invoice XML
against its profile's rules, as POST /v1/invoice/zugferd/validate does; `--spec` and `--version` then do not apply.
The report has the content checks (`CHECK-...`, `pipeline.check.content`) as the endpoints do: WARNINGs, ERRORs
with `--strict` (then a finding makes the exit code 1).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import signal
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from pipeline.check import categories, claims
from pipeline.check.detect import is_pdf, route
from pipeline.check.verdict import INDETERMINATE, INVALID, LABELS, VALID
from pipeline.cli.files import Progress, documents, is_archive, output_path, read_as, result_file, safe_name, \
    shown
from pipeline.cli.generate import is_stdio, output_refused
from pipeline.cli.language import in_language
from pipeline.errors import ApiError
from pipeline.pdf import report_page
from pipeline.unpack import STDIN, spool


def register(sub) -> None:
    p = sub.add_parser("validate", help="validate an e-invoice (CII / UBL XML, or a ZUGFeRD PDF) on the official rules")
    p.add_argument("file", type=Path, nargs="+",
                   help="CII or UBL XML file, or a ZUGFeRD / Factur-X PDF; several, a folder, a ZIP archive or an "
                        "e-mail (.eml, .mbox: each message's invoices); '-' for stdin (a document, a message, a "
                        "mailbox or a ZIP)")
    p.add_argument("--spec", choices=("auto", "xrechnung", "en16931", "fr-ctc", "peppol", "fr-cdar"), default="auto",
                   help="rules for an XML file (default auto: detected from the file as the web page does, "
                        "pipeline.check.detect); fr-ctc (France's reform: FNFE chain with BR-FR Flux 2) takes PDFs "
                        "too; peppol: Peppol BIS Billing 3.0, UBL only; fr-cdar: France's lifecycle status messages "
                        "(CDV, CDAR D22B on BR-FR-CDV; auto detects them)")
    p.add_argument("--version", default=None, help="validation package version (default: latest active)")
    p.add_argument("--json", action="store_true", help="print the report as JSON (service spec 2.10)")
    p.add_argument("--html", type=output_path, metavar="OUT", help="also write the report for people as HTML here (one "
                                                            "document; several: --html-dir)")
    p.add_argument("--pdf", type=output_path, metavar="OUT", help="also write the report for people as PDF here (one "
                                                           "document)")
    p.add_argument("--lang", choices=("en", "de"), default="en",
                   help="language of the --html / --pdf report, of the verdict's sentence and of the findings printed "
                        "beneath it, and of a folder's table (their codes stay)")
    p.add_argument("--strict", action="store_true",
                   help="content-check findings (CHECK-IBAN, CHECK-VAT-ID, ...) are errors, not warnings")
    p.add_argument("--html-dir", type=Path, metavar="OUT", help="write each document's report for people here")
    p.add_argument("--jobs", type=_positive, default=None, metavar="N",
                   help="worker processes for several documents (default: CPU cores)")
    p.set_defaults(func=_dispatch)


def _positive(text: str) -> int:
    """--jobs: a number of processes, at least 1 (0 and -1 were taken and meant "CPU cores" and "one")."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes (1 or more)")
    return n


def _dispatch(args) -> int:
    if any(output_refused("pipeline validate", out) for out in (args.html, args.pdf)) \
            or output_refused("pipeline validate", args.html_dir, folder=True):
        return 2  # before validating: a folder given as --html-dir failed every document as INTERNAL_ERROR
    if is_stdio(args.html) or is_stdio(args.pdf):  # wrote a file named "-"; stdout carries the verdict
        print("pipeline validate: --html / --pdf take a file name (stdout carries the verdict)", file=sys.stderr)
        return 2
    args.given, args.stdin = args.file, None
    if sum(map(is_stdio, args.file)) > 1:  # (stdin is read once: a second `-` was an empty document)
        print("pipeline validate: '-' (stdin) can be given once", file=sys.stderr)
        return 2
    if not any(map(is_stdio, args.file)):
        return _dispatch_files(args)
    # stdin as a file on disk: its first bytes tell a message, a mailbox or a ZIP from a document (`unpack.kind`),
    # and a mailbox of any size is read from there as a .mbox file is
    with tempfile.TemporaryDirectory(prefix="pipeline-stdin-") as tmp:
        args.stdin = spool(sys.stdin.buffer, Path(tmp))
        args.file = [args.stdin if is_stdio(p) else p for p in args.file]
        return _dispatch_files(args)


def _dispatch_files(args) -> int:
    paths = args.file
    if len(paths) == 1 and not paths[0].is_dir() and not is_archive(paths[0]):
        args.file = paths[0]
        return _run(args)
    if args.html or args.pdf:  # they name one file: for several documents they did nothing, without a word
        print("pipeline validate: --html / --pdf write the report of one document; for several use --html-dir OUT",
              file=sys.stderr)
        return 2
    return _run_many(args)


def _run(args) -> int:
    from pipeline.flows.validate_pdf import validate_pdf  # lazy: Saxon and pikepdf only for this command
    from pipeline.flows.validate_xml import validate  # lazy: as above

    data = args.file.read_bytes()
    name = STDIN if args.file == args.stdin else shown(args.file)
    spec = route(data, args.spec)
    # the PDF's own profile decides its rules: a --spec given for it was dropped without a word (`--spec peppol`
    # on a PDF printed a zugferd verdict)
    ignored = [o for o, given in (("--spec " + args.spec, args.spec != "auto"), ("--version", args.version)) if given]
    if spec == "zugferd" and ignored:
        print(f"pipeline validate: {' and '.join(ignored)} {'does' if len(ignored) == 1 else 'do'} not apply to a "
              "ZUGFeRD / Factur-X PDF (its profile's rules judge it; --spec fr-ctc adds France's)", file=sys.stderr)
    try:
        if spec == "fr-ctc" and is_pdf(data):
            from pipeline.flows.validate_fr_ctc import validate_fr_ctc  # lazy: as above

            report = validate_fr_ctc(data, args.version, content_checks=True, strict=args.strict)
            what = "fr-ctc (Factur-X PDF)"
        elif spec == "fr-cdar":
            from pipeline.flows.status_validate import validate_status  # lazy: as above

            report, what = validate_status(data, args.version), "fr-cdar"
        elif spec == "zugferd":
            report, what = validate_pdf(data, content_checks=True, strict=args.strict), "zugferd"
        else:
            outcome = validate(data, spec, args.version, content_checks=True, strict=args.strict)
            report = outcome.report
            what = spec + (f", scenario {outcome.scenario!r}" if outcome.scenario else "")
    except ApiError as exc:
        print(f"pipeline validate: {exc.error_code}: {in_language(args.lang, exc.error_code, exc.message)}",
              file=sys.stderr)
        return 2
    args.exit_code = EXIT[report.verdict]  # (kept if the reader of stdout goes away: pipeline.cli.main)
    if args.html or args.pdf:
        from pipeline.flows.validation_report import readable_report  # lazy: as above

        for out, pdf in ((args.html, False), (args.pdf, True)):
            if out:
                out.write_bytes(readable_report(data, report, Path(name).name, args.lang, pdf=pdf))
    if args.html_dir:
        _write_html(args.html_dir, Path(name).name, data, report, args.lang)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2, ensure_ascii=False))
    else:
        # `version` names only what judged it: None when the rules named ran on nothing of it ("en16931 None" before)
        judged = f"{what} {report.version}" if report.version else f"{what}: none of these rules ran"
        print(f"{report.verdict.upper()}: {name} ({judged}, "
              f"{report.syntax or 'unknown syntax'}) - {_counted(report.errors, 'error')}, "
              f"{_counted(report.warnings, 'warning')}")
        print(report.meaning(args.lang))  # what the report's class means for the receiver
        _print_findings(report, args.lang)
    return args.exit_code


def _print_findings(report, language: str) -> None:
    """The rules applied, what was not judged and the findings, after the verdict's sentence and in its language:
    the German sentence points to „nicht beurteilt“, and printed "NOT JUDGED" and English messages beneath it. The
    first line (the verdict, the rules' name, the counts) and the codes stay as they are for scripts."""
    de = language == "de"
    labels = LABELS["de" if de else "en"]
    words, classes = report_page.LABELS["de"], categories.LABELS["de"]
    # each release once, as the table's cell: a French invoice ran fr-ctc's XSD, en16931, then fr-ctc's Schematron
    ran = "; ".join(dict.fromkeys(r.label for r in report.rules))
    print(f"  {labels['rules']}: {ran or labels['none_ran']}" if de else f"  rules: {ran or 'none ran'}")
    for n in report.not_judged:
        print(f"  {labels['not_judged'].upper() if de else 'NOT JUDGED'} {n.code}: "
              f"{(n.message_de or n.message) if de else n.message}")
    for i in report.issues:
        loc = i.location
        where = (f" {'Zeile' if de else 'line'} {loc.line}" + (f":{loc.column}" if loc.column else "")
                 if loc and loc.line else "")
        # in German the severity and class in the German report's words ("FEHLER ... [Geschäftsregel]"), not
        # "ERROR ... [business-rule]" in a German line; in English the JSON's values, as scripts read them
        severity, category = ((words.get(i.severity, i.severity).upper(), classes.get(i.category, i.category)) if de
                              else (i.severity, i.category))
        print(f"  {severity:7} {i.code} [{category}]{where}: {(i.message_de or i.message) if de else i.message}")


EXIT = {"valid": 0, "invalid": 1, "indeterminate": 3}  # 2: could not be validated


def _write_html(folder: Path, name: str, data: bytes, report, language: str, file: str | None = None) -> None:
    """The report for people of document `name`, as `file` in `folder` (its name made one file name, `safe_name`)."""
    from pipeline.flows.validation_report import readable_report  # lazy: WeasyPrint / Saxon only when asked

    folder.mkdir(parents=True, exist_ok=True)
    (folder / (file or safe_name(name) + ".html")).write_bytes(readable_report(data, report, Path(name).name,
                                                                               language))


def _html_files(names: list[str | None]) -> list[str | None]:
    """Each document's report file name in --html-dir (None for an entry without a document): its name made one
    (`safe_name`), with its place among the results in front where an earlier document took that one, as a job's
    results ZIP names it (two attachments of one message named alike, "Rechnung.pdf" twice: the second report was
    written over the first)."""
    taken: set[str] = set()
    return [None if name is None else result_file(name, ".html", n, taken) for n, name in enumerate(names, start=1)]


def validate_one(job: tuple) -> dict:
    """One document in a worker process: its results[] entry, plus `spec` (the rules applied).
    job = (name, path or None, bytes or None, spec, version, strict, html_dir or None, language, origin, html file
    name or None) where `origin` is the entry's {"email"?, "signature"?} (validate_batch.origin)."""
    from pipeline.flows.validate_batch import document_outcome  # lazy: Saxon is loaded in the worker, not the parent

    name, path, data, spec, version, strict, html_dir, language, origin, html_file = job
    head = {"name": name, **origin}
    if data is None:
        try:
            data = path.read_bytes()
        except OSError as exc:
            return {**head, "error": {"code": "UNREADABLE", "message": f"{exc.strerror or exc}"}}
    spec = route(data, spec)
    outcome, report = document_outcome(data, spec, version, None, strict)
    if html_dir is not None and report is not None:
        _write_html(html_dir, name, data, report, language, html_file)
    return {**head, **outcome, "spec": spec}


def _warm() -> None:
    """Worker start: load Saxon in this process (never inherited). Ctrl-C reaches the whole process group: the
    parent alone answers it (stops the workers, reports what was done), so a worker ignores it rather than die
    with a traceback of its own."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import pipeline.flows.validate_batch  # noqa: F401 - lazy: the heavy imports, once per worker


class Interrupted(Exception):
    """Ctrl-C during run_jobs: `results` in job order, None for each document not validated."""

    def __init__(self, results: list[dict | None]):
        super().__init__("interrupted")
        self.results = results


def run_jobs(jobs: list[tuple], workers: int, progress: Progress | None = None) -> list[dict]:
    """Every job through validate_one, in `workers` processes (1: in this process), results in job order.
    Interrupted (with what was done) on Ctrl-C."""
    results: list[dict | None] = [None] * len(jobs)
    if workers <= 1 or len(jobs) <= 1:
        try:
            for n, job in enumerate(jobs):
                results[n] = validate_one(job)
                if progress:
                    progress.step(job[0])
        except KeyboardInterrupt:
            raise Interrupted(results) from None
        return results
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    size = max(1, min(16, len(jobs) // (workers * 8)))  # small chunks: little IPC, the workers stay even
    chunks = [list(range(n, min(n + size, len(jobs)))) for n in range(0, len(jobs), size)]
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method), initializer=_warm)
    try:
        futures = {pool.submit(validate_chunk, [jobs[n] for n in chunk]): chunk for chunk in chunks}
        for future in as_completed(futures):
            chunk = futures[future]
            try:
                done = future.result()
            except Exception as exc:  # noqa: BLE001 - a worker that died costs its documents only
                done = [{"name": jobs[n][0], "error": {"code": "INTERNAL_ERROR", "message": str(exc)}} for n in chunk]
            for n, result in zip(chunk, done):
                results[n] = result
                if progress:
                    progress.step(jobs[n][0])
    except KeyboardInterrupt:
        # a `with` block's exit waited for every queued document (the whole folder) and then reported none: drop the
        # queue and end the workers' current documents (the workers are this process's own children)
        _stop(pool)
        raise Interrupted(results) from None
    finally:
        pool.shutdown(cancel_futures=True)  # after _stop: returns at once
    return results


def _stop(pool: ProcessPoolExecutor) -> None:
    """End a pool at once: nothing queued starts, the running documents are abandoned."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public way to reach them (3.11)
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    for process in processes:
        process.join(5)


def validate_chunk(jobs: list[tuple]) -> list[dict]:
    return [validate_one(job) for job in jobs]


def _jobs_of(args) -> list[tuple | dict]:
    """A job per document (validate_one's tuple), or the results[] entry of a document refused unread (an
    archive member, an attachment) or of a message without an invoice."""
    from pipeline.flows.validate_batch import entry, origin  # lazy: as above

    common = (args.spec, args.version, args.strict, args.html_dir, args.lang)
    jobs: list[tuple | dict] = []
    for doc in documents(args.file, "pipeline validate", args.lang):
        if doc.error is not None:
            jobs.append(entry(doc, None))
        elif doc.path is not None and doc.path == args.stdin:  # `-` among several, one document: named as stdin
            jobs.append((STDIN, doc.path, None) + common + ({},))
        else:
            jobs.append((doc.name, doc.path, doc.data) + common + (origin(doc.email, doc.signature),))
    files = _html_files([job[0] if isinstance(job, tuple) else None for job in jobs])
    return [job + (file,) if isinstance(job, tuple) else job for job, file in zip(jobs, files)]


def _run_many(args) -> int:
    try:
        jobs = _jobs_of(args)
    except ApiError as exc:
        print(f"pipeline validate: {exc.error_code}: {in_language(args.lang, exc.error_code, exc.message)}",
              file=sys.stderr)
        return 2
    if not jobs:
        print(f"pipeline validate: {NO_INVOICE[args.lang]} ({read_as(args.lang)}) in {', '.join(map(str, args.given))}",
              file=sys.stderr)
        return 2
    refused = {n: j for n, j in enumerate(jobs) if isinstance(j, dict)}
    todo = [j for n, j in enumerate(jobs) if n not in refused]
    progress = Progress(len(todo))
    interrupted = False
    try:
        validated = run_jobs(todo, args.jobs or os.cpu_count() or 1, progress)
    except Interrupted as stop:  # Ctrl-C: what was validated is reported, the rest named as not validated
        interrupted, validated = True, stop.results
    except KeyboardInterrupt:  # outside the pool's loop (its start or end, a loaded machine): none known as done
        interrupted, validated = True, [None] * len(todo)
    finally:
        progress.close()
    done = iter(validated)
    results = [refused[n] if n in refused else next(done) or _not_validated(jobs[n]) for n in range(len(jobs))]
    from pipeline.flows.validate_batch import summary  # lazy: as above

    total = summary(results)
    args.exit_code = (2 if total["errors"] else 1 if total["invalid"] > total["indeterminate"]
                      else 3 if total["indeterminate"] else 0)
    if args.json:
        clean = [{k: v for k, v in r.items() if k != "spec"} for r in results]
        print(json.dumps({"summary": total, "results": clean}, indent=2, ensure_ascii=False))
    else:
        _table([r for r in results if not _was_interrupted(r)], total, args.lang)
    if interrupted:
        left = sum(1 for r in results if _was_interrupted(r))
        print("pipeline validate: " + STOPPED[args.lang].format(done=len(results) - left, of=len(results), left=left),
              file=sys.stderr)
    return args.exit_code


INTERRUPTED = "INTERRUPTED"
NO_INVOICE = {"en": "no e-invoice", "de": "keine E-Rechnung"}
STOPPED = {"en": "interrupted: {done} of {of} documents done, {left} not validated (INTERRUPTED)",
           "de": "abgebrochen: {done} von {of} Dokumenten geprüft, {left} nicht geprüft (INTERRUPTED)"}


def _not_validated(job: tuple) -> dict:
    """The results[] entry of a document Ctrl-C left unvalidated: an error, so that the exit code is 2 and a
    --json reader sees every document named."""
    return {"name": job[0], **job[8],  # (its origin: validate_one's tuple)
            "error": {"code": INTERRUPTED, "message": "Not validated: the run was interrupted (Ctrl-C).",
                      "messageDe": "Nicht geprüft: der Lauf wurde abgebrochen (Strg+C)."}}


def _was_interrupted(result: dict) -> bool:
    return (result.get("error") or {}).get("code") == INTERRUPTED


# The folder table's words in --lang's language (its verdicts those of verdict.LABELS, in capitals); the codes stay.
TABLE = {"en": {"head": ("document", "verdict", "rules", "errors", "warnings", "first error (or why not judged)"),
                "NOTICE": "NOTICE", "ERROR": "ERROR", "none_ran": "none ran",
                "total": "{files}: {valid} valid, {invalid} invalid, {indeterminate} indeterminate, {errors} could "
                         "not be validated", "left": ", {left} not validated (interrupted)",
                "no_invoice": ", {messages} without an invoice"},
         "de": {"head": ("Dokument", "Ergebnis", "Regeln", "Fehler", "Warnungen",
                         "erster Fehler (oder warum nicht beurteilt)"),
                "NOTICE": "HINWEIS", "ERROR": "NICHT GEPRÜFT", "none_ran": "keine",
                "total": "{files}: {valid} gültig, {invalid} ungültig, {indeterminate} nicht beurteilbar, {errors} "
                         "nicht prüfbar", "left": ", {left} nicht geprüft (abgebrochen)",
                "no_invoice": ", {messages} ohne Rechnung"}}
NOUNS = {"en": {"document": ("document", "documents"), "message": ("message", "messages")},
         "de": {"document": ("Dokument", "Dokumente"), "message": ("Nachricht", "Nachrichten")}}


def _ran(report: dict, language: str = "en") -> str:
    """The table's `rules` cell: the rule sets that judged the document (`pdf+en16931`), not the spec it was sent
    to (`en16931` stood beside a 2026-edition invoice no rules ran on)."""
    return "+".join(dict.fromkeys(r["pack"] for r in report["rules"])) or TABLE[language]["none_ran"]


def _why(report: dict) -> str:
    """The table's reason a document was not judged: the first code and, where a claim is the reason, the claim as
    written (`RULES-NOT-INSTALLED urn:cen.eu:en16931:2026`, invisible characters by their code point): the code alone
    left the reader of a folder's table to guess which rules each document asked for."""
    reason = next(iter(report["notJudged"]), None)
    if reason is None:
        return ""
    return reason["code"] + (f" {claims.shown(reason['claim'])}" if reason.get("claim") else "")


def _table(results: list[dict], total: dict, language: str = "en") -> None:
    """One line per document, then the summary, in `language`."""
    words = {**TABLE[language], **{v: LABELS[language][v].upper() for v in (VALID, INVALID, INDETERMINATE)}}
    document, verdict, rules, errors, warnings, first_error = words["head"]
    width = min(max([len(r["name"]) for r in results] + [8]), 70)
    ran = max([len(_ran(r["report"], language)) for r in results if "report" in r] + [10])
    said = max(len(words[k]) for k in (VALID, INVALID, INDETERMINATE, "NOTICE", "ERROR"))
    print(f"{document:{width}}  {verdict:{said}} {rules:{ran}} {errors:>6} {warnings:>8}  {first_error}")
    for r in results:
        name = r["name"] if len(r["name"]) <= width else "..." + r["name"][-width + 3:]
        if "report" in r:
            rep = r["report"]
            first = next((i["code"] for i in rep["issues"] if i["severity"] == "ERROR"), None) or _why(rep)
            print(f"{name:{width}}  {words[rep['verdict']]:{said}} {_ran(rep, language):{ran}} "
                  f"{rep['summary']['errors']:>6} {rep['summary']['warnings']:>8}  {first}".rstrip())
        else:
            kind, what = ("NOTICE", r["notice"]) if "notice" in r else ("ERROR", r["error"])
            message = in_language(language, what["code"], what["message"], what.get("messageDe"))
            print(f"{name:{width}}  {words[kind]:{said}} {'':{ran}} {'':>6} {'':>8}  {what['code']}: {message}")
    left = total["files"] - len(results)  # the documents an interruption left: counted, not listed one by one
    # a message without an invoice is no document: counted as a message after the documents, whose counts add up
    documents = total["files"] - total["noInvoice"]
    print("\n" + words["total"].format(files=_counted(documents, "document", language), valid=total["valid"],
                                       invalid=total["invalid"] - total["indeterminate"],
                                       indeterminate=total["indeterminate"], errors=total["errors"] - left)
          + (words["left"].format(left=left) if left else "")
          + (words["no_invoice"].format(messages=_counted(total["noInvoice"], "message", language))
             if total["noInvoice"] else ""))


def _counted(n: int, noun: str, language: str = "en") -> str:
    """`1 message`, `2 messages`: the summary says what it counts in the number's form, never `message(s)`."""
    one, many = NOUNS[language].get(noun) or (noun, noun + "s")
    return f"{n} {one if n == 1 else many}"
