"""Every status code of FNFE's list (BR-FR-CDV-CL-06: 200 ... 228, 250 ... 601) and one outside it, each with only
what the rules require and with every optional field (a detail's own status MDT-115/116 among them): generated,
valid on FNFE's chain run on its own, read back to the same business content and written again to the same message.
The six fixtures cover six statuses; a code such as 206 (a reason of its own list), 221 (a platform's, with
ROUTAGE_ERR) or 501 (no invoice date nor seller) is only exercised here."""
from __future__ import annotations

import copy

import pytest

from cdar_cases import official_chain
from conftest import REPO
from pipeline.flows import status_generate, status_read
from pipeline.invoice import cdar
from pipeline.invoice.request_json import dump_request, load_request

BASE = load_request((REPO / "fixtures" / "fr-status-207.json").read_bytes())
CODES = [*cdar.STATUS_CODES, "999"]


def request_for(code: str, full: bool) -> dict:
    """A request for `code` from the 207 fixture: the parties of its phase, a reason where the status takes one, the
    amounts received of a 212; `full`: every optional field too."""
    r = copy.deepcopy(BASE)
    phase = cdar.TRANSMISSION if code in cdar.TRANSMISSION_STATUSES else \
        cdar.PROCESSING if code in cdar.PROCESSING_STATUSES else None
    r["status"] = {"code": code, "dateTime": "2026-09-18T14:30:00"}
    if phase is None:   # a code of no phase here: its phase and name are the sender's to give
        r["status"].update(typeCode=cdar.PROCESSING, name=f"Statut {code}")
    if phase == cdar.TRANSMISSION:
        r["message"].update(sender={"role": "WK"}, issuer={"role": "WK"})
    detail = {}
    reasons = cdar.REASONS_OF.get(code, ("AUTRE",))
    if code in cdar.REASON_REQUIRED or full:
        detail["reasonCode"] = reasons[0]
    if full:
        # the detail's own status (MDT-115, MDT-116): the message's, so that the same reason list judges it
        detail.update(statusCode=code, statusName=cdar.status_name(code) or f"Statut {code}")
        detail.update(reason="Motif", actionCode="NOA", action="Aucune", note="Une note", characteristics=[
            {"typeCode": "MEN" if code == cdar.PAYMENT_RECEIVED else "DIV", "amount": 1200.5, "currencyCode": "EUR",
             "percent": 20, "id": "BT-152", "name": "Taux", "location": "/x", "changed": True, "date": "2026-09-10"}])
        if code in cdar.DOCUMENT_STATUS_OF:
            r["status"]["documentStatusCode"] = cdar.DOCUMENT_STATUS_OF[code]
    else:
        r["message"].pop("name")
        for field in ("receiptDateTime", "buyerSiren"):
            r["invoice"].pop(field)
        for party in r["message"]["recipients"]:
            party.pop("name", None)
        if code == cdar.NOT_RECEIVABLE:   # Irrecevable: no invoice date nor seller (BR-FR-CDV-11, -13)
            r["invoice"].pop("issueDate")
            r["invoice"].pop("sellerSiren")
    if code == cdar.PAYMENT_RECEIVED:
        detail.setdefault("characteristics", [{"typeCode": "MEN", "amount": 1000, "percent": 20}])
    if detail:
        r["status"]["details"] = [detail]
    return r


def _contains(sent, read, path="") -> list[str]:
    """The paths where what was read lacks or differs from what was sent (read may add derived values)."""
    if isinstance(sent, dict):
        return [p for k, v in sent.items() for p in (_contains(v, read[k], f"{path}.{k}") if k in read
                                                      else [f"{path}.{k} lost"])]
    if isinstance(sent, list):
        return ([f"{path} length"] if len(sent) != len(read) else []) + \
            [p for n, (a, b) in enumerate(zip(sent, read)) for p in _contains(a, b, f"{path}[{n}]")]
    return [] if sent == read else [f"{path}: {sent!r} != {read!r}"]


@pytest.mark.parametrize("full", [False, True], ids=["required", "every-field"])
@pytest.mark.parametrize("code", CODES)
def test_every_status_code_generates_a_valid_message_read_back_the_same(code, full):
    request = request_for(code, full)
    xml, report = status_generate.generate_status(dump_request(request))
    valid, rules, xsd_valid, _ = official_chain(xml)
    assert valid and xsd_valid, rules
    # FNFE leaves the list a warning (codes agreed between the parties): a code outside it is sent with it
    # ... and so is a detail's own code outside it (MDT-115)
    outside = {"BR-FR-CDV-CL-06_MDT-105", *(["BR-FR-CDV-CL-06_MDT-115"] if full else [])}
    assert set(rules) == (outside if code not in cdar.STATUS_CODES else set())
    assert report.warnings == sum(rules.values())
    found = status_read.parse_status(xml)
    assert found["complete"] and found["unmapped"] == [], found
    assert _contains(request, found) == []
    again = {key: found[key] for key in ("message", "status", "invoice")}
    assert status_generate.generate_status(dump_request(again))[0] == xml
