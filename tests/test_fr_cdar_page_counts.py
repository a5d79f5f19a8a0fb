"""The verdict beside each status on France's status page counts its errors and warnings in the page's language as
that language counts ("0 erreur, 2 avertissements": French takes the singular below two, English and German for
one), the timeline's receipt column has a short head, the MDT-95 name the examples give (a sentence) in its title,
and an amount or a rate keeps its unit on its line ("20,00 %", not "%" alone below it)."""
from __future__ import annotations

import copy
import html
import re
from pathlib import Path

import pytest

from pipeline.flows import status_generate, status_read
from pipeline.invoice import cdar_terms
from pipeline.invoice.request_json import dump_request, load_request

REPO = Path(__file__).resolve().parents[1]


def _messages() -> list[tuple[str, bytes]]:
    """Two statuses of one invoice: a 204 the chain finds nothing in, and a status code outside BR-FR-CDV-CL-06's
    list (a warning of each of FNFE's two stylesheets)."""
    base = load_request((REPO / "fixtures" / "fr-status-204.json").read_bytes())
    other = copy.deepcopy(base)
    other["message"].update(id=base["message"]["id"] + "-299", issueDateTime="2026-09-20T10:05:00")
    other["message"].pop("name", None)
    other["status"].update(code="299", name="Statut convenu", typeCode="23", dateTime="2026-09-20T10:00:00")
    return [(f"{n}.xml", status_generate.generate_status(dump_request(r))[0]) for n, r in (("a", base), ("b", other))]


@pytest.mark.parametrize("lang, nothing, two", [
    ("fr", "Valide · 0 erreur, 0 avertissement", "Valide · 0 erreur, 2 avertissements"),
    ("en", "Valid · 0 errors, 0 warnings", "Valid · 0 errors, 2 warnings"),
    ("de", "Gültig · 0 Fehler, 0 Warnungen", "Gültig · 0 Fehler, 2 Warnungen")])
def test_the_verdict_counts_as_its_language_does(lang, nothing, two):
    html = status_read.render_status(_messages(), language=lang, html=True, validate=True).decode()
    badges = set(re.findall(r'<span class="badge[^"]*">([^<]*)</span>', html))
    assert badges == {nothing, two}


def test_the_receipt_column_has_a_short_head_and_the_term_s_name_in_its_title():
    html = status_read.render_status(_messages(), language="fr", html=True).decode()
    name = cdar_terms.BY_PATH["invoice.receiptDateTime"].fr
    [head] = re.findall(r"<th title=\"([^\"]*)\">Date-heure de réception ", html)
    assert head.replace("&#39;", "'").replace("&apos;", "'") == name


@pytest.mark.parametrize("lang", ["fr", "en", "de"])
def test_a_number_and_its_unit_are_not_parted(lang):
    """The 212's amounts received per VAT rate, in the timeline and in the message's table: no space a line may
    break at between a number and its currency or percent sign."""
    xml = status_generate.generate_status((REPO / "fixtures" / "fr-status-212.json").read_bytes())[0]
    first = load_request((REPO / "fixtures" / "fr-status-204.json").read_bytes())
    page = status_read.render_status([("a.xml", status_generate.generate_status(dump_request(first))[0]),
                                      ("b.xml", xml)], language=lang, html=True).decode()
    body = html.unescape(page.split("<body", 1)[1])   # the painted page, not its style sheet
    assert len(re.findall(r"\d\u00a0%", body)) == 4 and len(re.findall(r"\d\u00a0EUR", body)) == 4
    assert not re.search(r"\d %|\d EUR", body)
