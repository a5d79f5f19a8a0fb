"""The command line's result files are named after their sources, and its JSON names fields as the API does.

`pipeline parse FOLDER -o OUT` named results by the stem: `invoice.xml`, `invoice.pdf` and `sub/invoice.xml` gave
`invoice.json`, `invoice-2.json`, `invoice-3.json` (which is which?), and `convert -o` the folder read wrote a
CII converted to CII over its own source. `keys list --json` printed `key_id`, `created_at` where everything else
(the API, the access log, `jobs ... --json`) says `keyId`, `createdAt`.
"""
from __future__ import annotations

import json
import shutil
import zipfile

from conftest import CORPUS
from pipeline.cli import main
from test_platform_helpers import cli

CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"
PDF = CORPUS / "mustangproject/validator/validXRechnung.pdf"


def _folder(tmp_path):
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    shutil.copy(CII, folder / "invoice.xml")
    shutil.copy(PDF, folder / "invoice.pdf")
    shutil.copy(CII, folder / "sub" / "invoice.xml")
    with zipfile.ZipFile(folder / "pack.zip", "w") as z:
        z.write(CII, "invoice.xml")
    return folder


def test_parse_names_each_result_after_its_source(tmp_path, capsys):
    folder, out = _folder(tmp_path), tmp_path / "out"
    assert main(["parse", str(folder), "-o", str(out)]) in (0, 1), capsys.readouterr().err
    names = sorted(p.name for p in out.iterdir())
    assert names == ["invoice.pdf.json", "invoice.xml.json", "pack.zip_invoice.xml.json", "sub_invoice.xml.json"]
    # each the JSON of its own source: the PDF's says so
    assert json.loads((out / "invoice.pdf.json").read_text())["source"].get("embeddedFileName")
    assert json.loads((out / "invoice.xml.json").read_text())["source"]["embeddedFileName"] is None

    # a file named alone into a folder: by its file name, not the path typed
    one = tmp_path / "one"
    one.mkdir()
    assert main(["parse", str(folder / "sub" / "invoice.xml"), "-o", str(one)]) in (0, 1)
    assert [p.name for p in one.iterdir()] == ["invoice.xml.json"]


def test_convert_into_the_folder_read_never_writes_over_a_source(tmp_path, capsys):
    folder = _folder(tmp_path)
    source = (folder / "invoice.xml").read_bytes()
    assert main(["convert", str(folder), "--to", "UBL", "--allow-loss", "-o", str(tmp_path / "ubl")]) in (0, 1)
    assert sorted(p.name for p in (tmp_path / "ubl").iterdir()) == \
        ["invoice.pdf.xml", "invoice.xml", "pack.zip_invoice.xml", "sub_invoice.xml"]
    capsys.readouterr()
    assert main(["convert", str(folder / "invoice.xml"), str(folder / "sub" / "invoice.xml"), "--to", "CII",
                 "-o", str(folder)]) in (0, 1), capsys.readouterr().err
    assert (folder / "invoice.xml").read_bytes() == source  # the source kept; its result beside it
    assert b"CrossIndustryInvoice" in (folder / "1-invoice.xml").read_bytes()[:400]
    assert (folder / "2-invoice.xml").is_file()  # the second source's result: no name of the first


def test_keys_json_names_fields_as_the_api(tmp_path):
    env = {"EINVOICE_DATA_DIR": str(tmp_path), "EINVOICE_DATABASE_URL": "", "EINVOICE_REDIS_URL": ""}
    cli(env, "keys", "create", "--name", "camel", "--env", "test", "--credits", "5", "--rate-limit", "30/min")
    [key] = json.loads(cli(env, "keys", "list", "--json").stdout)
    assert set(key) == {"keyId", "name", "env", "balance", "rateLimit", "revoked", "createdAt"}, key
    assert (key["name"], key["balance"], key["rateLimit"], key["revoked"]) == ("camel", 5, 30, False)
    [row] = json.loads(cli(env, "keys", "usage", key["keyId"], "--json").stdout)
    assert set(row) == {"keyId", "kind", "amount", "requestId", "endpoint", "createdAt"}, row
    assert (row["keyId"], row["kind"], row["amount"]) == (key["keyId"], "credit", 5)
