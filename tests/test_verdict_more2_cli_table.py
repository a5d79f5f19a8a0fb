"""Issue 37 on the command line: a folder's table names, for each document not judged, the claim it was not judged
on, not the code alone (`RULES-NOT-INSTALLED` stood on every such line, and which rules each document asked for
was left to guess); an invisible character in the claim is shown by its code point, as in the reports."""
from __future__ import annotations

from pipeline.cli import main
from test_verdict_version import XR_CII, XR_UBL, claiming

EDITION_2026 = "urn:cen.eu:en16931:2026"
XRECHNUNG_40 = "urn:cen.eu:en16931:2017#compliant#urn:xeinkauf.de:kosit:xrechnung_4.0"


def test_the_folder_table_names_each_claim_not_judged(tmp_path, capsys):
    documents = {"a-2026.xml": claiming(XR_CII, EDITION_2026), "b-xr40.xml": claiming(XR_UBL, XRECHNUNG_40),
                 "c-nbsp.xml": claiming(XR_UBL, XRECHNUNG_40 + "\u00a0"), "d-ok.xml": XR_UBL.read_bytes()}
    for name, data in documents.items():
        (tmp_path / name).write_bytes(data)
    for language in ("en", "de"):
        assert main(["validate", str(tmp_path), "--jobs", "1", "--lang", language]) == 3
        lines = capsys.readouterr().out.splitlines()
        rows = {line.split()[0].rsplit("/", 1)[-1]: line.split()[1:] for line in lines[1:5]}
        verdict = "INDETERMINATE" if language == "en" else "NICHT"  # (`NICHT BEURTEILBAR`: two words)
        assert rows["a-2026.xml"][0] == verdict and rows["a-2026.xml"][-2:] == ["RULES-NOT-INSTALLED", EDITION_2026]
        assert rows["b-xr40.xml"][-2:] == ["RULES-NOT-INSTALLED", XRECHNUNG_40]
        assert rows["c-nbsp.xml"][-2:] == ["RULES-NOT-INSTALLED", XRECHNUNG_40 + "<U+00A0>"]
        assert rows["d-ok.xml"][:3] == ["VALID" if language == "en" else "GÜLTIG", "xrechnung", "0"]
        assert len(rows["d-ok.xml"]) == 4  # (its warnings counted): nothing after the counts of a valid document
