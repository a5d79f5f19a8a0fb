"""The status page of several invoices gives each invoice pages of its own.

Drawn as one flow, FNFE's six examples (UC1's five statuses of F202500003, UC5's dispute of F202500007) put
F202500007's header and the first line of its facts at the foot of F202500003's third page, the rest on the next,
and that page's running footer already named F202500007. Now each invoice's header starts a page: every page of the
PDF shows one invoice, and its footer names that invoice.
"""
from __future__ import annotations

import re

import falcon.testing
import pytest

from cdar_cases import examples
from pipeline.service.app import create_app
from test_fr_cdar_read import BASE, _files
from test_render_page import pdftotext


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_each_invoice_of_the_page_starts_a_page_of_its_own(client, tmp_path, lang):
    files = [(p.name, p.read_bytes()) for p in examples()]
    numbers = {re.search(r"_(F\d+)_", name).group(1) for name, _ in files}
    assert len(numbers) == 2
    r = _files(client, BASE + "/render", files, {"language": lang})
    assert r.status_code == 200 and r.content.startswith(b"%PDF-")
    pages = [page for page in pdftotext(r.content, tmp_path, "-raw").split("\f") if page.strip()]
    seen = []
    for n, page in enumerate(pages, 1):
        named = {number for number in numbers if number in page}
        assert len(named) == 1, (n, named)
        [number] = named
        footer = page.strip().splitlines()[-1]
        assert footer.startswith(number), (n, footer)
        seen.append(number)
    # the invoices one after the other, each on consecutive pages
    assert len(set(seen)) == 2 and seen == sorted(seen, key=seen.index)
