"""A finding's code is the identifier the official rules give it, so that a receiver can look it up: the assert's
id; for an assert without one, the rule its text names (`[BR-FXEXT-04]-...`); SCHEMATRON only where the official
rules carry no identifier at all (the Factur-X profile Schematron's reports of a part its profile does not use)."""
from __future__ import annotations

import re

from lxml import etree

from conftest import CORPUS, SHARED
from pipeline.check import engine
from pipeline.flows.validate_pdf import validate_pdf
from pipeline.flows.validate_xml import validate_xml
from pipeline.invoice.specs import PROFILES

SVRL = "{http://purl.oclc.org/dsdl/svrl}"
XSL = "{http://www.w3.org/1999/XSL/Transform}"
RAM = "urn:un:unece:uncefact:data:standard:ReusableAggregateBusinessInformationEntity:100"
EXTENDED_CTC_FR = "urn:cen.eu:en16931:2017#conformant#urn.cpro.gouv.fr:1p0:extended-ctc-fr"
NOT_USED = re.compile(r"^(Attribute|Element) .+ marked as not used in the given context\.$")


def _has_id(element) -> bool:
    return element.get("id") is not None or any(a.get("name") == "id" for a in element.iter(f"{XSL}attribute"))


def test_the_factur_x_profile_reports_carry_no_official_id_at_any_level():
    """Why those findings keep SCHEMATRON: every assert of the five profile Schematrons has an id (FX-SCH-A-*),
    no report, rule or pattern has one."""
    for profile in {p.schematron_path: p for p in PROFILES.values()}.values():
        sheet = etree.parse(str(profile.schematron_path))
        asserts = list(sheet.iter(f"{SVRL}failed-assert"))
        reports = list(sheet.iter(f"{SVRL}successful-report"))
        assert asserts and all(map(_has_id, asserts)), profile.name
        assert reports and not any(map(_has_id, reports)), profile.name
        assert not any(_has_id(e) or e.get("name") for e in sheet.iter(f"{SVRL}active-pattern", f"{SVRL}fired-rule"))


def test_schematron_is_left_only_to_those_reports_on_a_real_invoice():
    report = validate_pdf((SHARED / "realworld/mustang/validator/XMLinvalidV2PDF.pdf").read_bytes())
    unnamed = [i for i in report.issues if i.code == engine.NO_ID]
    assert len(unnamed) == 19
    assert all(NOT_USED.match(i.message) and i.location.line for i in unnamed)
    assert all(re.fullmatch(r"FX-SCH-A-\d{6}", i.code) for i in report.issues if i.code.startswith("FX-"))


def test_an_assert_without_id_is_coded_by_the_rule_its_text_names():
    """EXTENDED-CTC-FR's BR-FXEXT-04 (a product characteristic's type code outside UNTDED 6313) is an assert
    without id whose text starts with its rule."""
    tree = etree.parse(str(CORPUS / "en16931-cen/cii/examples/CII_example1.xml"))
    tree.find(f".//{{{RAM}}}GuidelineSpecifiedDocumentContextParameter/{{{RAM}}}ID").text = EXTENDED_CTC_FR
    product = tree.find(f".//{{{RAM}}}SpecifiedTradeProduct")
    characteristic = etree.SubElement(product, f"{{{RAM}}}ApplicableProductCharacteristic")
    etree.SubElement(characteristic, f"{{{RAM}}}TypeCode").text = "NOT-6313"
    etree.SubElement(characteristic, f"{{{RAM}}}Description").text = "Colour"
    etree.SubElement(characteristic, f"{{{RAM}}}Value").text = "blue"
    report = validate_xml(etree.tostring(tree, xml_declaration=True, encoding="UTF-8"), "fr-ctc")
    found = [i for i in report.issues if i.code == "BR-FXEXT-04"]
    assert len(found) == 1 and found[0].severity == "WARNING", [i.to_dict() for i in report.issues]
    assert found[0].message.startswith("[BR-FXEXT-04]-")
    assert "ApplicableProductCharacteristic" in found[0].location.xpath and found[0].location.line
    assert not [i for i in report.issues if i.code == engine.NO_ID]


def test_an_assert_id_is_kept():
    assert engine.finding_code("BR-CO-10", "[BR-CO-16]-Amount due") == "BR-CO-10"
    assert engine.finding_code("", "Attribute @currencyID' marked as not used in the given context.") == engine.NO_ID
