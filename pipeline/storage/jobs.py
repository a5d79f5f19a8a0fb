"""Job tables: a job, its documents (one row each, unique per (job, index)) and its credits, on either SQL backend.

A job holds its credits itself: submission debits `cost x accepted documents` from the key's balance in the same
transaction that inserts the job, its documents and (PostgreSQL) enqueues its chunks. A chunk's results are
recorded in one transaction that
- fills each document's row only if it has no result yet (`... WHERE outcome IS NULL`), so a retried chunk, or
  two workers that ran the same chunk, count a document once;
- adds the newly recorded documents to the job's counters and writes one ledger charge for those that got a
  result (a report, an invoice, a document; an error entry costs nothing), each at its own price (a validated
  document: the rules it got, `Outcome.cost`) and never above what it holds;
- ends the job once every document has its row, giving the credits still held (never charged) back;
- numbers the newly recorded documents in the order their results came (`seq`, 1, 2, ... per job, so that a client
  reads the results while the job runs: those after the n-th). `done` counts the documents with a result, so the
  new ones are the last of it: they are numbered after the job's row is updated, under its lock, and a reader who
  sees the n-th result sees every one before it (a recording that waited for the lock numbers after the one that
  held it, and commits after it).
Cancel and failure end the job the same way: the state moves from queued/running to its end state once, and
that one transaction gives back `reserved - charged`. Results recorded after the end are not taken.

Timestamps are epoch seconds (DOUBLE PRECISION) on both backends.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timezone

from pipeline.errors import job_failure_de
from pipeline.storage.store import MAX_BALANCE

ACTIVE = ("queued", "running")
MAX_COST = 2**31 - 1  # credits a document costs at most (jobs.cost is an INTEGER: PostgreSQL's has 32 bits)
ENDPOINT = "/v1/jobs"

JOBS_V3 = [
    "CREATE TABLE jobs (id TEXT PRIMARY KEY, key_id TEXT NOT NULL, state TEXT NOT NULL, operation TEXT NOT NULL, "
    "options TEXT NOT NULL, total INTEGER NOT NULL, done INTEGER NOT NULL DEFAULT 0, valid INTEGER NOT NULL DEFAULT 0, "
    "invalid INTEGER NOT NULL DEFAULT 0, errors INTEGER NOT NULL DEFAULT 0, cost INTEGER NOT NULL, "
    "reserved BIGINT NOT NULL, charged BIGINT NOT NULL DEFAULT 0, created_at DOUBLE PRECISION NOT NULL, "
    "started_at DOUBLE PRECISION, finished_at DOUBLE PRECISION, lease_owner TEXT, lease_until DOUBLE PRECISION, "
    "message TEXT)",
    "CREATE INDEX jobs_by_key ON jobs (key_id, created_at)",
    # pos, size: where the document's bytes are in the job's documents file (pipeline.jobs.files); NULL if refused.
    # page: the report for people (HTML) when the job asked for it
    "CREATE TABLE job_documents (job_id TEXT NOT NULL, idx INTEGER NOT NULL, name TEXT NOT NULL, pos BIGINT, "
    "size INTEGER, outcome TEXT, result TEXT, page TEXT, PRIMARY KEY (job_id, idx))",
]

# v4: the message a document came from (JSON, documents found in e-mail; pipeline.unpack.mail), and the messages
# `pipeline inbox` has taken from a mailbox (pipeline.storage.inbox)
JOBS_V4 = ["ALTER TABLE job_documents ADD COLUMN email TEXT"]
# v5: how many of the invalid documents were indeterminate (issue 37: not judged, rather than found wrong)
JOBS_V5 = ["ALTER TABLE jobs ADD COLUMN indeterminate INTEGER NOT NULL DEFAULT 0"]
# v7: the order in which documents got their results (`seq`; GET /v1/jobs/{id}/results?after=n); the results
# recorded before are numbered in archive order
JOBS_V7 = [
    "ALTER TABLE job_documents ADD COLUMN seq INTEGER",
    "UPDATE job_documents SET seq = numbered.n FROM (SELECT job_id, idx, row_number() OVER (PARTITION BY job_id "
    "ORDER BY idx) AS n FROM job_documents WHERE outcome IS NOT NULL) AS numbered "
    "WHERE job_documents.job_id = numbered.job_id AND job_documents.idx = numbered.idx",
    "CREATE INDEX job_documents_by_seq ON job_documents (job_id, seq)",
]
# v8: what the signature of the signed file (.p7m, S/MIME) a document came out of says (JSON; pipeline.unpack.signature)
JOBS_V8 = ["ALTER TABLE job_documents ADD COLUMN signature TEXT"]
# v9: the documents that got their result unjudged (a parse job without `validate`: read, neither valid nor invalid;
# issue 37: a count of valid documents claimed a validation that never ran)
JOBS_V9 = ["ALTER TABLE jobs ADD COLUMN unchecked INTEGER NOT NULL DEFAULT 0"]

_JOB_COLUMNS = ("id, key_id, state, operation, options, total, done, valid, invalid, errors, cost, reserved, charged, "
                "created_at, started_at, finished_at, message, indeterminate, unchecked")
JOB_STATES = ("queued", "running", "done", "failed", "cancelled")
JOBS_PAGE, MAX_JOBS_PAGE = 100, 1000  # jobs listed at a time (GET /v1/jobs): by default, at most


def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class Job:
    id: str
    key_id: str
    state: str
    operation: str
    options: str  # JSON: {"spec", "version", "to", "strict", ...; "prices": validate, what each route costs}
    total: int
    done: int
    valid: int
    invalid: int
    errors: int
    cost: int
    reserved: int
    charged: int
    created_at: float
    started_at: float | None
    finished_at: float | None
    message: str | None
    indeterminate: int = 0  # of `invalid`: the documents whose verdict is indeterminate
    unchecked: int = 0  # documents with a result nothing judged (kind `unchecked`): neither valid nor invalid

    @property
    def active(self) -> bool:
        return self.state in ACTIVE

    @property
    def no_invoice(self) -> int:
        """Messages without an invoice: the documents done that got none of the other counts."""
        return self.done - self.valid - self.invalid - self.unchecked - self.errors

    def to_dict(self) -> dict:
        out = {"id": self.id, "state": self.state, "operation": self.operation, "total": self.total,
               "done": self.done, "valid": self.valid, "invalid": self.invalid, "indeterminate": self.indeterminate,
               "unchecked": self.unchecked, "errors": self.errors, "noInvoice": self.no_invoice,
               "createdAt": _iso(self.created_at), "startedAt": _iso(self.started_at),
               "finishedAt": _iso(self.finished_at), "creditsReserved": self.reserved,
               "creditsCharged": self.charged}
        if self.message:
            out["message"] = self.message
            german = job_failure_de(self.message)
            if german:
                out["messageDe"] = german
        return out


@dataclass(frozen=True)
class Outcome:
    """One document's result: `kind` is valid | invalid | indeterminate | unchecked | error (the first four: it got
    its result and is charged; indeterminate counts as invalid too, unchecked as neither), `line` the JSON Lines
    entry as text, `page` the HTML report when the job asked for one, `cost` what it is charged (the price of the
    rules it got; None: the job's `cost`, what each document holds)."""
    index: int
    kind: str
    line: str
    page: str | None = None
    cost: int | None = None


class _Ended(Exception):
    """The job ended while a chunk's results were being recorded."""


class JobTables:
    """Mixin for SqlStore: the job statements, written with `?` placeholders like the rest of the store."""

    def _job(self, row) -> Job:
        (id_, key_id, state, operation, options, total, done, valid, invalid, errors, cost, reserved, charged,
         created, started, finished, message, indeterminate, unchecked) = row
        return Job(id_, key_id, state, operation, options, int(total), int(done), int(valid), int(invalid),
                   int(errors), int(cost), int(reserved), int(charged), float(created),
                   None if started is None else float(started), None if finished is None else float(finished),
                   message, int(indeterminate), int(unchecked))

    def create_job(self, job_id: str, key_id: str, operation: str, options: str, names: list[str],
                   refused: dict[int, str], spans: dict[int, tuple[int, int]], cost: int, enqueue=None,
                   notices: dict[int, str] | None = None, emails: dict[int, str] | None = None,
                   signatures: dict[int, str] | None = None) -> Job | None:
        """Insert the job and its documents (`spans`: index -> (position, size) of an accepted document's bytes)
        and hold `cost` credits for each accepted document (those in neither `refused` nor `notices`, whose error
        and notice lines are recorded at once: outcome error, and none for a message without an invoice).
        `emails`: index -> the message a document came from (JSON), `signatures`: index -> what the signature of
        the signed file it came out of says (JSON). `enqueue(cursor)` runs last, in the same
        transaction (PostgreSQL: the chunks go to Procrastinate). None when the balance is too low: nothing is
        written then. The lines recorded at once are the job's first results (`seq`), in archive order."""
        notices, emails, signatures = notices or {}, emails or {}, signatures or {}
        ended = sorted(set(refused) | set(notices))
        total, accepted = len(names), len(names) - len(refused) - len(notices)
        reserved = cost * accepted
        if reserved > MAX_BALANCE:  # no key holds that much (and SQLite stores no more than 2**63 - 1: a 500)
            return None
        cost = min(cost, MAX_COST)  # (larger only where nothing is accepted: no document is charged it)
        now = time.time()
        with self._tx(long=True) as cur:
            if reserved:
                cur.execute(self._sql("UPDATE api_keys SET balance = balance - ? "
                                      "WHERE key_id = ? AND revoked_at IS NULL AND balance >= ?"),
                            (reserved, key_id, reserved))
                if cur.rowcount != 1:
                    return None
            done = len(refused) + len(notices)
            state = "done" if done == total else "queued"
            cur.execute(self._sql(f"INSERT INTO jobs ({_JOB_COLUMNS}) VALUES "
                                  "(?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, 0, ?, NULL, ?, NULL, 0, 0)"),
                        (job_id, key_id, state, operation, options, total, done, len(refused), cost, reserved, now,
                         now if state == "done" else None))
            cur.executemany(self._sql("INSERT INTO job_documents (job_id, idx, name, pos, size, outcome, result, "
                                      "email) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"),
                            [(job_id, i, name, *spans.get(i, (None, None)),
                              "error" if i in refused else "none" if i in notices else None,
                              refused.get(i) or notices.get(i), emails.get(i))
                             for i, name in enumerate(names)])
            if signatures:  # (few documents come out of a signed file: theirs are set once the rows are in)
                cur.executemany(self._sql("UPDATE job_documents SET signature = ? WHERE job_id = ? AND idx = ?"),
                                [(said, job_id, i) for i, said in signatures.items()])
            self._number(cur, job_id, 1, ended)
            if enqueue is not None and state == "queued":
                enqueue(cur)
        return self.get_job(job_id)

    def get_job(self, job_id: str, key_id: str | None = None) -> Job | None:
        """The job; with `key_id`, only if it belongs to that key (another key's job is not found)."""
        rows = self._read(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,))
        if not rows or (key_id is not None and rows[0][1] != key_id):
            return None
        return self._job(rows[0])

    def stored_bytes(self, key_id: str) -> int:
        """Bytes of documents the key's active jobs keep in the jobs directory (its disk quota counts them)."""
        return int(self._read("SELECT COALESCE(SUM(d.size), 0) FROM jobs j JOIN job_documents d ON d.job_id = j.id "
                              "WHERE j.key_id = ? AND j.state IN ('queued', 'running')", (key_id,))[0][0])

    def list_jobs(self, key_id: str, limit: int = JOBS_PAGE, before: Job | None = None,
                  states: tuple[str, ...] = ()) -> list[Job]:
        """The key's jobs, newest first (ties by id, so that a page ends at a stable place); with `before`, those
        listed after that job; with `states`, only jobs in one of them (`JOB_STATES`)."""
        where, params = "key_id = ?", [key_id]
        if before is not None:
            where += " AND (created_at < ? OR (created_at = ? AND id < ?))"
            params += [before.created_at, before.created_at, before.id]
        if states:
            where += f" AND state IN ({', '.join('?' for _ in states)})"
            params += list(states)
        rows = self._read(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE {where} "
                          "ORDER BY created_at DESC, id DESC LIMIT ?", (*params, int(limit)))
        return [self._job(r) for r in rows]

    def open_documents(self, job_id: str, first: int, last: int
                       ) -> list[tuple[int, str, int, int, str | None, str | None]]:
        """(index, name, position, size, email, signature) of the documents in [first, last) that have no result
        yet."""
        return [(int(i), n, int(p), int(z), e, s) for i, n, p, z, e, s in self._read(
            "SELECT idx, name, pos, size, email, signature FROM job_documents WHERE job_id = ? AND idx >= ? "
            "AND idx < ? AND outcome IS NULL ORDER BY idx", (job_id, int(first), int(last)))]

    def record_results(self, job_id: str, outcomes: list[Outcome]) -> int:
        """Record a chunk's results (module docstring); returns how many documents were new. Nothing is taken
        once the job has ended (cancelled or failed). The document rows are filled first and the job's row is
        updated last, so that chunks of one job recording at once wait for each other one statement long only."""
        rows = self._read("SELECT cost FROM jobs WHERE id = ? AND state IN ('queued', 'running')", (job_id,))
        if not rows:
            return 0
        cost = int(rows[0][0])
        try:
            with self._tx() as cur:
                counts = {"valid": 0, "invalid": 0, "indeterminate": 0, "unchecked": 0, "error": 0}
                charge, recorded = 0, []
                for o in outcomes:
                    cur.execute(self._sql("UPDATE job_documents SET outcome = ?, result = ?, page = ? "
                                          "WHERE job_id = ? AND idx = ? AND outcome IS NULL"),
                                (o.kind, o.line, o.page, job_id, o.index))
                    if cur.rowcount == 1:
                        recorded.append(o.index)
                        counts[o.kind] += 1
                        if o.kind != "error":  # never more than it holds: the credits held cover every charge
                            charge += cost if o.cost is None else min(o.cost, cost)
                new = sum(counts.values())
                if not new:
                    return 0
                invalid = counts["invalid"] + counts["indeterminate"]  # not valid, as a batch's summary counts
                cur.execute(self._sql("UPDATE jobs SET state = 'running', started_at = COALESCE(started_at, ?), "
                                      "done = done + ?, valid = valid + ?, invalid = invalid + ?, "
                                      "indeterminate = indeterminate + ?, unchecked = unchecked + ?, "
                                      "errors = errors + ?, charged = charged + ? "
                                      "WHERE id = ? AND state IN ('queued', 'running') "
                                      "RETURNING key_id, done, total"),
                            (time.time(), new, counts["valid"], invalid, counts["indeterminate"], counts["unchecked"],
                             counts["error"], charge, job_id))
                row = cur.fetchone()
                if row is None:
                    raise _Ended  # cancelled or failed meanwhile: these results are not taken (rolled back)
                key_id, done, total = row
                # the new results are the last `new` of `done` (module docstring)
                self._number(cur, job_id, int(done) - new + 1, recorded)
                if charge:
                    self._ledger(cur, key_id, "charge", charge, job_id, ENDPOINT, self._now())
                if int(done) >= int(total):
                    self._end(cur, job_id, "done", None)
        except _Ended:
            return 0
        return new

    def _end(self, cur, job_id: str, state: str, message: str | None) -> bool:
        """Move an active job to its end state once, giving back the credits it holds but did not charge."""
        cur.execute(self._sql("UPDATE jobs SET state = ?, finished_at = ?, message = ?, lease_owner = NULL "
                              "WHERE id = ? AND state IN ('queued', 'running') RETURNING key_id, reserved - charged"),
                    (state, time.time(), message, job_id))
        row = cur.fetchone()
        if row is None:
            return False
        key_id, rest = row
        if int(rest):
            cur.execute(self._sql("UPDATE api_keys SET balance = balance + ? WHERE key_id = ?"), (int(rest), key_id))
        return True

    def cancel_job(self, job_id: str, key_id: str) -> Job | None:
        """Cancel the key's job (documents already done keep their results); None if the key has no such job."""
        with self._tx() as cur:
            cur.execute(self._sql("SELECT key_id FROM jobs WHERE id = ?"), (job_id,))
            row = cur.fetchone()
            if row is None or row[0] != key_id:
                return None
            self._end(cur, job_id, "cancelled", None)
        return self.get_job(job_id)

    def fail_job(self, job_id: str, message: str) -> bool:
        with self._tx() as cur:
            return self._end(cur, job_id, "failed", message)

    def forget_job(self, job_id: str, batch: int = 5000) -> bool:
        """Delete an ended job (False, nothing deleted, while it is active; an ended job never runs again): its
        documents' rows (their results) `batch` at a time, each batch a transaction of its own (a job of 200,000
        documents stays within the statement timeout), then the job's row. Its ledger entries stay: credits are
        accounting, not the invoices' content."""
        rows = self._read("SELECT state FROM jobs WHERE id = ?", (job_id,))
        if not rows or rows[0][0] in ACTIVE:
            return False
        while True:
            with self._tx() as cur:
                cur.execute(self._sql("DELETE FROM job_documents WHERE job_id = ? AND idx IN (SELECT idx FROM "
                                      "job_documents WHERE job_id = ? ORDER BY idx LIMIT ?)"),
                            (job_id, job_id, int(batch)))
                if cur.rowcount < batch:
                    break
        with self._tx() as cur:
            cur.execute(self._sql("DELETE FROM jobs WHERE id = ?"), (job_id,))
        return True

    def expired_jobs(self, ended_before: float, limit: int = 100) -> list[str]:
        """Ids of jobs that ended before `ended_before` (epoch seconds), the oldest first."""
        return [i for i, in self._read("SELECT id FROM jobs WHERE state NOT IN ('queued', 'running') AND "
                                       "finished_at < ? ORDER BY finished_at LIMIT ?", (ended_before, int(limit)))]

    def document_names(self, job_id: str) -> list[str]:
        """The names of the job's documents, in archive order."""
        return [n for n, in self._read("SELECT name FROM job_documents WHERE job_id = ? ORDER BY idx", (job_id,))]

    def result_lines(self, job_id: str, batch: int = 500, pages: bool = False):
        """(index, name, outcome, line) of every document in archive order (with `pages`, the HTML report
        fifth), read `batch` rows at a time (a result set of 100,000 reports is never held whole)."""
        return self._lines(job_id, "idx", -1, None, batch, pages)

    def results_since(self, job_id: str, after: int, upto: int, batch: int = 500, pages: bool = False):
        """The same rows for the documents whose results came after the `after`-th up to the `upto`-th, in the
        order they came (`seq`)."""
        return self._lines(job_id, "seq", after, upto, batch, pages)

    def _lines(self, job_id: str, order: str, after: int, upto: int | None, batch: int, pages: bool):
        """The rows of `result_lines` / `results_since`, by `order` (idx or seq) from past `after` (up to `upto`),
        one page of `batch` rows after the other, each page starting past the last one's key."""
        columns = f"{order}, idx, name, outcome, result" + (", page" if pages else "")
        bound = () if upto is None else (int(upto),)
        while upto is None or after < upto:
            rows = self._read(f"SELECT {columns} FROM job_documents WHERE job_id = ? AND {order} > ?"
                              f"{f' AND {order} <= ?' if bound else ''} ORDER BY {order} LIMIT ?",
                              (job_id, int(after), *bound, int(batch)))
            for row in rows:
                yield row[1:]
            if len(rows) < batch:
                return
            after = rows[-1][0]

    def _number(self, cur, job_id: str, first: int, indexes: list[int]) -> None:
        """Number the results of the documents `indexes` from `first` on, in that order (`seq`)."""
        if indexes:
            cur.executemany(self._sql("UPDATE job_documents SET seq = ? WHERE job_id = ? AND idx = ?"),
                            [(first + n, job_id, index) for n, index in enumerate(indexes)])

    def mark_running(self, job_id: str) -> None:
        """A queued job is running from when a worker begins its first document (not from its first recorded
        result, which a small job reaches only at its end: it was `queued` all its run, startedAt = finishedAt)."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE jobs SET state = 'running', started_at = COALESCE(started_at, ?) "
                                  "WHERE id = ? AND state = 'queued'"), (time.time(), job_id))

    # -- the embedded pool: one process works on a job at a time, under a lease ----------------------------------

    def claim_job(self, owner: str, lease_seconds: float) -> str | None:
        """Take an active job nobody holds (or whose holder's lease ran out: a crashed process): one never taken
        first, else the one let go (`release_job`) or left the longest ago, so that jobs take turns."""
        now = time.time()
        with self._tx() as cur:
            cur.execute(self._sql("SELECT id FROM jobs WHERE state IN ('queued', 'running') "
                                  "AND (lease_until IS NULL OR lease_until < ?) "
                                  "ORDER BY COALESCE(lease_until, 0), created_at LIMIT 1"), (now,))
            row = cur.fetchone()
            if row is None:
                return None
            cur.execute(self._sql("UPDATE jobs SET lease_owner = ?, lease_until = ? WHERE id = ?"),
                        (owner, now + lease_seconds, row[0]))
            return row[0]

    def job_waiting(self, job_id: str) -> bool:
        """Whether an active job other than `job_id` has nobody working on it."""
        return bool(self._read("SELECT 1 FROM jobs WHERE state IN ('queued', 'running') AND id <> ? "
                               "AND (lease_until IS NULL OR lease_until < ?) LIMIT 1", (job_id, time.time())))

    def release_job(self, job_id: str, owner: str) -> bool:
        """Let go of a job (its lease ends now, so another process may take it at once); False if `owner` no
        longer held it."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE jobs SET lease_owner = NULL, lease_until = ? WHERE id = ? "
                                  "AND lease_owner = ?"), (time.time(), job_id, owner))
            return cur.rowcount == 1

    def first_open(self, job_id: str, start: int = 0) -> int | None:
        """The index of the first document from `start` on that has no result yet; None if there is none."""
        rows = self._read("SELECT MIN(idx) FROM job_documents WHERE job_id = ? AND idx >= ? AND outcome IS NULL",
                          (job_id, int(start)))
        return None if rows[0][0] is None else int(rows[0][0])

    def renew_lease(self, job_id: str, owner: str, lease_seconds: float) -> bool:
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE jobs SET lease_until = ? WHERE id = ? AND lease_owner = ? "
                                  "AND state IN ('queued', 'running')"), (time.time() + lease_seconds, job_id, owner))
            return cur.rowcount == 1
