"""A French invoice converted is held to France's rules (issue 35, the question the audit left open): convert judges
its source on EN 16931 or its Factur-X profile, but a French platform holds an invoice between parties in France to
the FNFE chain (fr-ctc). Mustang's multi-vendor sample (BT-23 S8, a Factur-X EXTENDED CII valid on that chain)
converted to UBL with allowLoss was a 200 whose only word was "73 values lost": valid EN 16931, yet no valid French
invoice (its line subtypes and line sellers left out: BR-FR-MV-01 / -02 / -06). The answer now says it: the rules
(`target_rules`) and their errors on the converted document (`target_findings`), the FNFE chain's own files run on
their own agreeing. A conversion without losses keeps a French invoice valid there and says so with no finding."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import SHARED
from pipeline.check import packs
from pipeline.cli.golden import FIXTURES
from pipeline.flows.convert import convert
from pipeline.flows.generate_xml import generate_xml
from pipeline.invoice.request_json import with_config
from roundtrip import official
from test_fr_ctc_validate import _official_chain

MULTI_VENDOR = (SHARED / "realworld" / "mustang" / "library" / "cii"
                / "UC11_F202600022_EXTENDED_FX_CII_BT-X-589Only_on_GROUP_Line.xml")
GERMAN = SHARED / "realworld" / "corpus" / "XML-Rechnung" / "CII" / "EN16931_Einfach.cii.xml"


@pytest.fixture(scope="module")
def home():
    return packs.latest_active("fr-ctc").root, packs.latest_active("en16931").root


@pytest.fixture(scope="module")
def to_ubl():
    return convert(MULTI_VENDOR.read_bytes(), "UBL", allow_loss=True)


def test_the_source_is_a_valid_french_invoice(home):
    valid, _, _ = _official_chain(MULTI_VENDOR.read_bytes(), home)
    assert valid


def test_its_ubl_without_the_line_subtypes_says_it_is_no_valid_french_invoice(home, to_ubl):
    assert official.cen(to_ubl.document).valid   # valid EN 16931: the conversion did what it was asked
    lost = {u["xpath"].rsplit("/", 1)[-1] for u in to_ubl.losses}
    assert "ram:LineStatusReasonCode" in lost   # the line subtype (EXT-FR-FE-163) is a named loss
    valid, rules, _ = _official_chain(to_ubl.document, home)
    assert not valid
    said = {f["code"] for f in to_ubl.target_findings}
    assert said == {r for r in rules if r.startswith("BR-FR")}   # what FNFE's own files find, no more, no less
    assert "BR-FR-MV-01_EXT-FR-FE-163" in said
    assert to_ubl.target_rules.startswith("fr-ctc ")
    assert all(f["rules"] == to_ubl.target_rules and f["location"]["line"] for f in to_ubl.target_findings)
    assert to_ubl.summary()["targetFindings"] == to_ubl.target_findings


def test_a_french_invoice_converted_without_losses_is_still_one(home):
    xml, _ = generate_xml(with_config((FIXTURES / "fr-b2b-goods.json").read_bytes(), syntax="CII"), "fr-ctc")
    done = convert(xml, "UBL")
    assert not done.losses and _official_chain(done.document, home)[0]
    assert done.target_rules.startswith("fr-ctc ") and done.target_findings == []


def test_an_invoice_no_french_platform_holds_is_not_checked_there():
    done = convert(GERMAN.read_bytes(), "UBL")
    assert done.target_rules is None and done.summary()["targetFindings"] == []


def test_the_cli_says_it_on_stderr_and_in_its_json(tmp_path, to_ubl):
    out = tmp_path / "out.xml"
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(MULTI_VENDOR), "--to", "ubl",
                          "--allow-loss", "-o", str(out)], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    lines = [line for line in run.stderr.splitlines() if line.startswith("target finding (fr-ctc ")]
    assert len(lines) == len(to_ubl.target_findings)
    assert "no valid French invoice" in lines[0] and "BR-FR-MV-01_EXT-FR-FE-163" in run.stderr
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(MULTI_VENDOR), "--to", "ubl",
                          "--allow-loss", "--json", "-o", str(out)], capture_output=True, text=True, check=False)
    said = json.loads(run.stdout)
    assert said["targetRules"] == to_ubl.target_rules
    assert [f["code"] for f in said["targetFindings"]] == [f["code"] for f in to_ubl.target_findings]
