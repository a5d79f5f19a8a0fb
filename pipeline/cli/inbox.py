"""`pipeline inbox imaps://user@host[:port]/MAILBOX [--operation validate] [--spec auto] [--move-valid F
--move-invalid F --move-other F] [--once | --watch]`: a mailbox as a source of jobs (pipeline.jobs.inbox).

The password comes from EINVOICE_IMAP_PASSWORD or the file EINVOICE_IMAP_PASSWORD_FILE (or --password-file), never
from the command line. The server's certificate is checked against the system's CAs, or --cafile. The jobs go to
the service's database (EINVOICE_DATABASE_URL, else the SQLite store) and jobs directory, like a job posted to
POST /v1/jobs, and belong to the key --key-id (EINVOICE_INBOX_KEY_ID). On the SQLite store this process works on
them itself; with PostgreSQL, `pipeline worker`s do. Exit 0 after --once, 2 when the mailbox cannot be used (the
login or the folder refused at the start, or, with --once, the server away for ONCE_RETRIES new connections in a
row). A session that breaks midway (a server restart) goes on in a new one.
"""
from __future__ import annotations

import logging
import os
import ssl
import sys
import time
from pathlib import Path

from pipeline.cli import job_request
from pipeline.errors import ApiError

RETRY = 5.0  # s before a new connection after the server or the network failed
ONCE_RETRIES = 12  # new connections in a row --once tries before it gives up (a minute of a server away)


def _password(args) -> str:
    path = args.password_file or os.environ.get("EINVOICE_IMAP_PASSWORD_FILE")
    if path:
        return Path(path).read_text("utf-8").strip("\r\n")
    password = os.environ.get("EINVOICE_IMAP_PASSWORD")
    if not password:
        raise SystemExit("pipeline inbox: no password: set EINVOICE_IMAP_PASSWORD or EINVOICE_IMAP_PASSWORD_FILE "
                         "(never on the command line)")
    return password


def _run(args) -> int:
    from pipeline.cli.serve import configure_logging, warm_worker  # lazy: as `pipeline worker` does
    from pipeline.flows.job_document import check_options  # lazy: the flows load only for this command
    from pipeline.jobs import inbox as source  # lazy: as above (the job engine)
    from pipeline.service.platform import PlatformConfig  # lazy: as above (the credit costs' settings)
    from pipeline.service.resources.jobs import job_prices  # lazy: as above (what a job's document holds)
    from pipeline.storage import open_store  # lazy: as above (psycopg where PostgreSQL runs)

    configure_logging()
    logging.getLogger("pipeline.inbox").setLevel(logging.INFO)
    try:
        address = source.Address.parse(args.url)
        operation, options = check_options(job_request.request_of(args))
    except (source.InboxError, ApiError) as exc:
        print(f"pipeline inbox: {getattr(exc, 'message', exc)}", file=sys.stderr)
        return 2
    password = _password(args)
    context = ssl.create_default_context(cafile=args.cafile or os.environ.get("EINVOICE_IMAP_CAFILE") or None)
    # each document holds the dearest rules it may be routed to and is charged those it got, as a job's upload
    cost, options = job_prices(PlatformConfig.from_env(), operation, options)
    store = open_store()
    inbox = source.Inbox(store, args.key_id or "", operation, options, cost,
                         {"valid": args.move_valid, "invalid": args.move_invalid, "other": args.move_other})
    if not args.key_id:
        print("pipeline inbox: no --key-id (EINVOICE_INBOX_KEY_ID): the jobs belong to no API key", file=sys.stderr)
    box, connected, failures = None, False, 0
    log = logging.getLogger("pipeline.inbox")
    while True:
        try:
            if box is None:
                box = source.Mailbox(address, password, context)
                if not connected:
                    warm_worker()  # after the login: a wrong password is said at once, not after the warm-up
                connected = True
                inbox.prepare(box)
            inbox.run_once(box)
            failures = 0
            if not args.watch:
                box.close()
                return 0
            if not box.wait(args.idle if "IDLE" in box.capabilities else args.poll):
                box.close()
                box = None  # a quiet IDLE: a fresh connection for the next round
        except (source.InboxError, *source.LOST) as exc:
            # the first connection refused (a wrong password, no such folder) or, with --once, not made: said and
            # ended, never tried again every few seconds (a server may lock the account after repeated failures).
            # A session that broke later (a server restart, the network) goes on in a new one; --once gives up
            # after ONCE_RETRIES in a row
            refused = isinstance(exc, source.InboxError) and exc.refused
            if not connected and (refused or not args.watch):
                print(f"pipeline inbox: {exc}", file=sys.stderr)
                return 2
            failures += 1
            if not args.watch and failures > ONCE_RETRIES:
                print(f"pipeline inbox: {exc}; gave up after {ONCE_RETRIES} new connections", file=sys.stderr)
                return 2
            log.warning("%s%s; again in %g s", "" if isinstance(exc, source.InboxError) else "connection lost: ",
                        exc, RETRY)
            box = _drop(box)
            time.sleep(RETRY)


def _drop(box):
    if box is not None:
        box.close()
    return None


def register(subparsers) -> None:
    p = subparsers.add_parser("inbox", help="take invoices from an IMAP mailbox as jobs, move each message once "
                                            "its results are in")
    p.add_argument("url", metavar="imaps://user@host[:port]/MAILBOX")
    job_request.add_arguments(p)
    p.add_argument("--move-valid", metavar="FOLDER", help="where a message whose invoices are all valid goes")
    p.add_argument("--move-invalid", metavar="FOLDER", help="... with an invoice invalid or unreadable")
    p.add_argument("--move-other", metavar="FOLDER", help="... without an invoice")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true", help="take the messages there are, wait for their jobs, "
                      "move them, end (the default)")
    mode.add_argument("--watch", action="store_true", help="go on: IDLE where the server offers it, else poll")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between looks without IDLE (default 30)")
    p.add_argument("--idle", type=float, default=300.0, help="seconds of one IDLE before a new connection "
                   "(default 300; servers end IDLE after 30 min)")
    p.add_argument("--key-id", default=os.environ.get("EINVOICE_INBOX_KEY_ID"),
                   help="the API key the jobs belong to (EINVOICE_INBOX_KEY_ID); its credits pay for them")
    p.add_argument("--cafile", help="CA certificates for the server's TLS certificate (EINVOICE_IMAP_CAFILE)")
    p.add_argument("--password-file", help="a file holding the password (EINVOICE_IMAP_PASSWORD_FILE)")
    p.set_defaults(func=_run)
