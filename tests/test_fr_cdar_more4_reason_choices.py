"""A status that needs a reason (BR-FR-CDV-15: 206, 207, 208, 210, 213, 501) sent without one got a 400 saying only
that a reason is required: the user had to look up BR-FR-CDV-CL-09 to learn which codes the status takes. The entry
now names them, the State platform's own list for its refusals; each code it names is one the official chain then
takes for that status."""
from __future__ import annotations

import pytest

from cdar_cases import official_chain
from pipeline.invoice import cdar
from test_fr_cdar_every_status import request_for
from test_fr_cdar_generate import _generate, _refusal


def _missing_reason_entry(request: dict):
    request["status"].pop("details", None)
    [entry] = [e for e in _refusal(request).errors if e.field == "status.details[0].reasonCode"]
    assert (entry.businessTerm, entry.code) == ("MDT-113", "REQUIRED")
    return entry


@pytest.mark.parametrize("status", cdar.REASON_REQUIRED)
def test_the_400_names_the_reasons_the_status_takes(status):
    entry = _missing_reason_entry(request_for(status, False))
    listed = entry.message.split(": one of ", 1)[1].split(", ")
    assert listed == list(cdar.REASONS_OF[status])
    assert "BR-FR-CDV-15" in entry.message


@pytest.mark.parametrize("status", ["207", "213"])
def test_a_named_reason_is_taken_by_the_official_chain(status):
    """The first and the last code the entry names, sent, give a message FNFE's chain finds valid."""
    request = request_for(status, False)
    listed = _missing_reason_entry(request_for(status, False)).message.split(": one of ", 1)[1].split(", ")
    for reason in (listed[0], listed[-1]):
        request["status"]["details"] = [{"reasonCode": reason}]
        assert official_chain(_generate(request))[0], reason


def test_a_refusal_by_the_state_s_platform_names_its_own_list():
    request = request_for("210", False)
    request["message"]["sender"].update(id="9999", idScheme="0238")
    entry = _missing_reason_entry(request)
    assert entry.message.split(": one of ", 1)[1].split(", ") == list(cdar.B2G_REFUSAL_REASONS)


def test_a_status_without_a_required_reason_is_generated_without_one():
    request = request_for("204", False)
    request["status"].pop("details", None)
    assert official_chain(_generate(request))[0]
