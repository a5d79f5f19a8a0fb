"""`pipeline generate` given a status request (fixtures/fr-status-*.json: top-level message, status, invoice) answered
with 17 invoice-field errors ("invoice.invoiceNumber is required", "message: unknown field", ...). It now knows the
request by its keys and generates the lifecycle status message exactly as POST /v1/invoice/fr-ctc/status does; the
message is then judged by `pipeline validate` on the official fr-cdar chain."""
from __future__ import annotations

import io
import json
import sys

import falcon.testing
import pytest

from pipeline.cli import main
from pipeline.cli.golden import FIXTURES
from pipeline.service.app import create_app

STATUSES = sorted(FIXTURES.glob("fr-status-*.json"))


@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_there_are_the_six_status_fixtures():
    assert [p.stem for p in STATUSES] == [f"fr-status-{c}" for c in (200, 204, 207, 210, 211, 212)]


@pytest.mark.parametrize("path", STATUSES, ids=[p.stem for p in STATUSES])
def test_a_status_request_generates_the_message_the_endpoint_generates_valid_on_the_chain(path, tmp_path, capfd,
                                                                                          client):
    out = tmp_path / "statut.xml"
    assert main(["generate", str(path), "-o", str(out)]) == 0, capfd.readouterr().err
    endpoint = client.simulate_post("/v1/invoice/fr-ctc/status", body=path.read_bytes(),
                                    headers={"Content-Type": "application/json"})
    assert endpoint.status_code == 200 and out.read_bytes() == endpoint.content
    capfd.readouterr()
    assert main(["validate", str(out)]) == 0   # detected as a status message: the fr-cdar chain
    said = capfd.readouterr().out
    assert said.startswith(f"VALID: {out} (fr-cdar ") and "CDAR" in said


def test_from_stdin_to_stdout(monkeypatch, capfd):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((FIXTURES / "fr-status-212.json").read_bytes())))
    assert main(["generate", "-"]) == 0
    assert "<rsm:CrossDomainAcknowledgementAndResponse" in capfd.readouterr().out


def test_a_status_request_missing_a_field_names_it_with_its_mdt_term(tmp_path, capfd):
    request = json.loads((FIXTURES / "fr-status-210.json").read_text("utf-8"))
    del request["status"]["code"]
    path = tmp_path / "statut.json"
    path.write_text(json.dumps(request))
    out = tmp_path / "statut.xml"
    assert main(["generate", str(path), "-o", str(out)]) == 1
    err = capfd.readouterr().err
    assert err.startswith("INVALID_INPUT:") and "REQUIRED status.code (MDT-105)" in err
    assert "invoice.invoiceNumber" not in err and not out.exists()


def test_an_invoice_option_with_a_status_request_is_refused_by_name(capfd):
    path = str(FIXTURES / "fr-status-207.json")
    assert main(["generate", path, "--spec", "en16931", "--syntax", "UBL"]) == 2
    err = capfd.readouterr().err
    assert "is a status request" in err and "--spec en16931, --syntax do not apply" in err
    assert main(["generate", path, "--lang", "de"]) == 2
    assert "--lang does not apply" in capfd.readouterr().err
    assert main(["generate", path, "--spec", "fr-ctc", "-o", "-"]) == 0   # its own reform's spec is no contradiction
    assert "<rsm:CrossDomainAcknowledgementAndResponse" in capfd.readouterr().out


def test_an_invoice_request_still_generates_an_xrechnung_by_default(capfd):
    assert main(["generate", str(FIXTURES / "invoice-all-fields.json")]) == 0
    out = capfd.readouterr().out
    assert "<rsm:CrossIndustryInvoice" in out and "xrechnung" in out
