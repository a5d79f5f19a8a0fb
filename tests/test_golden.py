"""Golden outputs: every fixture x spec x syntax, generated and validated, equals its reviewed file.

On a difference the failure shows a unified diff; `pipeline golden --update` rewrites the files on purpose.
Also checks that the fixtures cover what they must (every field of service spec section 2 and the
extensions, every VAT category, each payment means, credit notes).
"""
from __future__ import annotations

import pytest

from pipeline.invoice import terms
from pipeline.cli.golden import GOLDEN, cases, diff, invoice_fixtures
from pipeline.invoice.request_json import load_request

CASES = cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden(case):
    actual = case.render()
    assert case.golden.exists(), f"no golden file {case.golden.name}; review the output and run: pipeline golden --update"
    expected = case.golden.read_bytes()
    if actual != expected:
        pytest.fail(f"{case.id} differs from its golden file (pipeline golden --update rewrites it):\n"
                    + diff(expected, actual, case.id), pytrace=False)


def test_no_stale_golden_files():
    expected = {c.golden.name for c in CASES}
    stale = sorted(p.name for p in GOLDEN.glob("*.xml") if p.name not in expected)
    assert not stale, f"golden files without a fixture: {stale}"


def _fixtures() -> list[dict]:
    return [load_request(p.read_bytes()) for p in invoice_fixtures()]


def _paths(value, path="") -> set[str]:
    """Field path patterns (`[]` for items) present in a request."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            p = f"{path}.{k}" if path else k
            out.add(p)
            out |= _paths(v, p)
    elif isinstance(value, list):
        out.add(f"{path}[]")
        for v in value:
            out |= _paths(v, f"{path}[]")
    return out


def test_fixtures_cover_every_field():
    present = set().union(*(_paths(f) for f in _fixtures()))
    fields = {t.json_path for t in terms.TERMS if t.json_path.startswith("invoice.")}
    # computed-only elements of the canonical XML, not request fields
    request_only = {"invoice.documentTotals.taxTotalAmount", "invoice.invoiceLines[].priceDetails.priceDiscount"}
    # several preceding invoices exist in UBL only, and every fixture is generated in CII too: they are covered by
    # tests/data/request-several-preceding-invoices.json (tests/test_repeated_terms.py)
    ubl_only = {f for f in fields if f.startswith("invoice.additionalPrecedingInvoiceReferences[]")}
    # so is every field of a sub-invoice line (a line's fields again; fixtures/xrechnung-extension.json shows the
    # group, tests/test_extension.py generates the official cases' sub-lines)
    ubl_only |= {f for f in fields if f.startswith("invoice.invoiceLines[].subInvoiceLines[]")}
    # Factur-X EXTENDED's line hierarchy belongs to a CII that says EXTENDED, which no fixture is (every fixture is
    # generated in UBL too): tests/test_realworld.py regenerates Mustang's EXTENDED example with it
    extended = {"invoice.invoiceLines[].parentLineIdentifier", "invoice.invoiceLines[].lineStatusReasonCode"}
    missing = sorted(fields - present - request_only - ubl_only - extended)
    assert not missing, f"fields no fixture carries: {missing}"


def test_fixtures_cover_categories_payments_and_document_types():
    fixtures = _fixtures()
    categories = {line["lineVatInformation"]["vatCategoryCode"]
                  for f in fixtures for line in f["invoice"]["invoiceLines"]}
    assert categories >= {"S", "Z", "E", "AE", "K", "G", "O", "L", "M"}
    assert {f["invoice"]["paymentInstructions"]["meansCode"] for f in fixtures} >= {"58", "48", "59"}
    assert {f["invoice"]["invoiceTypeCode"] for f in fixtures} >= {"380", "381"}
    assert any(f["invoice"].get("vatAccountingCurrencyCode") not in (None, f["invoice"]["currencyCode"])
               for f in fixtures)
    assert any(d.get("attachedDocument") and d.get("attachedDocumentMimeType")
               for f in fixtures for d in f["invoice"].get("additionalSupportingDocuments", []))
    assert any(f["config"].get("calculationMode") == "MANUAL" for f in fixtures)


def test_cli_golden_checks_and_rewrites_only_on_purpose(tmp_path, monkeypatch, capsys):
    from pipeline.cli import golden, main
    monkeypatch.setattr(golden, "GOLDEN", tmp_path)
    assert main(["golden", "vat-g-export"]) == 1  # nothing there yet: reported, not written
    assert not list(tmp_path.iterdir())
    assert main(["golden", "--update", "vat-g-export"]) == 0
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(c.golden.name for c in cases(["vat-g-export"]))
    for name in written:  # the same bytes as the reviewed files in the repository
        assert (tmp_path / name).read_bytes() == (GOLDEN / name).read_bytes()
    assert main(["golden", "vat-g-export"]) == 0
    target = tmp_path / written[0]
    target.write_bytes(target.read_bytes().replace(b"2390.00", b"2390.01"))
    capsys.readouterr()
    assert main(["golden", "vat-g-export"]) == 1
    out = capsys.readouterr().out
    assert "-" in out and "2390.01" in out and "+++ generated/" in out
