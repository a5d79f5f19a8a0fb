"""An invoice's timeline orders its statuses by time whatever form each message writes its date-times in.

The XSD takes any `format` on udt:DateTimeString and FNFE's rules check none: a status date-time (MDT-78) of format
203 (YYYYMMDDHHMM), a date of format 102 or ISO text without format is valid on the official chain. The reading
passes such a value on as written (ISO only from format 204 and 102), and the timeline sorted the texts: FNFE's UC1
with its 202 (Reçue, 16:10 on 1 July) written in format 203 put it last, after 212 of 2 August."""
from __future__ import annotations

import pytest

from cdar_cases import NS, examples, mutated, official_chain
from pipeline.flows import status_read

UC1 = [p for p in examples() if p.name.startswith("UC1_")]   # 200, 202, 204, 211, 212 of one invoice
ORDER = ["200", "202", "204", "211", "212"]


def _status_time(form: str, value):
    def edit(tree):
        [node] = tree.xpath("//rsm:AcknowledgementDocument/ram:IssueDateTime/udt:DateTimeString", namespaces=NS)
        node.text = value(node.text)
        if form:
            node.set("format", form)
        else:
            del node.attrib["format"]
    return edit


FORMS = {
    "203": _status_time("203", lambda text: text[:12]),
    "102": _status_time("102", lambda text: text[:8]),
    "none-iso": _status_time("", lambda t: f"{t[:4]}-{t[4:6]}-{t[6:8]}T{t[8:10]}:{t[10:12]}:{t[12:14]}"),
}


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("changed", ["202", "212"])
def test_a_status_time_in_another_form_the_rules_accept_keeps_its_place(form, changed):
    files = []
    for path in reversed(UC1):   # sent in reverse
        code = path.name.split("-CDV-")[1][:3]
        data = mutated(FORMS[form], code) if code == changed else path.read_bytes()
        if code == changed:
            assert official_chain(data)[0], "the official chain takes the form"
        files.append((path.name, data))
    [invoice] = status_read.timeline(files)["invoices"]
    assert [s["status"]["code"] for s in invoice["statuses"]] == ORDER
