"""The names the readable page and the JSON give France's lifecycle codes are the published ones: what FNFE's official
examples write beside a code (MDT-106 for a status, MDT-122 for an action, MDT-114 for a reason) is the name our
tables give it, and the code lists named are those the BR-FR-CDV rules close (no name for a code the rules refuse,
no code of theirs left without one). Several names had been written by us: 204 "In hand", MAJ "Majoration" (it is a
value to use instead of the invoice's), CNF "Émettre un avoir total" (the example writes "Créer un Avoir total")."""
from __future__ import annotations

import re

import pytest
from lxml import etree

from cdar_cases import NS, PACK, examples
from pipeline.flows import status_read
from pipeline.invoice import cdar, france

SCH = PACK / "sch" / "BR-FR-CDV-Schematron-CDAR.sch"


def _texts(path, xpath: str) -> list[str]:
    return [" ".join(t.split()) for t in etree.parse(str(path)).xpath(xpath, namespaces=NS)]


@pytest.mark.parametrize("path", examples(), ids=lambda p: p.name)
def test_what_an_official_example_writes_beside_a_code_is_our_name_for_it(path):
    rrd = "//ram:ReferenceReferencedDocument"
    [code] = _texts(path, f"{rrd}/ram:ProcessConditionCode/text()")
    [written] = _texts(path, f"{rrd}/ram:ProcessCondition/text()")
    assert written.replace("_", " ") == cdar.STATUS_NAMES[code][0]   # FNFE's file-name style: "Prise_en_charge"
    status = f"{rrd}/ram:SpecifiedDocumentStatus"
    for code, name in zip(_texts(path, f"{status}/ram:RequestedActionCode/text()"),
                          _texts(path, f"{status}/ram:RequestedAction/text()")):
        assert name == cdar.ACTIONS[code][0]
    for code, name in zip(_texts(path, f"{status}/ram:ReasonCode/text()"), _texts(path, f"{status}/ram:Reason/text()")):
        assert name == cdar.REASONS[code][0]


def _closed_list(rule_id: str) -> set[str]:
    """The codes a BR-FR-CDV assert of the pack accepts: its test's quoted values, or those of the list the custom
    function it calls tokenizes."""
    sch = SCH.read_text(encoding="utf-8")
    test = re.search(r'<assert test="([^"]*)"\s+flag="fatal"\s+id="' + re.escape(rule_id) + '"', sch).group(1)
    called = re.match(r"custom:([\w-]+)\(", test)
    if called:
        return set(_function_list(called.group(1)))
    return set(re.findall(r"'([A-Z0-9_]+)'", test))


def _function_list(function: str) -> list[str]:
    """The codes of the list a custom function of the pack tokenizes (`is-valid-invoice-status-code`)."""
    sch = SCH.read_text(encoding="utf-8")
    return re.search(r'name="custom:' + function + r'".*?select="\'([^\']*)\'"', sch, re.S).group(1).split()


@pytest.mark.parametrize("rule_id, table", [("BR-FR-CDV-CL-10_MDT-121", cdar.ACTIONS),
                                            ("BR-FR-CDV-CL-11_MDT-207", cdar.CHARACTERISTICS)])
def test_every_code_of_a_closed_list_has_a_name_and_no_other_code_does(rule_id, table):
    assert _closed_list(rule_id) == set(table)


def test_the_billing_frames_named_are_frames_of_br_fr_08():
    assert set(cdar.BILLING_FRAME_NAMES) <= set(france.BILLING_FRAMES)
    assert {"B9", "S9", "M9"}.isdisjoint(cdar.BILLING_FRAME_NAMES)   # in the rules' list, unnamed in XP Z12-012


def test_the_corrected_names_reach_the_json_of_a_read_message():
    """A 207 read back names its action and its data types as published, in the three languages."""
    [path] = [p for p in examples() if "207" in p.name]
    names = status_read.parse_status(path.read_bytes())["names"]
    assert names["status.details[0].actionCode"]["fr"] == "Créer un Avoir total"
    assert names["status.details[0].characteristics[0].typeCode"] == {
        "code": "DIV", "fr": "Donnée INVALIDE", "en": "Invalid value", "de": "Ungültiger Wert"}
    assert cdar.CHARACTERISTICS["MAJ"][0].startswith("Donnée à prendre en compte à la place de celle présente")
    assert cdar.STATUS_NAMES["204"] == ("Prise en charge", "In process")


def test_each_status_the_rule_texts_name_has_their_name():
    """BR-FR-CDV-CL-09 names the status whose reason list it checks ("pour le statut ERREUR_ROUTAGE (221)"): our
    French name is that name, spelt out (accents, case and underscores aside; 207's "LITIGE" is "En litige")."""
    sch = SCH.read_text(encoding="utf-8")
    named = set(re.findall(r"pour le statut ([^()]+?) \((\d{3})\)", sch))
    assert {code for _, code in named} == {"200", "206", "207", "208", "210", "213", "221", "501"}
    for name, code in named:
        ours = cdar._folded(cdar.STATUS_NAMES[code][0])
        theirs = cdar._folded(name.removesuffix(" B2G"))   # the State's refusal list, the same status 210
        assert ours == theirs or ours.endswith(" " + theirs), (code, name, cdar.STATUS_NAMES[code])


def test_the_status_codes_named_are_those_of_the_rules_list_but_the_unpublished_ones():
    """Every status the rules accept has a name but those whose name no published text gives (a page shows their
    code alone, a request must name them); no code outside the list has one."""
    accepted = set(_function_list("is-valid-invoice-status-code"))   # BR-FR-CDV-CL-06, a warning
    assert accepted == set(cdar.STATUS_CODES)
    assert accepted - set(cdar.STATUS_NAMES) == {"250", "251", "300", "301", "400", "401", "500", "601"}
    assert set(cdar.STATUS_NAMES) <= accepted

