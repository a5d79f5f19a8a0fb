"""Issue 38 walked again on the command line: `pipeline validate` on a French invoice printed its rules as
"fr-ctc 1.4.0.04; en16931 1.3.16; fr-ctc 1.4.0.04" (the French XSD, the CEN rules, then the French Schematron: one
entry per step that ran). A person reads which releases judged it, each once and in the order they first ran, as
the folder table's `rules` cell already shows them; the JSON keeps every step. In German each finding's severity
and class are the German report's words ("FEHLER ... [Geschäftsregel]"), not "ERROR ... [business-rule]" in a
German line; in English they stay the JSON's values. A folder's table with `--lang de` is German too: its head,
verdicts (the German report's), what could not be checked and the sum line; the codes stay."""
from __future__ import annotations

import json

from conftest import CORPUS
from test_platform_helpers import REPO, cli

FRENCH = REPO / "fixtures/golden/fr-b2b-goods.fr-ctc.cii.xml"


def test_the_rules_line_names_each_release_once(tmp_path):
    french = tmp_path / "facture-sans-pmd.xml"
    french.write_bytes(FRENCH.read_bytes().replace(b"<ram:SubjectCode>PMD</ram:SubjectCode>",
                                                   b"<ram:SubjectCode>AAI</ram:SubjectCode>"))
    steps = json.loads(cli({}, "validate", str(french), "--json").stdout)["rules"]
    releases = [f"{r['pack']} {r['version']}" for r in steps]
    assert len(releases) > len(set(releases)), releases  # the French chain runs fr-ctc twice: the case itself
    run = cli({}, "validate", str(french))
    assert run.returncode == 1, run.stdout + run.stderr
    line = next(x for x in run.stdout.splitlines() if x.startswith("  rules: "))
    assert line == "  rules: " + "; ".join(dict.fromkeys(releases)), line
    finding = next(x for x in run.stdout.splitlines() if "BR-FR-05" in x)
    assert finding.startswith("  ERROR   BR-FR-05") and "[business-rule] line " in finding, finding
    german = cli({}, "validate", str(french), "--lang", "de").stdout
    assert german.count("fr-ctc 1.4.0.04") == 2  # the first line names what judged it, the rules line once
    befund = next(x for x in german.splitlines() if "BR-FR-05" in x)
    assert befund.startswith("  FEHLER  BR-FR-05") and "[Geschäftsregel] Zeile " in befund, befund
    assert "ERROR" not in german and "business-rule" not in german, german


def test_a_folders_table_in_german(tmp_path):
    folder = tmp_path / "eingang"
    folder.mkdir()
    valid = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
    (folder / "gut.xml").write_bytes(valid.read_bytes())
    (folder / "falsch.xml").write_bytes(valid.read_bytes().replace(b"<ram:DuePayableAmount>336.9<",
                                                                   b"<ram:DuePayableAmount>300.00<"))
    (folder / "kaputt.zip").write_bytes(b"PK\x03\x04 not an archive")
    (folder / "hallo.eml").write_text("From: a@example.de\nTo: b@example.de\nSubject: Hallo\n\nnur Text\n")
    english = cli({}, "validate", str(folder))
    german = cli({}, "validate", str(folder), "--lang", "de")
    assert english.returncode == german.returncode == 2, german.stdout + german.stderr  # the ZIP: not validated
    rows = {line.split()[0]: line for line in german.stdout.splitlines()[1:] if line.strip()}
    assert german.stdout.splitlines()[0].split()[:6] == ["Dokument", "Ergebnis", "Regeln", "Fehler", "Warnungen",
                                                         "erster"]
    assert rows["gut.xml"].split()[1:3] == ["GÜLTIG", "xrechnung"]
    assert rows["falsch.xml"].split()[1:3] == ["UNGÜLTIG", "xrechnung"] and rows["falsch.xml"].endswith("BR-CO-16")
    assert "NICHT GEPRÜFT" in rows["kaputt.zip"] and "HINWEIS" in next(v for k, v in rows.items() if "hallo" in k)
    assert german.stdout.rstrip().endswith("3 Dokumente: 1 gültig, 1 ungültig, 0 nicht beurteilbar, 1 nicht prüfbar, "
                                           "1 Nachricht ohne Rechnung"), german.stdout
    # the English table as it was, row for row in the same order
    assert english.stdout.rstrip().endswith("3 documents: 1 valid, 1 invalid, 0 indeterminate, 1 could not be "
                                            "validated, 1 message without an invoice"), english.stdout
    english_rows = {line.split()[0]: line for line in english.stdout.splitlines()[1:] if line.strip()}
    assert list(english_rows)[:4] == list(rows)[:4]
    assert english_rows["gut.xml"].split()[1] == "VALID" and english_rows["falsch.xml"].split()[1] == "INVALID"
    assert english_rows["kaputt.zip"].split()[1] == "ERROR"
