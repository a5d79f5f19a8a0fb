"""`pipeline rules add` of releases that are not what they say (issue 37, found by probing as an operator would):

- an archive whose member data is damaged past its header (a download garbled in transit): its directory and headers
  read, the member's compressed data does not. zlib's and lzma's errors are neither zipfile's nor OSError, so the
  command ended in a traceback (exit 1) instead of refusing the archive; bzip2's damage was already an OSError;
- a KoSIT configuration whose <name> states another XRechnung version than its XRechnung stylesheets are for: one
  named 4.0.0 over 3.0.2's stylesheets was installed as XRechnung 4.0, and a document claiming 4.0 was `valid` on
  the 3.0 rules, the very bug of the issue."""
from __future__ import annotations

import io
import zipfile

import pytest

from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from test_rules_add import XR_UBL, _zip, cen_release, home, kosit_release, snapshot  # noqa: F401


def _damaged(method: int, at: int, byte: int) -> bytes:
    """CEN's release archive with one byte of its first member's compressed data set to `byte`, `at` bytes in: the
    central directory and the local header stay sound (what zipfile checks first), the data is not."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as zf:
        for name, data in cen_release().items():
            zf.writestr(name, data)
    data = bytearray(out.getvalue())
    first = zipfile.ZipFile(io.BytesIO(bytes(data))).infolist()[0]
    start = first.header_offset + 30 + len(first.filename.encode()) + len(first.extra)
    data[start + at] = byte
    return bytes(data)


@pytest.mark.parametrize("method, at, byte, said", [
    (zipfile.ZIP_DEFLATED, 0, 0x07, "invalid block type"),         # deflate: a block of the reserved type 3
    (zipfile.ZIP_LZMA, 4, 0xFF, "Invalid or unsupported options"),  # lzma: properties no encoder writes
], ids=["deflate", "lzma"])
def test_an_archive_whose_member_data_is_damaged_is_refused_and_nothing_is_left_behind(
        home, tmp_path, capsys, method, at, byte, said):
    release = tmp_path / "eInvoicing-EN16931-validation-1.3.17.zip"
    release.write_bytes(_damaged(method, at, byte))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"pipeline rules add: {release}: not a readable ZIP archive or folder"), err
    assert said in err and "Traceback" not in err
    assert snapshot(home) == before


def test_a_configuration_named_for_another_xrechnung_version_than_its_stylesheets_is_refused(
        home, tmp_path, capsys):
    files = kosit_release("2026-10-01")
    files["scenarios.xml"] = files["scenarios.xml"].replace(b"XRechnung 3.0.2</name>", b"XRechnung 4.0.0</name>") \
        .replace(b"kosit:xrechnung_3.0", b"kosit:xrechnung_4.0")
    release = tmp_path / "xrechnung-4.0.0-validator-configuration-2026-10-01.zip"
    release.write_bytes(_zip(files))
    before = snapshot(home)
    assert main(["rules", "add", str(release), "--no-optimise"]) == 2
    err = capsys.readouterr().err
    assert "its <name> states XRechnung 4.0.0, but its XRechnung stylesheets are for XRechnung 3.0.2" in err, err
    assert err.rstrip().endswith("refused") and snapshot(home) == before
    claims_40 = XR_UBL.read_bytes().replace(b"kosit:xrechnung_3.0", b"kosit:xrechnung_4.0")
    assert validate_xml(claims_40, "xrechnung").verdict == "indeterminate"  # still no 4.0 rules: never valid
    # the same configuration with a patch release of its own line in its name is its line's release: added
    files = kosit_release("2026-10-01")
    files["scenarios.xml"] = files["scenarios.xml"].replace(b"XRechnung 3.0.2</name>", b"XRechnung 3.0.3</name>")
    release.write_bytes(_zip(files))
    assert main(["rules", "add", str(release), "--no-optimise"]) == 0, capsys.readouterr().err
