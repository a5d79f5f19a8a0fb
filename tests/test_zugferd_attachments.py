"""Supporting documents (BG-24 with an attached file, BT-125) travel inside the ZUGFeRD PDF as further PDF/A-3
associated files (/AFRelationship /Supplement), next to the invoice XML; the PDF still passes the PDF/A-3 and
Factur-X checks and the validation endpoint's checks."""
from __future__ import annotations

import base64
import io

import pikepdf
import pytest

from pipeline.invoice.request_json import dump_request, load_request, with_config
from pipeline.cli.golden import FIXTURES
from pipeline.errors import ApiError
from pipeline.flows.generate_zugferd import generate_zugferd
from pipeline.flows.validate_pdf import validate_pdf

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
    request = load_request(FULL.read_bytes())
    request["invoice"]["additionalSupportingDocuments"].append(  # a second attached file, its name derived
        {"reference": "Messwerte-03", "attachedDocumentMimeType": "text/csv",
         "attachedDocument": base64.b64encode("Datum;Zähler;Stand\n2024-03-31;ZAEHLER-0815;10423\n".encode()).decode()})
    document = generate_zugferd(dump_request(request))
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
    request = load_request(FULL.read_bytes())
    request["invoice"]["additionalSupportingDocuments"][0]["attachedDocumentFilename"] = "factur-x.xml"
    document = generate_zugferd(dump_request(request))
    files = _embedded(document)
    assert files["factur-x.xml"][0] != "/Supplement" and files["factur-x.xml"][1] == "/text/xml"
    assert [n for n, f in files.items() if f[0] == "/Supplement" and n.startswith("factur-x")] == ["factur-x (2).xml"]
    assert validate_pdf(document).valid


@pytest.mark.parametrize("profile", ["MINIMUM", "XRECHNUNG"])
def test_attachments_are_embedded_for_every_profile(profile):
    body = with_config(FULL.read_bytes(), profile=profile)
    try:
        document = generate_zugferd(body)
    except ApiError as exc:  # the fixture may not meet a profile's own rules; that is not this test's subject
        pytest.fail(f"{profile}: {exc.error_code} {[e.code for e in exc.errors]}")
    attached = [d for d in load_request(FULL.read_bytes())["invoice"]["additionalSupportingDocuments"]
                if "attachedDocument" in d]
    assert attached and sum(1 for f in _embedded(document).values() if f[0] == "/Supplement") == len(attached)
    assert validate_pdf(document).valid


# --- the file entries in detail, names, bad input, the generation gate, the endpoint -------------------------

PNG = (FIXTURES.parent / "docs" / "zugferd-en.png").read_bytes()  # a real picture


def _with_picture(profile: str = "EN16931", filename: str = "foto.png") -> bytes:
    request = load_request(FULL.read_bytes())
    request["config"]["profile"] = profile
    request["invoice"]["additionalSupportingDocuments"] = [{
        "reference": "Foto-Lager", "description": "Foto der Lieferung", "attachedDocumentFilename": filename,
        "attachedDocument": base64.b64encode(PNG).decode(), "attachedDocumentMimeType": "image/png"}]
    return dump_request(request)


def test_supplement_file_entry_has_mime_subtype_params_and_description():
    with pikepdf.open(io.BytesIO(generate_zugferd(_with_picture()))) as pdf:
        spec = pikepdf.NameTree(pdf.Root.Names.EmbeddedFiles)["foto.png"]
        stream = spec.EF.F
        assert (str(spec.F), str(spec.UF), str(spec.Desc)) == ("foto.png", "foto.png", "Foto der Lieferung")
        assert stream.Subtype == pikepdf.Name("/image/png") and stream.read_bytes() == PNG
        assert int(stream.Params.Size) == len(PNG)
        assert str(stream.Params.ModDate).startswith("D:") and str(stream.Params.CreationDate).startswith("D:")


def test_attachment_names():
    from pipeline.pdf.assemble import Attachment, attachment_names

    def named(*names):
        return attachment_names([Attachment(n, b"", "text/plain") for n in names])

    assert named("XRechnung.xml", "x.pdf", "X.PDF", "x.pdf", ".hidden", ".hidden") == [
        "XRechnung (2).xml", "x.pdf", "X (2).PDF", "x (3).pdf", ".hidden", ".hidden (2)"]
    assert named("../../etc/passwd", "a\\b\x01c.txt") == [".._.._etc_passwd", "a_b_c.txt"]
    assert named("Anhang\u202efdp.exe", "b\u2067c.pdf") == ["Anhang_fdp.exe", "b_c.pdf"]  # no disguise


def test_undecodable_attachment_is_400():
    request = load_request(_with_picture("BASIC"))
    request["invoice"]["additionalSupportingDocuments"][0]["attachedDocument"] = "not base64!"
    with pytest.raises(ApiError) as exc:
        generate_zugferd(dump_request(request))
    assert exc.value.http_status == 400
    assert exc.value.errors[0].field == "invoice.additionalSupportingDocuments[0].attachedDocument"


def test_gate_checks_the_attachments_byte_for_byte():
    from pipeline.invoice import specs
    from pipeline.pdf import checks
    from pipeline.pdf.assemble import Attachment

    document = generate_zugferd(_with_picture())
    xml = checks.inspect(document, validate_xml=False).xml
    profile = specs.PROFILES["EN16931"]
    checks.gate_generated(document, xml, profile, [Attachment("foto.png", PNG, "image/png")])
    for wrong in ([Attachment("foto.png", PNG[:-1], "image/png")], [Attachment("foto.png", PNG, "image/jpeg")],
                  [Attachment("bild.png", PNG, "image/png")], []):
        with pytest.raises(ApiError) as exc:
            checks.gate_generated(document, xml, profile, wrong)
        assert exc.value.error_code == "PDF_A3_VALIDATION_FAILED"
        assert [e.code for e in exc.value.errors] == ["FX_ATTACHMENTS_DIFFER"]


def test_validate_endpoint_accepts_a_pdf_with_supporting_documents():
    import falcon.testing

    from pipeline.service.app import create_app

    document = generate_zugferd(_with_picture())
    boundary = "----attachmentsboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"i.pdf\"\r\n"
            f"Content-Type: application/pdf\r\n\r\n").encode() + document + (
            f"\r\n--{boundary}\r\nContent-Disposition: form-data; name=\"request\"\r\n"
            f"Content-Type: application/json\r\n\r\n{{}}\r\n--{boundary}--\r\n").encode()
    resp = falcon.testing.TestClient(create_app(platform=False)).simulate_post(
        "/v1/invoice/zugferd/validate", body=body, headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
    assert resp.status_code == 200, resp.text
    assert resp.json["valid"] is True, resp.json
