"""A picture uploaded for validation (a scan or a photo of a paper invoice, what a clerk has at hand) is named as one,
in English and in German, instead of "not well-formed XML; the excerpt shows where reading stopped" over its bytes.
The picture is real: the KoSIT configuration's own test of a binary file named .xml (a BMP)."""
from __future__ import annotations

import pytest

from conftest import CORPUS
from pipeline.flows.validate_xml import validate_xml

BITMAP = CORPUS / "kosit-validator-configuration-tests/instances/bin001.xml"


def test_a_bitmap_named_xml_is_said_to_be_a_picture():
    report = validate_xml(BITMAP.read_bytes(), "xrechnung")
    [issue] = report.issues
    assert issue.code == "XML-MALFORMED" and not report.valid   # the verdict and its code stay
    assert issue.message.startswith("The file is a picture (BMP), not XML: a scan or a photo of an invoice")
    assert issue.message_de.startswith("Die Datei ist ein Bild (BMP), kein XML: Ein Scan oder Foto")


@pytest.mark.parametrize("head, kind", [(b"\x89PNG\r\n\x1a\n", "PNG"), (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "JPEG"),
                                        (b"GIF89a", "GIF"), (b"II*\x00\x08\x00", "TIFF"),
                                        (b"RIFF\x10\x00\x00\x00WEBPVP8 ", "WebP")])
def test_each_kind_of_picture_is_named(head, kind):
    [issue] = validate_xml(head + b"\x00" * 64, "en16931").issues
    assert issue.message.startswith(f"The file is a picture ({kind}), not XML"), issue.message


def test_xml_that_starts_like_nothing_known_keeps_the_parser_s_words():
    [issue] = validate_xml(b"<?xml version='1.0'?><Invoice>", "en16931").issues
    assert issue.message.startswith("The file is not well-formed XML: ")


def test_a_german_pdf_check_says_no_colour_space_instead_of_none():
    """ZUGFeRD_2.0_fully_compliant_complete.pdf (ZUGFeRD community corpus): its German report read "DeviceRGB
    verwendet, Farbraum des OutputIntent: None"."""
    from pipeline.pdf.checks import pdfa_message_de

    said = pdfa_message_de("DeviceRGB used with OutputIntent colour space None")
    assert said == "DeviceRGB verwendet, der OutputIntent nennt aber keinen Farbraum" and "None" not in said
    assert pdfa_message_de("DeviceCMYK used with OutputIntent colour space RGB") == \
        "DeviceCMYK verwendet, Farbraum des OutputIntent: RGB"


def test_malformed_xml_in_german_says_where_reading_stopped():
    """A job's list shows a document's first findings without their code frames: the German said "the excerpt shows
    where reading stopped" under no excerpt; it names the line and column as the English does."""
    [issue] = validate_xml(b"<?xml version='1.0'?>\n<Invoice>\n  <ID>1</Invoice>", "en16931").issues
    assert issue.code == "XML-MALFORMED" and (issue.location.line, issue.location.column) == (3, 18)
    assert issue.message_de == "Die Datei ist kein wohlgeformtes XML: Das Lesen brach in Zeile 3, Spalte 18 ab."
