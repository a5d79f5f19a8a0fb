"""Names of a ZIP's and an e-mail's documents, alike wherever they are read. Before, a job named member a.xml of its
part month.zip `a.xml` (two ZIPs' `invoice.xml` were two lines of one name) while `pipeline validate` named it
`month.zip/a.xml`; now a job, batch validation and `pipeline validate` name a container's documents under its file
name when there are several files, and by their own names when it is the only file. `pipeline parse` and `pipeline
convert` on a folder with ZIPs exited 2 ("no e-invoice"); now they read each member as `validate` does, each result
in a file of its own (two documents of one name no longer write one file)."""
from __future__ import annotations

import json

from mailbuild import message
from pipeline.cli import main
from tests.test_jobs import _job_lines, documents, in_process  # noqa: F401 (in_process: a fixture)
from tests.test_validate_batch import form, zipped


def _validate_names(monkeypatch, capsys, folder, *paths: str) -> list[tuple[str, bool | None]]:
    monkeypatch.chdir(folder)  # the named files as a user names them: relative
    main(["validate", *paths, "--json", "--jobs", "1"])
    return [(r["name"], r.get("report", {}).get("valid")) for r in json.loads(capsys.readouterr().out)["results"]]


def _named(lines: list[dict]) -> list[tuple[str, bool | None]]:
    return [(x["name"], x.get("report", {}).get("valid")) for x in lines]


def test_a_job_the_batch_and_validate_name_a_zip_s_members_alike(in_process, tmp_path, monkeypatch, capsys):
    valid, invalid = documents()
    files = [("month.zip", zipped([("a.xml", valid), ("b.xml", invalid)])), ("feb.zip", zipped([("a.xml", valid)])),
             ("c.xml", valid), ("m.eml", message(1, [("x.xml", valid)]).as_bytes())]
    for name, data in files:
        (tmp_path / name).write_bytes(data)
    client, auth = in_process

    local = _validate_names(monkeypatch, capsys, tmp_path, *(name for name, _ in files))
    assert [n for n, _ in local][:4] == ["month.zip/a.xml", "month.zip/b.xml", "feb.zip/a.xml", "c.xml"]
    assert local[4][0].startswith("m.eml/") and local[4][0].endswith("/x.xml")
    assert [v for _, v in local] == [True, False, True, True, True]
    body, ctype = form(files, '{"operation": "validate"}')
    assert _named(_job_lines(in_process, body, ctype)) == local
    body, ctype = form(files)
    batch = client.simulate_post("/v1/invoice/xrechnung/validate/batch", body=body, headers={**auth, "Content-Type": ctype})
    assert batch.status_code == 200 and _named(batch.json["results"]) == local, batch.text

    # the only file: its members by their own names, everywhere
    alone = _validate_names(monkeypatch, capsys, tmp_path, "month.zip")
    assert alone == [("a.xml", True), ("b.xml", False)]
    body, ctype = form(files[:1], '{"operation": "validate"}')
    assert _named(_job_lines(in_process, body, ctype)) == alone
    body, ctype = form(files[:1])
    batch = client.simulate_post("/v1/invoice/xrechnung/validate/batch", body=body,
                                 headers={**auth, "Content-Type": ctype})
    assert _named(batch.json["results"]) == alone

    # a folder (what `pipeline jobs submit DIR` sends: each file a part named by its path in the folder)
    (tmp_path / "dir" / "sub").mkdir(parents=True)
    (tmp_path / "dir" / "sub" / "month.zip").write_bytes(files[0][1])
    (tmp_path / "dir" / "c.xml").write_bytes(valid)
    local = _validate_names(monkeypatch, capsys, tmp_path, "dir")
    assert local == [("c.xml", True), ("sub/month.zip/a.xml", True), ("sub/month.zip/b.xml", False)]
    body, ctype = form([("c.xml", valid), ("sub/month.zip", files[0][1])], '{"operation": "validate"}')
    assert _named(_job_lines(in_process, body, ctype)) == local


def _folder(tmp_path):
    valid, _ = documents()
    folder = tmp_path / "in"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.xml").write_bytes(valid)
    (folder / "sub" / "a.xml").write_bytes(valid)  # one stem twice: two result files
    (folder / "sub" / "pack.zip").write_bytes(zipped([("m.xml", valid), ("inner.zip", zipped([("d.xml", valid)]))]))
    return folder


def test_parse_reads_a_folder_s_zips_member_by_member(tmp_path, capsys):
    folder, out = _folder(tmp_path), tmp_path / "out"
    assert main(["parse", str(folder), "-o", str(out)]) == 2  # inner.zip is refused unread
    err = capsys.readouterr().err
    assert "sub/pack.zip/inner.zip: NESTED_ARCHIVE: " in err, err
    # each named after its source (as a job's results ZIP names them): `sub/a.xml` is no second `a`
    assert sorted(p.name for p in out.iterdir()) == ["a.xml.json", "sub_a.xml.json", "sub_pack.zip_m.xml.json"]
    assert main(["parse", str(folder / "a.xml"), "-o", str(tmp_path / "one.json")]) == 0
    one = json.loads((tmp_path / "one.json").read_text())
    for name in ("a.xml.json", "sub_a.xml.json", "sub_pack.zip_m.xml.json"):  # each the invoice the file alone gives
        assert json.loads((out / name).read_text())["invoice"] == one["invoice"]

    # a ZIP named alone: its documents (a folder to write to), a message without an invoice a notice only
    box = tmp_path / "box.zip"
    box.write_bytes(zipped([("m.xml", (folder / "a.xml").read_bytes()), ("hello.eml", message(2, []).as_bytes())]))
    capsys.readouterr()
    assert main(["parse", str(box)]) == 2 and "several files need -o FOLDER" in capsys.readouterr().err
    assert main(["parse", str(box), "-o", str(tmp_path / "out2")]) == 0
    assert "NO_INVOICE" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "out2").iterdir()] == ["m.xml.json"]


def test_convert_and_render_read_a_folder_s_zips_member_by_member(tmp_path, capsys):
    folder, out = _folder(tmp_path), tmp_path / "out"
    assert main(["convert", str(folder), "--to", "UBL", "-o", str(out), "--json"]) == 2
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["name"] for x in lines] == ["a.xml", "sub/a.xml", "sub/pack.zip/m.xml", "sub/pack.zip/inner.zip"]
    assert [x.get("output") for x in lines] == [str(out / "a.xml"), str(out / "sub_a.xml"),
                                                str(out / "sub_pack.zip_m.xml"), None]
    assert lines[-1]["error"]["code"] == "NESTED_ARCHIVE"
    assert all(b"<Invoice" in (out / n).read_bytes()[:400] for n in ("a.xml", "sub_a.xml", "sub_pack.zip_m.xml"))
    pages = tmp_path / "pages"
    assert main(["render", str(folder), "--html", "-o", str(pages)]) == 2
    assert sorted(p.name for p in pages.iterdir()) == ["a.xml.html", "sub_a.xml.html", "sub_pack.zip_m.xml.html"]
