"""Supporting documents (BG-24 with an attached file, BT-125) travel inside the ZUGFeRD PDF as further PDF/A-3
associated files (/AFRelationship /Supplement), next to the invoice XML; the PDF still passes the PDF/A-3 and
Factur-X checks and the validation endpoint's checks."""
from __future__ import annotations

import base64
import io

import pikepdf
import pytest

from pipeline import generate
from pipeline.cli.golden import FIXTURES
from pipeline.errors import ApiError
from pipeline.facturx import generate_zugferd
from pipeline.validate import validate_pdf

FULL = FIXTURES / "invoice-all-fields.json"


def _embedded(document: bytes) -> dict[str, tuple[str, str, bytes]]:
    """name -> (relationship, subtype, bytes) of every embedded file, checking each is in the catalog's /AF."""
    with pikepdf.open(io.BytesIO(document)) as pdf:
        af = {str(spec.get("/UF", spec.get("/F"))) for spec in pdf.Root.AF}
        out = {}
        for name, spec in pdf.attachments.items():
            assert name in af, f"{name} is not an associated file of the document"
            stream = spec.obj.EF.F
            out[name] = (str(spec.obj.AFRelationship), str(stream.Subtype), spec.get_file().read_bytes())
        return out


def test_supporting_documents_are_embedded_as_supplement_files():
    request = generate.load_request(FULL.read_bytes())
    document = generate_zugferd(FULL.read_bytes())
    files = _embedded(document)
    attached = [d for d in request["invoice"]["additionalSupportingDocuments"] if "attachedDocument" in d]
    assert len(attached) == 2 and len(files) == 3
    assert files["factur-x.xml"][1] == "/text/xml"
    by_bytes = {data: (rel, subtype) for rel, subtype, data in files.values()}
    for doc in attached:
        data = base64.b64decode(doc["attachedDocument"])
        assert by_bytes[data] == ("/Supplement", "/" + doc["attachedDocumentMimeType"])
    assert "stundennachweis-2024-03.pdf" in files and "Messwerte-03.csv" in files  # BT-125-2 sent / derived
    report = validate_pdf(document)
    assert report.valid, [(i.code, i.message) for i in report.issues if i.severity == "ERROR"]


def test_an_attachment_named_like_the_invoice_does_not_take_its_place():
    request = generate.load_request(FULL.read_bytes())
    request["invoice"]["additionalSupportingDocuments"][0]["attachedDocumentFilename"] = "factur-x.xml"
    document = generate_zugferd(generate.dump_request(request))
    files = _embedded(document)
    assert files["factur-x.xml"][0] != "/Supplement" and files["factur-x.xml"][1] == "/text/xml"
    assert [n for n, f in files.items() if f[0] == "/Supplement" and n.startswith("factur-x")] == ["factur-x (2).xml"]
    assert validate_pdf(document).valid


@pytest.mark.parametrize("profile", ["MINIMUM", "XRECHNUNG"])
def test_attachments_are_embedded_for_every_profile(profile):
    body = generate.with_config(FULL.read_bytes(), profile=profile)
    try:
        document = generate_zugferd(body)
    except ApiError as exc:  # the fixture may not meet a profile's own rules; that is not this test's subject
        pytest.fail(f"{profile}: {exc.error_code} {[e.code for e in exc.errors]}")
    assert sum(1 for f in _embedded(document).values() if f[0] == "/Supplement") == 2
    assert validate_pdf(document).valid
