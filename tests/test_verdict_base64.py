"""An attached document (BT-125) of a received invoice is judged as the official validators judge it: Xerces (KoSIT's
validator) refuses content outside xs:base64Binary's lexical space, which libxml2 lets pass when the foreign
characters are other than the alphabet ('*', '!', U+00A0). Our verdict on each crafted document below was compared
with the JVM's (`python3 bench/realworld_jvm.py --root DIR` over them, DIR written with these variants): equal on all.
The documents are official XRechnung samples with an attachment, damaged here at test time."""
from __future__ import annotations

import base64
import json
import random
import re

import falcon.testing
import pytest

from conftest import CORPUS
from pipeline.check import engine
from pipeline.cli import main
from pipeline.flows.validate_xml import validate_xml
from pipeline.service.app import create_app
from test_parse import upload

SAMPLES = CORPUS / "xrechnung-testsuite/business-cases/standard"
WITH_ATTACHMENT = {"CII": SAMPLES / "01.15a-INVOICE_uncefact.xml", "UBL": SAMPLES / "01.15a-INVOICE_ubl.xml"}
_CONTENT = re.compile(rb"(<(?:[\w.-]+:)?(?:AttachmentBinaryObject|EmbeddedDocumentBinaryObject)\b[^>]*>)([^<]*)<")
ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
DATATYPE = engine.XSD_PREFIX + "CVC-DATATYPE-VALID-1-2-1"


def _lexical_space() -> re.Pattern:
    """xs:base64Binary's lexical space as XSD 1.1 Part 2, 3.3.17 writes it (productions Base64Binary ... B04char),
    over the value after the type's whiteSpace=collapse: an oracle written from the grammar, apart from our check."""
    b64 = "[A-Za-z0-9+/] ?"
    b16 = "[AEIMQUYcgkosw048] ?"
    b04 = "[AQgw] ?"
    quad = f"(?:{b64}){{4}}"
    final = f"(?:{b64}{b64}{b64}[A-Za-z0-9+/]|{b64}{b64}{b16}=|{b64}{b04}= ?=)"
    return re.compile(f"(?:(?:{quad})*{final})?")


def _collapsed(text: str) -> str:
    return re.sub(" +", " ", re.sub("[\t\n\r]", " ", text)).strip(" ")


def test_base64_fault_is_the_lexical_space_of_the_xsd():
    """`base64_fault` accepts exactly what the grammar accepts, on encodings of random bytes, wrapped and spaced, and
    each damaged in up to two places (a foreign character, '=', whitespace, a deletion, a changed last character);
    `surely_base64`, the fast path, never calls valid what the grammar refuses."""
    grammar = _lexical_space()
    rnd = random.Random(125)
    samples = ["", " ", "AQID", "AQ*ID", "AQ!ID", "A Q I D", "AQ= =", "AQ=\n=", "AQ=", "AQ", "AQ===", "AQ==AQID",
               "AQ=D", "AR==", "AQI=", "AQJ=", "====", "A===", "=AQI", "AQ-_", "AQ\u00e4D", "AQ\u00a0ID", "AQID="]
    for n in range(3000):
        text = base64.b64encode(rnd.randbytes(rnd.randrange(0, 30))).decode()
        if n % 3 == 0:
            text = "\n".join(text[i:i + 5] for i in range(0, len(text), 5))
        for _ in range(rnd.randrange(0, 3)):
            at, op = rnd.randrange(len(text) + 1), rnd.random()
            if op < 0.5:
                text = text[:at] + rnd.choice("=A-_ \u00e4+/\n\t\r*!.\u00a0Qgw0") + text[at:]
            elif op < 0.8:
                text = text[:at] + text[at + 1:]
            else:
                text = text[:at] + rnd.choice("AQgwBRhx") + text[at + 1:]
        samples.append(text)
    valid = 0
    for text in samples:
        expected = grammar.fullmatch(_collapsed(text)) is not None
        fault = engine.base64_fault(text)
        assert (fault is None) == expected, (text, fault)
        assert not engine.surely_base64(text) or expected, text
        valid += expected
    assert 500 < valid < len(samples) - 500  # both answers well represented


def _variants(content: bytes) -> dict[str, tuple[bytes, bool]]:
    """Attachment contents derived from an official one -> (content, valid as xs:base64Binary)."""
    core = content.strip()
    assert core.endswith(b"=") and not core.endswith(b"==")
    mid = len(core) // 2
    return {
        "as sent": (content, True),
        "wrapped at 76": (b"\n" + b"\n".join(core[i:i + 76] for i in range(0, len(core), 76)) + b"\n", True),
        "whitespace inside": (core[:mid] + b" \t " + core[mid:], True),
        "whitespace inside the padding": (core[:-1] + b" \n=", True),
        "stray '*'": (core[:mid] + b"*" + core[mid:], False),
        "stray '!'": (core[:mid] + b"!" + core[mid:], False),
        "no-break space": (core[:mid] + "\u00a0".encode() + core[mid:], False),
        "'=' in the middle": (core[:mid] + b"=" + core[mid:], False),
        "one character cut": (core[:-2] + b"=", False),
        "padding added": (core + b"=", False),
        # the character before '=' one further in the alphabet: its lowest bit, which '=' leaves unused, set
        "padding bits set": (core[:-2] + bytes([ALPHABET[ALPHABET.index(core[-2]) + 1]]) + b"=", False),
        "short, stray '*'": (b"QUJD*REVG", False),
        "short, valid": (b"QUJDREVG", True),
    }


def _damaged(syntax: str, variant: str) -> tuple[bytes, bytes, bool]:
    data = WITH_ATTACHMENT[syntax].read_bytes()
    match = _CONTENT.search(data)
    content, valid = _variants(match.group(2))[variant]
    return data, data[:match.start(2)] + content + data[match.end(2):], valid


def _start_tag(data: bytes) -> tuple[int, int]:
    """Line and column where the attachment element's start tag begins, counted in the text."""
    at = _CONTENT.search(data).start()
    return data.count(b"\n", 0, at) + 1, at - data.rfind(b"\n", 0, at)


VARIANTS = list(_variants(b"QUFB\nQUE=\n"))  # the names


@pytest.mark.parametrize("syntax", list(WITH_ATTACHMENT))
@pytest.mark.parametrize("variant", VARIANTS)
def test_a_received_attachment_is_judged_as_xerces_judges_it(syntax, variant):
    """Valid content keeps the sample's report; damaged content adds one XSD finding (the code Xerces and libxml2
    give a value outside its type) at the element's start tag, naming BT-125 and what is wrong, and nothing else."""
    original, data, valid = _damaged(syntax, variant)
    before = validate_xml(original, "xrechnung")
    assert before.valid
    report = validate_xml(data, "xrechnung")
    assert report.valid is valid
    added = [i.to_dict() for i in report.issues if i.to_dict() not in [b.to_dict() for b in before.issues]]
    if valid:
        assert added == []
        return
    [finding] = added
    assert (finding["severity"], finding["code"], finding["category"]) == ("ERROR", DATATYPE, "format")
    assert "BT-125" in finding["message"] and "xs:base64Binary" in finding["message"]
    assert (finding["location"]["line"], finding["location"]["column"]) == _start_tag(data)
    assert finding["location"]["xpath"].endswith(("ram:AttachmentBinaryObject", "cbc:EmbeddedDocumentBinaryObject"))
    assert len(finding["message"]) < 400  # what is wrong, never the 200 KB content


def test_the_message_says_what_is_wrong_and_where():
    assert "'*' (U+002A) at character 5 " in engine.base64_fault("QUJD*REVG")
    assert "'=' at character 3 " in engine.base64_fault("QU=JDREVG")
    assert "9 base64 characters" in engine.base64_fault("QUJ DREV GA")
    assert "ends in 3 '='" in engine.base64_fault("QQ===")
    assert "'R' before the padding '=='" in engine.base64_fault("QR==")
    assert engine.base64_fault("QQ = =") is None and engine.base64_fault("") is None


def test_the_validate_endpoint_and_the_command_line_refuse_a_stray_character(tmp_path, capsys):
    _, data, _ = _damaged("CII", "stray '!'")
    client = falcon.testing.TestClient(create_app(platform=False))
    report = upload(client, data, {}, path="/v1/invoice/xrechnung/validate").json
    assert (report["valid"], report["verdict"]) == (False, "invalid")
    assert [i["code"] for i in report["issues"] if i["severity"] == "ERROR"] == [DATATYPE]
    path = tmp_path / "invoice.xml"
    path.write_bytes(data)
    assert main(["validate", str(path), "--json"]) == 1
    cli = json.loads(capsys.readouterr().out)
    assert [i["code"] for i in cli["issues"] if i["severity"] == "ERROR"] == [DATATYPE]
