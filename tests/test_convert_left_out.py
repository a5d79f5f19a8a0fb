"""What allowLoss leaves out as a receiver's job reads it, and a gross price (BT-148) below the net price, with no
discount stated, going to UBL (found by `bench/conversions.py --targets` on a real Mustang invoice): UBL binds the
gross price in a price allowance that needs an amount, and the conversion wrote gross - net = -1 there, a negative
discount made up to stand for the price charge that the same answer named as left out. Now the gross price is a named
loss of its own (business term, source node, why, in German too): refused without allowLoss, left out with it, and
the line keeps its net price.

A convert job with allowLoss answered INTERNAL_ERROR (and `pipeline convert --allow-loss --json` a traceback) for
every source whose left-out values include an amount (sub-lines, a line hierarchy, third-party payments): the loss
entries held Decimals, which the JSON of the job's line could not write. They hold the value's digits now. A refusal
naming a rejected amount (PEPPOL-EN16931-R120 on a real PDF going to Peppol UBL) stalled the whole job: the job's
error line could not be written either (pipeline/flows/job_document.py: its `dumps`)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from decimal import Decimal

import pytest
from lxml import etree

from conftest import CORPUS, REPO, SHARED
from pipeline.errors import ApiError
from pipeline.flows import job_document
from pipeline.flows.convert import convert
from pipeline.service.resources.reading import conversion_headers
from roundtrip import official
from roundtrip.reader import flatten, read_terms

# Factur-X EXTENDED, line 3: gross 3.0000 with a price charge of 1.0000 (BT-X-302), net 4.0000
CHARGED = SHARED / "realworld/corpus/ZUGFeRDv2/correct/Mustangproject/testout-ZF2PushItemChargesAllowances.xml"
EINFACH = SHARED / "realworld/corpus/XML-Rechnung/CII/EN16931_Einfach.cii.xml"
GROSS_PRICES = SHARED / "realworld/corpus/XML-Rechnung/FX/EN16931_Kraftfahrversicherung_Bruttopreise.pdf"
GROSS = "/ram:SpecifiedLineTradeAgreement/ram:GrossPriceProductTradePrice/ram:ChargeAmount"


def _gross_entries(errors) -> list:
    return [e for e in errors if e.businessTerm == "BT-148"]


def test_a_gross_price_below_the_net_price_refuses_naming_it():
    with pytest.raises(ApiError) as refused:
        convert(CHARGED.read_bytes(), "UBL")
    assert refused.value.error_code == "CONVERSION_LOSS"
    [entry] = _gross_entries(refused.value.errors)
    assert f"IncludedSupplyChainTradeLineItem[3]{GROSS} (line 105) = '3.0000'" in entry.message
    assert "below zero" in entry.message and "PEPPOL-EN16931-R044" in entry.message
    assert "Bruttopreis" in entry.messageDe and "(Zeile 105)" in entry.messageDe


def test_allow_loss_writes_the_net_price_alone_and_no_negative_discount():
    source = CHARGED.read_bytes()
    done = convert(source, "UBL", allow_loss=True)
    gross = [u for u in done.losses if u.get("businessTerm") == "BT-148"]
    assert [(u["xpath"].endswith(f"IncludedSupplyChainTradeLineItem[3]{GROSS}"), str(u["value"])) for u in gross] == [
        (True, "3.0000")]
    assert gross[0]["reasonDe"].startswith("UBL trägt den Bruttopreis")
    assert "BT-147" not in {c["businessTerm"] for c in done.changed}   # nothing derived: no line needs it
    amounts = etree.fromstring(done.document).xpath("//*[local-name()='Price']/*[local-name()='AllowanceCharge']"
                                                    "/*[local-name()='Amount']/text()")
    assert amounts and all(Decimal(a) >= 0 for a in amounts), amounts
    assert official.cen(done.document).valid
    source_terms, target = flatten(read_terms(source).terms), flatten(read_terms(done.document).terms)
    assert Decimal(target["invoiceLines[2].priceDetails.netPrice"]) == 4
    assert not any(k.startswith("invoiceLines[2].priceDetails.") and k.endswith(("grossPrice", "priceDiscount"))
                   for k in target)
    for line in (0, 1, 3):   # the lines whose gross price a stated discount explains keep it
        key = f"invoiceLines[{line}].priceDetails.grossPrice"
        assert Decimal(target[key]) == Decimal(source_terms[key])
    headers = conversion_headers(done)
    assert int(headers["X-Conversion-Losses"]) == len(done.losses)
    assert [p for p in headers["X-Conversion-Lost"].split("; ") if p.endswith(GROSS)] == [gross[0]["xpath"]]


def _gross_below_net(data: bytes) -> bytes:
    """EN16931_Einfach with its first line's gross price lowered below the net price (no discount stated): valid
    EN 16931 CII (no CII rule relates the two)."""
    tree = etree.fromstring(data)
    line = tree.find(".//{*}IncludedSupplyChainTradeLineItem")
    net = Decimal(line.find(".//{*}NetPriceProductTradePrice/{*}ChargeAmount").text)
    gross = line.find(".//{*}GrossPriceProductTradePrice")
    for charge in gross.findall("{*}AppliedTradeAllowanceCharge"):
        gross.remove(charge)
    gross.find("{*}ChargeAmount").text = str(net - 1)
    return etree.tostring(tree, xml_declaration=True, encoding="UTF-8")


def test_a_stated_gross_price_below_the_net_price_is_a_loss_in_ubl_and_kept_in_cii():
    data = _gross_below_net(EINFACH.read_bytes())
    assert official.cen(data).valid
    with pytest.raises(ApiError) as refused:
        convert(data, "UBL")
    assert [re.search(r"ram:ChargeAmount \(line \d+\) = '([^']*)'", e.message).group(1)
            for e in _gross_entries(refused.value.errors)] == ["8.9000"]   # net 9.9000 - 1
    assert len(refused.value.errors) == 1
    kept = convert(data, "CII")   # CII carries the gross price as stated
    assert kept.losses == [] and b"GrossPriceProductTradePrice" in kept.document


@pytest.mark.parametrize("source, options", [
    (CHARGED, {"to": "UBL"}),
    (SHARED / "realworld/mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml", {"to": "UBL"}),
    (CORPUS / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml", {"to": "CII", "spec": "en16931"}),
    (CORPUS / "xrechnung-schematron-tests/ubl-inv/ubl-inv-br-dex-11-test.xml", {"to": "CII", "spec": "en16931"}),
], ids=["gross-price", "line-hierarchy", "sub-lines", "third-party-payments"])
def test_a_convert_jobs_line_names_left_out_amounts_as_the_source_writes_them(source, options):
    data = source.read_bytes()
    kind, line, _ = job_document.run("convert", {**options, "allowLoss": True}, source.name, data)
    entry = json.loads(line)
    assert kind == "valid" and "error" not in entry, entry.get("error")
    lost = entry["conversion"]["lost"]
    amounts = [u for u in lost if re.fullmatch(r"-?\d+\.\d+", str(u["value"]))]
    assert amounts, lost
    lines = data.decode().splitlines()
    for u in amounts:   # the digits as the source states them at the line named (an element may span two)
        assert isinstance(u["value"], str) and f">{u['value']}<" in "".join(lines[u["line"] - 1:u["line"] + 1]), u


def test_the_command_line_prints_them_in_its_json(tmp_path):
    out = tmp_path / "out.xml"
    run = subprocess.run([sys.executable, "-m", "pipeline", "convert", str(CHARGED), "--to", "ubl", "--allow-loss",
                          "--json", "-o", str(out)], capture_output=True, cwd=REPO, timeout=300)
    assert run.returncode == 0, run.stderr.decode()[-2000:]
    said = json.loads(run.stdout)
    assert [u["value"] for u in said["lost"] if u["businessTerm"] == "BT-148"] == ["3.0000"]
    assert official.cen(out.read_bytes()).valid


def test_a_convert_jobs_refusal_naming_an_amount_is_its_error_line():
    """The Peppol rules refuse the line amounts the PDF's gross prices make (PEPPOL-EN16931-R120): the job's line
    is the endpoint's error, each rejected amount the number as the endpoint writes it (it raised, and the job
    stayed "running" at that document)."""
    kind, line, _ = job_document.run("convert", {"to": "UBL", "spec": "peppol"}, GROSS_PRICES.name,
                                     GROSS_PRICES.read_bytes())
    entry = json.loads(line)
    assert kind == "error" and entry["error"]["code"] == "VALIDATION_FAILED"
    assert [e["rejectedValue"] for e in entry["error"]["errors"] if e["code"] == "PEPPOL-EN16931-R120"] == [80, 140]
    assert '"rejectedValue": 80.00' in line and all(e["messageDe"] for e in entry["error"]["errors"])
