"""`pipeline convert --lang de` for a German user (issue 38): the notes on stderr (`source finding`, `changed`,
`not carried`, technical values) were English although the conversion carries their German (`reasonDe`,
`messageDe`); now every line is German but the codes, business terms, paths, values and official rule texts, and
English stays as it was. And `-o` into a folder that does not exist: the conversion ran, printed its `changed:` notes
as if done and only then failed writing (`pipeline parse` read every document first and said it in English); now
it is refused before the work, saying what is wrong (exit 2)."""
from __future__ import annotations

import re

from conftest import CORPUS, SHARED
from test_cli_people import ENGLISH, _words
from test_platform_helpers import cli

# valid but for its own PDF/A fault (a source finding with our German), gross prices (BT-147 changed going to UBL)
# and a second buyer id UBL has no place for (not carried, with --allow-loss)
PDF = SHARED / "realworld/corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Reisekostenabrechnung.pdf"
PEPPOL_LABELLED = SHARED / "realworld/corpus/XML-Rechnung/UBL/EN16931_Einfach.ubl.xml"  # BT-24 changed, findings
CARD = CORPUS / "xrechnung-testsuite/business-cases/standard/03.03a-INVOICE_ubl.xml"  # cbc:NetworkID: technical
TAX_CURRENCY = CORPUS / "en16931-cen/ubl/examples/sample-discount-price.xml"  # BT-6 -> (not written)

# words of the convert notes' English that a German line must not carry
CONVERT_ENGLISH = ENGLISH | {"source", "finding", "applied", "target", "changed", "carried", "technical", "place",
                             "line", "lines", "written", "gross", "net", "price", "carries", "own", "checks",
                             "judged", "rules", "names", "which", "needs", "amount", "folder", "does", "exist",
                             "currency", "equals", "invoice", "embedded", "associated", "array", "lists"}


def _german_words(stderr: str) -> set[str]:
    """The words of `stderr` without the source's values (`= '...'`) and the official rules' texts, which are
    published in English (`CODE: [CODE]-text`)."""
    text = re.sub(r" = '[^']*'", " ", stderr)
    text = re.sub(r": \[[^\]]+\]-.*", " ", text)
    return _words(text)


def test_every_note_of_a_german_conversion_is_german(tmp_path):
    runs = [(PDF, "ubl", ["--allow-loss"]), (PEPPOL_LABELLED, "cii", ["--spec", "en16931"]), (CARD, "cii", []),
            (TAX_CURRENCY, "cii", [])]
    said = ""
    for n, (source, to, options) in enumerate(runs):
        run = cli({}, "convert", str(source), "--to", to, *options, "--lang", "de", "-o", str(tmp_path / f"{n}.xml"))
        assert run.returncode == 0 and (tmp_path / f"{n}.xml").stat().st_size > 0, run.stderr
        said += run.stderr
    lines = said.splitlines()
    assert ("Befund der Quelle (die eigenen Prüfungen des PDFs (PDF/A-3, XMP), nicht auf das Ziel angewandt): "
            "PDFA:ISO_19005_3:6.8-4: ") in said, said
    assert "geändert: BT-147 (nicht in der Quelle) -> Bruttopreis - Nettopreis (UBL trägt den Bruttopreis" in said
    assert any(line.startswith("nicht übernommen: /rsm:CrossIndustryInvoice/") and "(Zeile 211) = 'GE2020211'" in line
               for line in lines), said
    assert any(line.startswith("Befund der Quelle (peppol ") and "PEPPOL-EN16931-R010" in line for line in lines)
    assert "geändert: BT-24 urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:billing:3.0 -> " \
           "urn:cen.eu:en16931:2017 (das umgewandelte Dokument wurde nach den Regeln en16931 geprüft" in said, said
    assert "technisch, im Ziel ohne Platz: /Invoice/cac:PaymentMeans/cac:CardAccount/cbc:NetworkID (Zeile " in said
    assert "geändert: BT-6 EUR -> (nicht geschrieben) (die Umsatzsteuer-Abrechnungswährung" in said, said
    assert not _german_words(said) & CONVERT_ENGLISH, sorted(_german_words(said) & CONVERT_ENGLISH)


def test_english_stays_as_it_was(tmp_path):
    run = cli({}, "convert", str(PDF), "--to", "ubl", "--allow-loss", "-o", str(tmp_path / "out.xml"))
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[:2] == [
        "source finding (the PDF's own checks (PDF/A-3, XMP), not applied to the target): PDFA:ISO_19005_3:6.8-4: "
        "the embedded file is not an associated file: no /AF array lists its file specification",
        "changed: BT-147 (not in the source) -> gross price - net price (UBL carries the gross price (BT-148) in a "
        "price allowance that needs its amount; lines 1, 2, 3, 4)"], run.stderr
    assert "not carried: /rsm:CrossIndustryInvoice/" in run.stderr and "(line 211) = 'GE2020211'" in run.stderr


def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path):
    """Nothing converted, no note, one line saying what is wrong, exit 2; in German in German."""
    missing = tmp_path / "no/such/dir/out.xml"
    run = cli({}, "convert", str(TAX_CURRENCY), "--to", "ubl", "-o", str(missing))
    assert (run.returncode, run.stdout) == (2, ""), run.stderr
    assert run.stderr == f"pipeline convert: {missing}: its folder {missing.parent} does not exist\n"
    run = cli({}, "convert", str(TAX_CURRENCY), "--to", "ubl", "--lang", "de", "-o", str(missing))
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"pipeline convert: {missing}: der Ordner {missing.parent} existiert nicht\n"
    assert not (tmp_path / "no").exists()
    # several documents go into a folder: a file in its place is refused before any is converted
    taken = tmp_path / "taken"
    taken.write_text("-")
    run = cli({}, "convert", str(TAX_CURRENCY), str(CARD), "--to", "cii", "--lang", "de", "-o", str(taken))
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"pipeline convert: {taken}: ist eine Datei, kein Ordner\n", run.stderr
    assert taken.read_text() == "-"
    # parse reads before it writes too: refused before the reading, in its --lang
    run = cli({}, "parse", str(TAX_CURRENCY), "--lang", "de", "-o", str(missing))
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == f"pipeline parse: {missing}: der Ordner {missing.parent} existiert nicht\n", run.stderr
    # a folder that exists takes the one document, as before
    run = cli({}, "convert", str(TAX_CURRENCY), "--to", "cii", "-o", str(tmp_path))
    assert run.returncode == 0 and (tmp_path / "sample-discount-price.xml").is_file(), run.stderr
