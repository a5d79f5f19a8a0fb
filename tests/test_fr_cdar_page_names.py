"""France's status page names each code it paints beside the code, in the page's language (issue 39's readable page):
the invoice's type (MDT-91, the UNTDID 1001 codes France accepts, as the reform names them), the document status
(MDT-88), the schemes of the parties' ids and electronic addresses, the data types of the timeline's amounts. Before,
a French reader saw "380", "46", "(0225)" and "MEN 12 000 EUR" bare. Judged on FNFE's official examples and on them
with one code changed to another the official chain accepts (checked on it), as the HTML shows them and as the PDF
paints them (pdftotext)."""
from __future__ import annotations

import re

import pytest
from lxml import etree

from cdar_cases import EXD, NS, RRD, example, examples, official_chain
from pipeline.flows import status_read
from pipeline.invoice import cdar
from test_render_page import page_text, pdftotext

LANGUAGES = {"fr": 0, "en": 1}   # the index of each language's name in the code lists' (fr, en) pairs
SCHEME_SHOWN = re.compile(r"\((\d{4}|EM)(?: – [^)]*)?\)")   # "(0002)" or "(0002 – SIREN)" after an id or address


def _shown(files: list[tuple[str, bytes]], lang: str) -> str:
    return page_text(status_read.render_status(files, lang, html=True))


def _with(path, xpath: str, value: str, attribute: str | None = None) -> bytes:
    """An official example with one value (or one attribute) changed."""
    tree = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))
    [node] = tree.xpath(xpath, namespaces=NS)
    if attribute:
        node.set(attribute, value)
    else:
        node.text = value
    return etree.tostring(tree, encoding="UTF-8", xml_declaration=True)


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("path", examples(), ids=lambda p: p.stem)
def test_every_code_of_an_official_example_is_named_in_the_page_s_language(path, lang):
    data = path.read_bytes()
    _, status = status_read.read_status(data)
    shown = _shown([(path.name, data)], lang)
    i = LANGUAGES[lang]
    type_code, document_status = status["invoice"]["typeCode"], status["status"]["documentStatusCode"]
    assert f"{type_code} – {cdar.DOCUMENT_TYPE_NAMES[type_code][i]}" in shown
    assert f"{document_status} – {cdar.DOCUMENT_STATUS_NAMES[document_status][i]}" in shown
    message = status["message"]
    for party in (message["sender"], message["issuer"], *message["recipients"]):
        for value, scheme in ((party.get("id"), party.get("idScheme")),
                              (party.get("electronicAddress"), party.get("electronicAddressScheme"))):
            if value and scheme:
                assert f"{value} ({scheme} – {cdar.SCHEMES[scheme][i]})" in shown
    # no scheme of the reform left bare beside an id or address
    assert [m.group(0) for m in SCHEME_SHOWN.finditer(shown) if " – " not in m.group(0)] == []


def test_the_examples_cover_the_codes_named():
    """The test above sees each kind: two invoice types' documents, both phases' document statuses, three schemes."""
    seen = [status_read.read_status(p.read_bytes())[1] for p in examples()]
    schemes = {party.get(key) for s in seen
               for party in (s["message"]["sender"], s["message"]["issuer"], *s["message"]["recipients"])
               for key in ("idScheme", "electronicAddressScheme")} - {None}
    assert {"0002", "0225", "0238"} <= schemes
    assert {s["status"]["documentStatusCode"] for s in seen} >= {"10", "43", "45", "46", "47"}


@pytest.mark.parametrize("lang, painted", [
    ("fr", ["380 – Facture commerciale", "46 – En litige", "100000009_STATUTS (0225 – Adresse de l'annuaire)",
            "200000008 (0002 – SIREN)", "Code statut MDT-88", "Code type de l'objet (BT-3 de la facture) MDT-91"]),
    ("en", ["380 – Commercial invoice", "46 – Disputed", "100000009_STATUTS (0225 – Directory address)",
            "200000008 (0002 – SIREN)", "Document status code MDT-88",
            "Object type code (BT-3 of the invoice) MDT-91"]),
])
def test_the_pdf_paints_the_names(tmp_path, lang, painted):
    path = example("207")
    pdf = status_read.render_status([(path.name, path.read_bytes())], lang)
    text = " ".join(pdftotext(pdf, tmp_path, "-raw").split())
    for words in painted:
        assert words in text, words


@pytest.mark.parametrize("lang, painted", [
    ("fr", ["MPA – Montant payé 12 000 EUR", "MEN – Montant encaissé (TTC) 12 000 EUR 20,00 %",
            "47 – Paiement transmis / Encaissée", "0000 (0238 – Identifiant de plateforme)"]),
    ("en", ["MPA – Amount paid 12,000 EUR", "MEN – Amount received (incl. VAT) 12,000 EUR 20.00 %",
            "47 – Payment sent / Payment received", "0000 (0238 – Platform identifier)"]),
])
def test_the_timeline_names_the_amounts_data_types(tmp_path, lang, painted):
    """One invoice's path from Déposée to Encaissée: each amount in the timeline by its data type's name (MDT-207)."""
    files = [(p.name, p.read_bytes()) for p in examples() if p.name.startswith("UC1_")]
    pdf = status_read.render_status(files, lang)
    text = " ".join(pdftotext(pdf, tmp_path, "-raw").split()).replace("\u00a0", " ").replace("\u202f", " ")
    for words in painted:
        assert words in text, words


@pytest.mark.parametrize("type_code", cdar.DOCUMENT_TYPES)
def test_every_invoice_type_france_accepts_is_named(type_code):
    """Each of BR-FR-04's types: the dispute (207) about an invoice of that type, valid on the official chain."""
    xml = _with(example("207"), f"{RRD}/ram:TypeCode", type_code)
    assert official_chain(xml)[0]
    for lang, i in LANGUAGES.items():
        assert f"{type_code} – {cdar.DOCUMENT_TYPE_NAMES[type_code][i]}" in _shown([("m.xml", xml)], lang), lang


@pytest.mark.parametrize("phase, status", [(cdar.TRANSMISSION, "200"), (cdar.PROCESSING, "204")])
def test_every_document_status_code_is_named(phase, status):
    """Each MDT-88 code BR-FR-CDV-CL-05 allows in a phase, in an official example of that phase, valid on the
    official chain."""
    for code in cdar.DOCUMENT_STATUS_CODES[phase]:
        xml = _with(example(status), f"{RRD}/ram:StatusCode", code)
        assert official_chain(xml)[0], code
        for lang, i in LANGUAGES.items():
            assert f"{code} – {cdar.DOCUMENT_STATUS_NAMES[code][i]}" in _shown([("m.xml", xml)], lang), (code, lang)


def test_a_code_without_a_name_is_shown_alone():
    """A scheme the reform gives no meaning here (0088, GLN, an EAS the rules accept): the code, as before."""
    xml = _with(example("207"), f"{EXD}/ram:RecipientTradeParty/ram:URIUniversalCommunication/ram:URIID", "0088",
                attribute="schemeID")
    assert official_chain(xml)[0]
    for lang in LANGUAGES:
        assert "100000009_STATUTS (0088)" in _shown([("m.xml", xml)], lang)


def test_the_names_cover_the_lists():
    """Each code the rules allow has a name in both languages (BR-FR-04, BR-FR-CDV-CL-05), and no name more."""
    assert set(cdar.DOCUMENT_TYPE_NAMES) == set(cdar.DOCUMENT_TYPES)
    assert set(cdar.DOCUMENT_STATUS_NAMES) == {c for codes in cdar.DOCUMENT_STATUS_CODES.values() for c in codes}
    for table in (cdar.DOCUMENT_TYPE_NAMES, cdar.DOCUMENT_STATUS_NAMES, cdar.SCHEMES):
        assert all(len(names) == 2 and all(n.strip() for n in names) for names in table.values())
