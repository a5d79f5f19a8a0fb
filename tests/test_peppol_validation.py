"""Peppol BIS Billing 3.0 (rule pack `peppol` 2026.5): the pack as installed, the release in force on a document's
issue date, validation of the release's examples as the official rules judge them when run on their own, examples
mutated to break one Peppol rule each, OpenPEPPOL's rule unit tests through our engine, and the endpoints."""
from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import falcon.testing
import pytest
from lxml import etree

from conftest import CORPUS, RULES_SOURCE, SHARED
from pipeline import saxon
from pipeline.check import engine, packs, xmlinput
from pipeline.flows.validate_xml import validate
from pipeline.service.app import create_app
from test_rules import install_served
from test_validate_endpoints import multipart, post

PEPPOL_RULES = RULES_SOURCE / "peppol" / "2026.5"
UBL_XSD = RULES_SOURCE / "en16931" / "1.3.16" / "ubl" / "schema" / "xsd" / "maindoc"
EXAMPLES = sorted((CORPUS / "peppol" / "2026.5").rglob("*.xml")) + sorted((SHARED / "realworld" / "peppol-bis3")
                                                                           .rglob("*.xml"))
VALID_EXAMPLES = sorted((CORPUS / "peppol" / "2026.5").rglob("*.xml")) + sorted(
    (SHARED / "realworld" / "peppol-bis3" / "examples").glob("*.xml"))
UNITS = CORPUS / "peppol" / "openpeppol-78d7f7d"
SELF_BILLING = "urn:cen.eu:en16931:2017#compliant#urn:fdc:peppol.eu:2017:poacc:selfbilling:3.0"
NS = {"cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
      "cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2"}
SVRL = "{http://purl.oclc.org/dsdl/svrl}"
VEFA = "{http://difi.no/xsd/vefa/validator/1.0}"
CII = CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml"


def _name(path: Path) -> str:
    return path.relative_to(SHARED).as_posix()


# ---------------------------------------------------------------- the official rules on their own

_compiled: dict = {}


def _official_findings(data: bytes) -> tuple[bool, set[tuple[str, str]]]:
    """(XSD valid, {(rule id, ERROR | WARNING)}) of a UBL document by the official files alone: the OASIS XSD in
    lxml, then the release's original compiled stylesheets (CEN, then PEPPOL or, for a self-billing
    CustomizationID, PEPPOL-SB) to SVRL in Saxon, read back with lxml. None of our engine takes part."""
    tree = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
    kind = etree.QName(tree).localname
    schema = etree.XMLSchema(etree.parse(str(UBL_XSD / f"UBL-{kind}-2.1.xsd")))
    peppol = "PEPPOL-EN16931-UBL-SB.xslt" if (tree.findtext("cbc:CustomizationID", namespaces=NS) or "").strip() \
        == SELF_BILLING else "PEPPOL-EN16931-UBL.xslt"
    found = set()
    for sheet in ("CEN-EN16931-UBL.xslt", peppol):
        if sheet not in _compiled:
            _compiled[sheet] = saxon.processor().new_xslt30_processor().compile_stylesheet(
                stylesheet_file=str(PEPPOL_RULES / "xslt" / sheet))
        svrl = etree.fromstring(_compiled[sheet].transform_to_string(
            xdm_node=saxon.processor().parse_xml(xml_text=data.decode("utf-8"))).encode("utf-8"))
        for finding in svrl.iter(SVRL + "failed-assert", SVRL + "successful-report"):
            found.add((finding.get("id"), "WARNING" if finding.get("flag") in ("warning", "information")
                       else "ERROR"))
    return schema.validate(tree), found


def _ours(data: bytes) -> tuple[bool, set[tuple[str, str]], str | None]:
    outcome = validate(data, "peppol", content_checks=False)
    issues = outcome.report.issues
    xsd_ok = not [i for i in issues if i.code.startswith(engine.XSD_PREFIX)]
    return xsd_ok, {(i.code, i.severity) for i in issues if not i.code.startswith(engine.XSD_PREFIX)}, outcome.scenario


# ---------------------------------------------------------------- the pack

def test_the_pack_is_installed_with_the_ubl_schemas_its_copies_and_its_date():
    pack = packs.in_force("peppol", "UBL-Invoice", date(2026, 11, 26))
    assert (pack.spec, pack.version, pack.valid_from) == ("peppol", "2026.5", date(2026, 8, 17))
    assert set(pack.syntaxes) == {"UBL-Invoice", "UBL-CreditNote"}  # no compiled CII rules in this release
    for syntax, rules in pack.syntaxes.items():
        assert rules.xsd.read_bytes() == (UBL_XSD / rules.xsd.name).read_bytes()
        assert [s.name for s in rules.stylesheets] == ["CEN-EN16931-UBL.xslt", "PEPPOL-EN16931-UBL.xslt"]
    [variant] = pack.variants
    assert variant.specification_ids == (SELF_BILLING,)
    assert [s.name for s in variant.stylesheets] == ["CEN-EN16931-UBL.xslt", "PEPPOL-EN16931-UBL-SB.xslt"]
    for sheet in {*variant.stylesheets, *pack.rules_for("UBL-Invoice").stylesheets}:
        assert sheet.read_bytes() == (PEPPOL_RULES / "xslt" / sheet.name).read_bytes()
        assert pack.runnable(sheet) != sheet and pack.runnable(sheet).is_file()  # an optimised copy runs
    official = json.loads((PEPPOL_RULES / "VERSION.json").read_text("utf-8"))
    assert official["mandatoryFrom"] == pack.valid_from.isoformat()


@pytest.fixture()
def two_releases(tmp_path):
    """A registry with the Peppol release under two versions and dates (same official files), installed."""
    real = next(e for e in packs.load_registry() if e["spec"] == "peppol")
    registry = tmp_path / "packs.json"
    registry.write_text(json.dumps({"packs": [
        {**real, "version": "2025.11", "validFrom": "2025-11-17"},
        {**real, "version": "2026.5", "validFrom": "2026-08-17"},
        {**real, "version": "2027.5", "status": "deprecated", "validFrom": "2027-08-16"},
    ]}))
    home = tmp_path / "home"
    packs.install(RULES_SOURCE, registry=registry, rules_home=home, optimise=False)
    return registry, home


@pytest.mark.parametrize("day, version", [
    (date(2025, 11, 17), "2025.11"), (date(2026, 8, 16), "2025.11"), (date(2026, 8, 17), "2026.5"),
    (date(2030, 1, 1), "2026.5"),  # the deprecated release is never in force
    (date(2020, 1, 1), "2025.11"),  # before every release: the earliest we have
])
def test_the_release_in_force_on_the_date_is_chosen(two_releases, day, version):
    registry, home = two_releases
    assert packs.in_force("peppol", "UBL-Invoice", day, registry=registry, rules_home=home).version == version
    assert packs.several_active("peppol", "UBL-Invoice", registry=registry, rules_home=home)


def test_validation_without_version_reads_the_issue_date_when_several_releases_are_installed(two_releases,
                                                                                            monkeypatch):
    registry, home = two_releases
    monkeypatch.setattr(packs, "REGISTRY_PATH", registry)
    monkeypatch.setenv("EINVOICE_RULES_HOME", str(home))
    from pipeline.settings import get_settings
    get_settings.cache_clear()
    packs._listed.clear(), packs._latest.clear()
    try:
        data = (CORPUS / "peppol/2026.5/billing/base-example.xml").read_bytes()
        issued = etree.fromstring(data).findtext("cbc:IssueDate", namespaces=NS)
        assert validate(data, "peppol").report.version == ("2026.5" if issued >= "2026-08-17" else "2025.11")
        for day, version in (("2026-01-31", "2025.11"), ("2026-09-01", "2026.5")):
            dated = data.replace(f"<cbc:IssueDate>{issued}<".encode(), f"<cbc:IssueDate>{day}<".encode(), 1)
            assert engine.issue_date(xmlinput.load(dated)) == date.fromisoformat(day)
            assert validate(dated, "peppol").report.version == version
        assert validate(data, "peppol", "2026.5").report.version == "2026.5"  # a version asked for wins
    finally:
        get_settings.cache_clear()
        packs._listed.clear(), packs._latest.clear(), packs._loaded.clear()


def test_the_issue_date_of_a_cii_document_is_read_from_its_format_102():
    doc = xmlinput.load(CII.read_bytes())
    text = doc.tree.getroot().xpath("//*[local-name()='IssueDateTime']/*/text()")[0]
    assert engine.issue_date(doc) == date(int(text[:4]), int(text[4:6]), int(text[6:8]))


# ---------------------------------------------------------------- the examples

@pytest.mark.parametrize("path", EXAMPLES, ids=_name)
def test_every_example_gets_the_official_verdict_and_findings(path):
    data = path.read_bytes()
    xsd_ok, official = _official_findings(data)
    ours_xsd_ok, ours, scenario = _ours(data)
    assert (ours_xsd_ok, ours) == (xsd_ok, official)
    assert (scenario == "self-billing") == (b"poacc:selfbilling:3.0" in data)


def test_the_release_examples_are_valid():
    for path in VALID_EXAMPLES:
        report = validate(path.read_bytes(), "peppol").report
        assert report.valid and report.version == "2026.5" and report.syntax == "UBL", _name(path)


def _remove(xpath):
    def mutate(root):
        for e in root.xpath(xpath, namespaces=NS):
            e.getparent().remove(e)
    return mutate


def _empty_city(root):
    [city] = root.xpath("cac:AccountingSupplierParty/cac:Party/cac:PostalAddress/cbc:CityName", namespaces=NS)
    city.text = ""


def _email_scheme(root):
    # EM is in the CEN EAS list (BR-CL-25 holds) but not in Peppol's: only Peppol's code list rule fails
    root.find("cac:AccountingSupplierParty/cac:Party/cbc:EndpointID", NS).set("schemeID", "EM")


def _second_note(root):
    notes = root.findall("cbc:Note", NS)
    if not notes:
        first = etree.Element(f"{{{NS['cbc']}}}Note")
        first.text = "first"
        after = root.find("cbc:TaxPointDate", NS)
        (after if after is not None else root.find("cbc:DocumentCurrencyCode", NS)).addprevious(first)
        notes = [first]
    second = etree.Element(f"{{{NS['cbc']}}}Note")
    second.text = "second"
    notes[-1].addnext(second)


MUTATIONS = {
    "seller endpoint id removed": (_remove("cac:AccountingSupplierParty/cac:Party/cbc:EndpointID"),
                                   "PEPPOL-EN16931-R020"),
    "buyer endpoint id removed": (_remove("cac:AccountingCustomerParty/cac:Party/cbc:EndpointID"),
                                  "PEPPOL-EN16931-R010"),
    "buyer reference and order reference missing": (_remove("cbc:BuyerReference | cac:OrderReference"),
                                                    "PEPPOL-EN16931-R003"),
    "an empty element": (_empty_city, "PEPPOL-EN16931-R008"),
    "an EAS code Peppol does not take": (_email_scheme, "PEPPOL-EN16931-CL008"),
    "a second note": (_second_note, "PEPPOL-EN16931-R002"),
}


@pytest.mark.parametrize("mutation", MUTATIONS)
@pytest.mark.parametrize("path", VALID_EXAMPLES, ids=_name)
def test_a_mutated_example_fails_exactly_the_rule_it_breaks(path, mutation):
    mutate, rule = MUTATIONS[mutation]
    root = etree.fromstring(path.read_bytes())
    mutate(root)
    data = etree.tostring(root, xml_declaration=True, encoding="UTF-8")
    report = validate(data, "peppol").report
    assert not report.valid
    assert {i.code for i in report.issues if i.severity == "ERROR"} == {rule}
    # and the official rules alone agree
    xsd_ok, official = _official_findings(data)
    assert xsd_ok and {r for r, severity in official if severity == "ERROR"} == {rule}


# ---------------------------------------------------------------- OpenPEPPOL's rule unit tests

# Expectations of the unit tests (written for the 2025-05 release) that the 2026.5 rules no longer meet, and why:
# DK-R-003 (Danish suppliers' UNSPSC item classification version) was a warning and is flag="fatal" in the 2026.5
# PEPPOL-EN16931-UBL.sch, so the three <warning>DK-R-003</warning> cases now find an error.
MOVED = {("unit-UBL-DK/DK_Validation_DKR003.xml", n): ("DK-R-003", "WARNING", "ERROR") for n in (10, 11, 12)}


def _unit_tests():
    for path in sorted(UNITS.glob("unit-UBL-*/*.xml")):
        tests = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True)).getroot()
        for n, test in enumerate(tests.iterfind(VEFA + "test"), 1):
            [document] = [c for c in test if isinstance(c.tag, str) and c.tag != VEFA + "assert"]
            expected = [(e.tag[len(VEFA):], e.text.strip()) for e in test.find(VEFA + "assert")
                        if isinstance(e.tag, str) and e.tag in (VEFA + "success", VEFA + "error", VEFA + "warning")]
            yield path.relative_to(UNITS).as_posix(), n, etree.tostring(document), expected


def test_openpeppol_unit_tests_hold_on_our_engine():
    """Each <test> fragment through the pack's PEPPOL stylesheet as the engine runs it (the optimised copy; the
    copies' equality with the originals is tests/test_rules_optimised.py's): <success> = the rule finds nothing,
    <error> / <warning> = it finds the fragment with that severity."""
    pack = packs.in_force("peppol", "UBL-Invoice", None)
    sheet = pack.runnable(pack.rules_for("UBL-Invoice").stylesheets[1])
    checked, moved = 0, set()
    for name, n, data, expected in _unit_tests():
        doc = xmlinput.load(data)
        found = {(i.code, i.severity) for i in engine.schematron_issues(engine.saxon_document(doc), sheet, None, doc)}
        codes = {code for code, _ in found}
        for kind, rule in expected:
            if (name, n) in MOVED and MOVED[name, n][0] == rule:
                _, was, now = MOVED[name, n]
                assert kind == was.lower() and (rule, now) in found and (rule, was) not in found, (name, n)
                moved.add((name, n))
                continue
            if kind == "success":
                assert rule not in codes, (name, n, rule)
            else:
                assert (rule, kind.upper()) in found, (name, n, kind, rule, sorted(codes))
            checked += 1
    assert moved == set(MOVED)
    assert checked >= 540  # 552 expectations in 159 test sets, the 3 moved ones apart


def test_the_moved_rule_is_fatal_in_the_release_sources():
    sch = etree.parse(str(PEPPOL_RULES / "sch" / "PEPPOL-EN16931-UBL.sch"))
    [rule] = sch.xpath("//*[local-name()='assert'][@id='DK-R-003']")
    assert rule.get("flag") == "fatal"


# ---------------------------------------------------------------- the endpoints

@pytest.fixture(scope="module")
def client():
    return falcon.testing.TestClient(create_app(platform=False))


def test_the_endpoint_validates_an_invoice_and_a_self_billing_credit_note(client):
    for path in (CORPUS / "peppol/2026.5/billing/base-example.xml",
                 CORPUS / "peppol/2026.5/SB-base-creditnote-correction.xml"):
        r = post(client, "/v1/invoice/peppol/validate", file=path.read_bytes(), request="{}")
        assert r.status_code == 200, r.text
        assert r.json["valid"] is True and r.json["version"] == "2026.5" and r.json["syntax"] == "UBL"


def test_the_report_locates_findings_and_names_business_terms(client):
    root = etree.fromstring((CORPUS / "peppol/2026.5/billing/base-example.xml").read_bytes())
    _remove("cac:AccountingCustomerParty/cac:Party/cbc:EndpointID")(root)
    r = post(client, "/v1/invoice/peppol/validate", file=etree.tostring(root), request="{}")
    assert r.status_code == 200 and r.json["valid"] is False
    [issue] = [i for i in r.json["issues"] if i["severity"] == "ERROR"]
    assert issue["code"] == "PEPPOL-EN16931-R010" and issue["location"]["line"] > 1
    html = post(client, "/v1/invoice/peppol/validate", headers={"Accept": "text/html"}, file=etree.tostring(root),
                request="{}")
    assert html.status_code == 200 and "PEPPOL-EN16931-R010" in html.text
    assert "BT-49" in html.text  # the rule's business term, named for people
    pdf = post(client, "/v1/invoice/peppol/validate", headers={"Accept": "application/pdf"},
               file=etree.tostring(root), request='{"metadataLanguage": "de"}')
    assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")


def test_a_cii_upload_is_refused_saying_the_release_has_no_cii_rules(client):
    r = post(client, "/v1/invoice/peppol/validate", file=CII.read_bytes(), request="{}")
    assert r.status_code == 400 and r.json["errorCode"] == "UNSUPPORTED_SYNTAX"
    assert "CII" in r.json["message"] and "2026.5" in r.json["message"]


def test_the_batch_endpoint_reports_each_document_and_refuses_a_cii_member_alone(client):
    import io
    import zipfile

    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("a.xml", (CORPUS / "peppol/2026.5/billing/base-example.xml").read_bytes())
        zf.writestr("b.xml", CII.read_bytes())
        zf.writestr("c.xml", (CORPUS / "peppol/2026.5/SB-base-example.xml").read_bytes())
    body, ctype = multipart(file=archive.getvalue())
    r = client.simulate_post("/v1/invoice/peppol/validate/batch", body=body, headers={"Content-Type": ctype})
    assert r.status_code == 200, r.text
    results = {e["name"]: e for e in r.json["results"]}
    assert results["a.xml"]["report"]["valid"] and results["c.xml"]["report"]["version"] == "2026.5"
    assert results["b.xml"]["error"]["code"] == "UNSUPPORTED_SYNTAX"
    assert r.json["summary"]["valid"] == 2


def test_the_command_line_validates_on_the_peppol_rules(tmp_path):
    import subprocess
    import sys

    run = lambda *a: subprocess.run([sys.executable, "-m", "pipeline", "validate", "--spec", "peppol", *a],  # noqa
                                    capture_output=True, text=True, timeout=300)
    ok = run(str(CORPUS / "peppol/2026.5/SB-base-example.xml"))
    assert ok.returncode == 0 and "scenario 'self-billing'" in ok.stdout and "2026.5" in ok.stdout
    cii = run(str(CII))
    assert cii.returncode == 2 and "UNSUPPORTED_SYNTAX" in cii.stderr


def test_the_download_path_installs_the_pinned_release(tmp_path):
    """The registry's downloads, against a local server holding archives shaped as the releases: a commit archive
    of phive-rules (its top folder named after the full commit id, matched by `*/`) and the OASIS UBL 2.1 zip."""
    import zipfile

    top = "phive-rules-432f0e9a" + "0" * 32 + "/"
    serve = tmp_path / "www"
    serve.mkdir()
    with zipfile.ZipFile(serve / "phive.zip", "w") as zf:
        for sheet in (PEPPOL_RULES / "xslt").iterdir():
            zf.write(sheet, top + "phive-rules-peppol/src/main/resources/external/schematron/openpeppol/2026.5/xslt/"
                     + sheet.name)
        for sch in (PEPPOL_RULES / "sch").iterdir():
            zf.write(sch, top + "phive-rules-peppol/src/test/resources/external/rule-source/openpeppol/2026.5/"
                     + sch.name)
        zf.write(PEPPOL_RULES / "LICENSE-phive-rules", top + "LICENSE")
        zf.write(PEPPOL_RULES / "VERSION.json", top + "README.md")  # not mapped: not installed
    with zipfile.ZipFile(serve / "ubl.zip", "w") as zf:
        for xsd in (UBL_XSD.parent).rglob("*.xsd"):
            zf.write(xsd, "xsd/" + xsd.relative_to(UBL_XSD.parent).as_posix())
    real = next(e for e in packs.load_registry() if e["spec"] == "peppol")
    pack, _ = install_served(real, serve, ["phive.zip", "ubl.zip"], tmp_path)
    assert pack.content_sha256 == real["content_sha256"] and len(pack.optimised) == 3
    assert not (pack.root / "README.md").exists()
