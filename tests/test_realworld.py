"""Real invoices nobody on this project wrote (../shared/realworld, issue 23): every file through the in-process
flows once (tests/roundtrip/realworld.py; about half a minute), then the issue's targets. bench/realworld.py prints
the same outcomes per folder."""
from __future__ import annotations

import io

import pytest

from conftest import SHARED
from roundtrip.realworld import examine, files

REALWORLD = SHARED / "realworld"


@pytest.fixture(scope="module")
def outcomes():
    found = files(REALWORLD)
    assert len(found) >= 200, f"../shared/realworld holds {len(found)} invoices"
    return [examine(path, REALWORLD) for path in found]


def _share(outcomes, stage: str) -> tuple[float, list[str]]:
    judged = [o for o in outcomes if getattr(o, stage) != "n/a"]
    failed = [f"{o.name}: {getattr(o, stage)} " + " ".join(getattr(o, f"{stage}_diff")[2:6]) for o in judged
              if getattr(o, stage) != "same"]
    return 1 - len(failed) / len(judged), failed


def test_no_server_error(outcomes):
    errors = [f"{o.name}: {e}" for o in outcomes for e in o.server_errors]
    assert not errors, "\n".join(errors)


def test_xml_verdicts_are_the_official_rules(outcomes):
    wrong = [o.name for o in outcomes if o.kind == "xml" and o.agrees is False]
    assert not wrong, wrong


# ---- PDF/A verdicts --------------------------------------------------------------------------------------------

# Valid invoices in PDFs that break PDF/A-3 for real, each with the clause: not checker blind spots.
TRUE_PDFA_VIOLATIONS = {
    # an embedded file (Hotelrechung-Immo.pdf) is in the name tree but in no /AF array: ISO 19005-3 6.8
    "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Reisekostenabrechnung.pdf": {"PDFA:ISO_19005_3:6.8-4"},
}


def test_no_valid_pdf_is_called_invalid_on_a_checker_blind_spot(outcomes):
    wrong = {o.name: set(o.ours_errors) for o in outcomes if o.pdfa_only}
    assert wrong == TRUE_PDFA_VIOLATIONS


CID_FONT_PDF = REALWORLD / "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Gutschrift.pdf"


def test_cid_system_info_with_indirect_strings_is_valid_pdfa():
    """The file's CIDFont /CIDSystemInfo holds /Registry and /Ordering as indirect objects (allowed: ISO 32000-1
    7.3.10); pikepdf's schema check calls that invalid, our check of the clause resolves them."""
    import pikepdf
    from pipeline.flows.validate_pdf import validate_pdf
    data = CID_FONT_PDF.read_bytes()
    with pikepdf.open(io.BytesIO(data)) as pdf:
        infos = [f.DescendantFonts[0].CIDSystemInfo for f in _type0_fonts(pdf)]
        assert infos and all(i.get("/Registry").is_indirect for i in infos)
    report = validate_pdf(data)
    assert report.valid, [i.code for i in report.issues if i.severity == "ERROR"]


def test_cid_system_info_that_is_wrong_stays_a_finding():
    """The same file with /Registry resolving to a number: a real violation of the clause, reported."""
    import pikepdf
    from pipeline.flows.validate_pdf import validate_pdf
    with pikepdf.open(io.BytesIO(CID_FONT_PDF.read_bytes())) as pdf:
        for font in _type0_fonts(pdf):
            font.DescendantFonts[0].CIDSystemInfo.Registry = pdf.make_indirect(7)
        out = io.BytesIO()
        pdf.save(out)
    report = validate_pdf(out.getvalue())
    assert "PDFA:pikepdf:schema-CIDFont" in [i.code for i in report.issues if i.severity == "ERROR"]


def _type0_fonts(pdf):
    return [o for o in pdf.objects if isinstance(o, __import__("pikepdf").Dictionary)
            and o.get("/Type") == "/Font" and o.get("/Subtype") == "/Type0"]


def test_zugferd_1_is_not_an_en16931_invoice():
    from pipeline.flows.validate_pdf import validate_pdf
    report = validate_pdf((REALWORLD / "corpus/ZUGFeRDv1/correct/Intarsys/ZUGFeRD_1p0_COMFORT_Rabatte.pdf").read_bytes())
    assert not report.valid and report.version == "ZUGFeRD 1.0"
    assert "ZUGFERD1_NOT_EN16931" in [i.code for i in report.issues if i.severity == "ERROR"]
