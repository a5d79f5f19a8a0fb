"""An invoice's statuses stated at one and the same second (a platform that reports 202 Reçue and 203 Mise à
disposition together, both messages created in that second) were ordered as uploaded: a ZIP or a file picker that
lists 203 first showed the invoice made available before it was received. They follow the invoice's life (the
status codes' order) whatever the upload's order; the page draws them so."""
from __future__ import annotations

import itertools
import json

from conftest import REPO
from pipeline.flows import status_generate, status_read

SAME_SECOND = "2026-09-15T16:10:00"


def _message(code: str, created: str = SAME_SECOND) -> bytes:
    request = json.loads((REPO / "fixtures" / "fr-status-200.json").read_text(encoding="utf-8"))
    request["message"].update(id=f"F202600042_{code}_20260915161000#380_20260912", name=f"Statut {code}",
                              issueDateTime=created)
    request["status"] = {"code": code, "dateTime": SAME_SECOND}
    xml, _ = status_generate.generate_status(json.dumps(request).encode())
    return xml


def test_statuses_of_one_second_follow_the_invoices_life_whatever_the_upload_order():
    messages = [(f"{code}.xml", _message(code)) for code in ("201", "202", "203")]
    for order in itertools.permutations(messages):
        [invoice] = status_read.timeline(list(order))["invoices"]
        assert [s["status"]["code"] for s in invoice["statuses"]] == ["201", "202", "203"], [n for n, _ in order]


def test_time_still_comes_first():
    """A 202 stated at the same second as the 203 but in a message created later is still placed by time: the
    step only breaks a tie of both date-times."""
    later = _message("202", "2026-09-15T16:11:00")
    [invoice] = status_read.timeline([("202.xml", later), ("203.xml", _message("203"))])["invoices"]
    assert [s["status"]["code"] for s in invoice["statuses"]] == ["203", "202"]


def test_the_page_draws_them_in_that_order():
    html = status_read.render_status([("203.xml", _message("203")), ("202.xml", _message("202"))], "fr",
                                     html=True).decode("utf-8")
    assert html.index("202 – Reçue") < html.index("203 – Mise à disposition")
