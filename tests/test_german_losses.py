"""German for the specific reason of each value a conversion cannot carry (issue 38, item 5): the German page and a
German job's report said "Das Ziel hat für diese Angabe keinen Platz ..." for every NOT_CARRIED entry, where the
English message says why (e.g. "CII (D16B) carries one preceding invoice reference (BG-3)"). Each entry of a 422
CONVERSION_LOSS carries `messageDe`: its place and value as the English message names them, and its reason in German
with the business terms named as the repo's German list names them; with allowLoss each reason of a loss entry has
its German beside it (`reasonDe`). Real files of ../shared: each reason the conversion gives, once."""
from __future__ import annotations

import json
import re

import pytest

from conftest import CORPUS, SHARED
from pipeline.errors import ApiError
from pipeline.flows import job_document
from pipeline.flows.convert import convert, loss_details
from pipeline.flows.validation_report import refusal_page, with_german
from pipeline.invoice.terms import bt_name

REALWORLD = SHARED / "realworld"
ELEKTRON = REALWORLD / "corpus/XML-Rechnung/CII/XRECHNUNG_Elektron.cii.xml"           # a contact's department
MIETE = REALWORLD / "corpus/ZUGFeRDv2/correct/intarsys/EN16931/zugferd_2p0_EN16931_Miete.pdf"   # two buyer ids
CREDIT_NOTE = CORPUS / "en16931-cen/test/testfiles/CreditNote-Max_content.xml"           # two preceding invoices
SUB_LINES = CORPUS / "xrechnung-testsuite/business-cases/extension/04.01a-INVOICE_ubl.xml"
PAYMENTS_APART = CORPUS / "xrechnung-schematron-tests/ubl-inv/ubl-inv-br-dex-11-test.xml"  # amount due without them
PAYMENTS_DUE = CORPUS / "kosit-validator-configuration-tests/instances/ubl-br-dex-09-prepaidpayment.xml"
HIERARCHY = REALWORLD / "mustang/library/subinvoicelines/Extended_SubInvoiceLines_Hardware_Bsp2.xml"
NOT_EXTENDED = CORPUS / "xrechnung-schematron-tests/cii/cii-br-dex-15-test-on-sub-invoice-lines.xml"
FULL_CII = REALWORLD / "mustang/library/cii/01.01a-INVOICE.cii.xml"

# (source, to, spec, profile, the business terms whose German names the reasons name, an English reason and the
# German one in its place). The terms' German names come from the repo's list (templates/term-names-de.json).
CASES = [
    (ELEKTRON, "UBL", None, None, (), "UBL's contact has one name", "ein Kontakt hat in UBL nur einen Namen, den der "
     "Kontaktstelle (BT-41, BT-56)"),
    (ELEKTRON, "ZUGFERD", None, None, (), "count a department beside the person as a second BT-41",
     "zählen eine Abteilung neben der Person als zweite Kontaktstelle (BT-41, CII-SR-465)"),
    (MIETE, "UBL", None, None, (), "EN 16931 and UBL take one identifier of the buyer",
     "nur eine Kennung des Käufers (BT-46, UBL-SR-16)"),
    (CREDIT_NOTE, "CII", None, None, ("BG-3",), "CII (D16B) carries one preceding invoice reference (BG-3)",
     "CII (D16B) trägt nur einen Verweis auf eine vorausgegangene Rechnung (BG-3)"),
    (SUB_LINES, "CII", None, None, (), "the line above keeps its amounts",
     "die übergeordnete Position behält ihre Beträge"),
    (PAYMENTS_APART, "UBL", "en16931", None, ("BG-DEX-09", "BT-115"), "the invoice adds up without them",
     "die Rechnung geht ohne sie auf, da der fällige Betrag (BT-115) sie nicht enthält"),
    (PAYMENTS_DUE, "CII", None, None, ("BG-DEX-09",), "CII has no place for it", "CII hat keinen Platz für sie"),
    (PAYMENTS_DUE, "UBL", "en16931", None, ("BG-DEX-09",), "UBL without the XRechnung extension has no place",
     "UBL ohne die Extension von XRechnung hat keinen Platz für sie"),
    (HIERARCHY, "UBL", None, None, ("BT-X-8", "BT-X-304"), "UBL has no place for Factur-X EXTENDED's line hierarchy",
     "UBL hat keinen Platz für die Positionshierarchie von Factur-X EXTENDED"),
    (HIERARCHY, "UBL", None, None, (), "no field of the model carries it", "das Rechnungsmodell hat kein Feld für sie"),
    (NOT_EXTENDED, "UBL", None, None, (), "this invoice is no EXTENDED invoice",
     "diese Rechnung ist keine EXTENDED-Rechnung"),
    (FULL_CII, "ZUGFERD", None, "BASIC", (), "the Factur-X profile BASIC has no place for it",
     "das Factur-X-Profil BASIC hat keinen Platz für sie"),
]

# Words of an English sentence (none of them a German word, nor part of a code, an element's name or a rule's id)
ENGLISH = re.compile(r"\b(the|of|has|have|no|its|it|them|and|which|would|carries|carry|takes?|place|for|line|lines|"
                     r"only|one|where|is|are|as|without|binds|says|should|source|document|not|so|payments?|"
                     r"profile|contact|identifier|buyer|payee)\b", re.IGNORECASE)
# The place and value an entry names ("/rsm:.../ram:X (line 12) = 'value': "), as web.js's PLACE reads it
PLACE = re.compile(r"^(\S+)(?: \((?:line|Zeile) (\d+)\))? = ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"): ")
IN_SOURCE = re.compile(r" \(in (?:the source|der Quelle): (\S+), (?:line|Zeile) (\d+)\)$")


def _refusal(source, to: str, spec: str | None, profile: str | None) -> ApiError:
    with pytest.raises(ApiError) as refused:
        convert(source.read_bytes(), to, spec, profile)
    assert refused.value.error_code == "CONVERSION_LOSS", refused.value.message
    return refused.value


def _said(message: str, place: re.Pattern) -> tuple[tuple, str]:
    """(where the entry is: place, line and value; what is said of it)."""
    found = place.search(message)
    assert found, message
    return found.groups(), message[:found.start()] + message[found.end():]


def _reason(english: str, german: str) -> str:
    """The German said of an entry, after checking that it names the same place (and value) as the English."""
    place = PLACE if PLACE.match(english) else IN_SOURCE
    where, said = _said(english, place)
    where_de, said_de = _said(german, place)
    assert where == where_de, (english, german)
    return said_de


def _german(text: str) -> None:
    assert not ENGLISH.search(text), text


@pytest.mark.parametrize("source, to, spec, profile, terms, english, german", CASES,
                         ids=[f"{c[0].stem}-{c[1]}-{c[5][:24]}" for c in CASES])
def test_each_entry_says_its_own_reason_in_german(source, to, spec, profile, terms, english, german):
    err = _refusal(source, to, spec, profile)
    entries = [e for e in err.errors if english in e.message]
    assert entries, [e.message for e in err.errors]
    assert all(e.messageDe for e in err.errors), [e.message for e in err.errors if not e.messageDe]
    for entry in entries:
        said = _reason(entry.message, entry.messageDe)
        assert german in said, said
        _german(said)
        for term in terms:   # named by the German list (its words, declined), before its id
            name = bt_name(term, "de")
            assert name and all(word[:-2].lower() in said.lower() for word in name.split(" (")[0].split()
                                if len(word) > 3), (term, name, said)
    # the English stays as it was, every entry of the refusal in German
    for entry in err.errors:
        _german(_reason(entry.message, entry.messageDe))


@pytest.mark.parametrize("source, to, spec, reasons", [
    (ELEKTRON, "UBL", None, 1),                 # a department UBL has no place for
    (PAYMENTS_APART, "CII", "en16931", 3),      # third-party payments outside the amount due
])
def test_allow_loss_hands_back_each_reason_in_german_too(source, to, spec, reasons):
    done = convert(source.read_bytes(), to, spec, allow_loss=True)
    with_reason = [u for u in done.losses if "reason" in u]
    assert len(with_reason) == reasons == len(done.losses), done.losses
    for loss in with_reason:
        _german(loss["reasonDe"])
        assert loss["reasonDe"] != loss["reason"]
    # the entries as a job's report and the page list them: each in German
    for entry in loss_details(done.losses):
        _german(_reason(entry.message, entry.messageDe))


def test_a_german_job_report_says_the_reason_not_the_codes_sentence():
    """A convert job's document refused with CONVERSION_LOSS: its JSON line carries the German of each entry, and
    the job's page for people in German says the reason, in German only."""
    operation, options = job_document.check_options({"operation": "convert", "to": "UBL"})
    done = job_document.work(operation, options, ELEKTRON.name, ELEKTRON.read_bytes())
    assert done.kind == "error"
    entry = json.loads(done.line)
    [detail] = with_german(entry["error"])["errors"]
    assert detail["code"] == "NOT_CARRIED" and "UBL's contact has one name" in detail["message"]
    assert "ein Kontakt hat in UBL nur einen Namen" in detail["messageDe"], detail
    page = refusal_page(entry, "de").decode("utf-8")
    text = " ".join(re.sub(r"<[^>]+>", " ", page).split())
    assert "ein Kontakt hat in UBL nur einen Namen, den der Kontaktstelle (BT-41, BT-56)" in text, text
    assert "UBL's contact" not in text and "would not have it" not in text and "keinen Platz für diese Angabe" \
        not in text, text


def test_a_second_invoice_file_is_said_in_german_too():
    """A ZUGFeRD PDF with a second invoice file of other content: its entry says itself (FX_SECOND_INVOICE), in
    German as well."""
    from test_convert_losses import PDF, _with_second_invoice

    data, _ = _with_second_invoice(PDF.read_bytes())
    with pytest.raises(ApiError) as refused:
        convert(data, "UBL")
    [entry] = refused.value.errors
    assert entry.code == "FX_SECOND_INVOICE" and "xrechnung.xml" in entry.messageDe, entry
    _german(entry.messageDe.replace("'xrechnung.xml'", ""))
