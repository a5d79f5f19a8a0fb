"""No heading of France's status page is left alone at a page's foot, its content on the next page.

The facts under a status's heading (and under "Reasons and data") were floats, which gave the headings' break-after
no hold: UC1's four statuses of the fixtures' invoice in French put "204 PRISE EN CHARGE · 16/09/2026 10:10" as the
last line of page 1 and its facts on page 2; in English and German the reasons' heading of a 207 or 210 was left so.
Each case below is one that did; the PDF is read back with pdftotext, each page's last line above its footer."""
from __future__ import annotations

import re

import pytest

from conftest import REPO
from pipeline.flows import status_generate, status_read
from test_render_page import pdf_pages

# the headings the page draws in capitals (CSS text-transform), as pdftotext reads them back
SECTION_HEADS = {"fr": ("PARTENAIRES", "MOTIFS ET DONNÉES"), "en": ("PARTIES", "REASONS AND DATA"),
                 "de": ("BETEILIGTE", "BEGRÜNDUNGEN UND ANGABEN")}
# a status's heading: its code, name, " · " and its date-time (16/09/2026 10:10, 2026-09-16 10:10, 16.09.2026 10:10)
STATUS_HEAD = re.compile(r"\d{3} .+ · \S+ \d\d:\d\d")


def _messages(codes: tuple[str, ...]) -> list[tuple[str, bytes]]:
    return [(f"{code}.xml", status_generate.generate_status((REPO / "fixtures" / f"fr-status-{code}.json")
                                                             .read_bytes())[0]) for code in codes]


@pytest.mark.parametrize("lang, codes, validate", [
    ("fr", ("212", "200", "211", "204"), True),
    ("en", ("200", "207", "211", "212"), False),
    ("de", ("200", "204", "207", "210", "211", "212"), False)])
def test_no_page_ends_with_a_heading(lang, codes, validate, tmp_path):
    pdf = status_read.render_status(_messages(codes), lang, validate=validate)
    pages = pdf_pages(pdf, tmp_path)
    assert len(pages) > 1   # the case has page breaks to judge
    for n, page in enumerate(pages, 1):
        lines = [line.strip() for line in page.splitlines() if line.strip()]
        last = lines[-2]   # the line above the running footer
        assert not STATUS_HEAD.match(last) and last not in SECTION_HEADS[lang], (n, last)
