"""A job's `request` part from the command line, shared by `pipeline jobs submit` and `pipeline inbox`: a flag goes
into the request only when given, and the service (`job_document.check_options`) refuses one the operation does not
take, as it refuses such a key over HTTP."""
from __future__ import annotations

OPERATIONS = ("validate", "parse", "convert")


def add_arguments(p) -> None:
    p.add_argument("--operation", choices=OPERATIONS, default="validate")
    p.add_argument("--spec", help="validate: auto (default: each document's rules detected from it), xrechnung, "
                                  "en16931, zugferd, fr-ctc, peppol, fr-cdar; convert: the target's rules "
                                  "(xrechnung, en16931, peppol)")
    p.add_argument("--version", help="validate with --spec: its rules' version")
    p.add_argument("--strict", action="store_true", help="validate: content-check findings are errors")
    p.add_argument("--html", action="store_true", help="validate: an HTML report per document too (in the "
                                                       "results' ZIP)")
    p.add_argument("--validate", action="store_true", help="parse: add each document's validation report")
    p.add_argument("--to", help="convert: CII, UBL or ZUGFERD")
    p.add_argument("--profile", help="convert --to ZUGFERD: the Factur-X profile (default: the source's, else "
                                     "EN16931)")
    p.add_argument("--lang", choices=("en", "de"), help="validate --html: the reports' language; convert --to "
                                                        "ZUGFERD: the page's; also of this command's own "
                                                        "messages and summary")
    p.add_argument("--allow-loss", action="store_true", help="convert: even where the target cannot carry some "
                                                             "values (each document's line lists them)")


# The option that sets each key of the request part (request_of), to name it in a refusal of that field
OPTIONS = {"operation": "--operation", "spec": "--spec", "version": "--version", "to": "--to", "profile": "--profile",
           "metadataLanguage": "--lang", "strict": "--strict", "html": "--html", "validate": "--validate",
           "allowLoss": "--allow-loss"}


def option_of(field: str) -> str | None:
    """`--to` for the service's field `request.to`; None for any other field."""
    head, _, key = field.partition(".")
    return OPTIONS.get(key) if head == "request" else None


def request_of(args) -> dict:
    request: dict = {"operation": args.operation}
    for key, value in (("spec", args.spec), ("version", args.version), ("to", args.to), ("profile", args.profile),
                       ("metadataLanguage", args.lang)):
        if value:
            request[key] = value
    for key, value in (("strict", args.strict), ("html", args.html), ("validate", args.validate),
                       ("allowLoss", args.allow_loss)):
        if value:
            request[key] = True
    return request
