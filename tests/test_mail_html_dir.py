"""`pipeline validate --html-dir`: a report file for every document, where two of them share a name. A message with
two attachments named alike (an invoice and its credit note, both "Rechnung.xml") gave two results of one name, and
the second report was written over the first: the first file is named as before, the second gets its place among
the results in front (as a job's results ZIP names it)."""
from __future__ import annotations

import json

from conftest import CORPUS
from mailbuild import message
from pipeline.cli import main

UBL = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_ubl.xml").read_bytes()
CII = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()


def test_two_attachments_of_one_name_get_a_report_each(tmp_path, capsys):
    mail = tmp_path / "m.eml"
    mail.write_bytes(message(1, [("Rechnung.xml", UBL), ("Rechnung.xml", CII)]).as_bytes())
    out = tmp_path / "out"
    assert main(["validate", str(mail), "--spec", "xrechnung", "--json", "--jobs", "1", "--html-dir", str(out)]) == 0
    first, second = (e["name"] for e in json.loads(capsys.readouterr().out)["results"])
    assert second == first[:-len(".xml")] + " (2).xml"  # two rows told apart (they were the same name twice)
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 2 and written[0].endswith("_Rechnung (2).xml.html") \
        and written[1].endswith("_Rechnung.xml.html")
    pages = [(out / name).read_text() for name in written]
    assert pages[0] != pages[1]  # the UBL's report and the CII's, not one written twice
