"""Rewrites of the optimised copies for a typical invoice (`pipeline.check.optimise`, TRANSFORM /15): local-name
suffix tests with `contains` in front (`pipeline.check.suffixes`), a SchXslt rule's findings written where they are
made once the report is unassembled (and its pattern elements left out), and the sibling-position map asked only
under a wide parent. Each runs in
Saxon as the original form and as the rewritten one on crafted documents with the same output; the corpus proof
(tests/test_rules_optimised.py) runs every official stylesheet so rewritten on every corpus document."""
from __future__ import annotations

import itertools

import pytest
from lxml import etree

from conftest import RULES_SOURCE
from pipeline import saxon
from pipeline.check import optimise, suffixes

XSL = "http://www.w3.org/1999/XSL/Transform"
_counter = itertools.count()


def _stylesheet(body: str) -> etree._Element:
    return etree.fromstring(f'''<xsl:stylesheet version="3.0" xmlns:xsl="{XSL}" xmlns:ram="urn:r"
        xmlns:svrl="http://purl.oclc.org/dsdl/svrl" xmlns:schxslt="https://doi.org/10.5281/zenodo.1495494">
        {body}</xsl:stylesheet>''')


def _run(root, document: str) -> list[str]:
    """The stylesheet's output items, as strings, on the document."""
    text = etree.tostring(root, encoding="unicode")
    exe = saxon.compile_generated(("test-cheaper", next(_counter)), lambda: text)
    found = exe.transform_to_value(xdm_node=saxon.parse(document))
    return [] if found is None else [found.item_at(i).string_value for i in range(found.size)]


_SUFFIX_RULES = '''
  <xsl:template match="/"><xsl:apply-templates mode="M" select="{select}"/></xsl:template>
  <xsl:template match="//ram:*[ends-with(local-name(), 'ID')]" mode="M" priority="3">
    <xsl:sequence select="'id:' || local-name()"/></xsl:template>
  <xsl:template match="//*[ends-with(local-name(), 'Parameter')]" mode="M" priority="2">
    <xsl:sequence select="'parameter:' || name()"/></xsl:template>
  <xsl:template match="//ram:*[ends-with(local-name(), 'Amount') and not(self::ram:TaxAmount)]" mode="M" priority="1">
    <xsl:sequence select="'amount:' || local-name()"/></xsl:template>'''
_SUFFIX_SELECT = ("//ram:*[let $n := local-name() return (ends-with($n, 'ID') or (ends-with($n, 'Amount') and "
                  "not(self::ram:TaxAmount)))] | //*[ends-with(local-name(), 'Parameter')]")
# names ending in the suffix, holding it elsewhere, twice, not at all, in another namespace, equal to it
_SUFFIX_DOCUMENT = '''<ram:Root xmlns:ram="urn:r" xmlns:o="urn:o"><ram:ID/><ram:GlobalID/><ram:IDCode/><ram:XIDY/>
  <ram:IDID/><o:ID/><ram:Amount/><ram:TaxAmount/><ram:AmountDue/><ram:LineTotalAmount/><o:BusinessParameter/>
  <ram:GuidelineParameter/><ram:ParameterX/><ram:Parameters/><ram:Name>ID</ram:Name></ram:Root>'''


def test_suffix_tests_get_contains_in_front_with_the_same_nodes_matched():
    original = _stylesheet(_SUFFIX_RULES.format(select=_SUFFIX_SELECT))
    copy = _stylesheet(_SUFFIX_RULES.format(select=_SUFFIX_SELECT))
    assert suffixes.contains_first(copy) == 6  # three match patterns; in the select two of the scan, one alone
    apply = copy.find(f".//{{{XSL}}}apply-templates")
    assert apply.get("select").startswith("//ram:*[let $n := local-name() return ((contains($n, 'ID') and "
                                          "ends-with($n, 'ID')) or ")
    want = _run(original, _SUFFIX_DOCUMENT)
    assert want == ["id:ID", "id:GlobalID", "id:IDID", "amount:Amount", "amount:LineTotalAmount",
                    "parameter:o:BusinessParameter", "parameter:ram:GuidelineParameter"]
    assert _run(copy, _SUFFIX_DOCUMENT) == want


def test_a_suffix_test_of_another_variable_or_outside_the_rules_is_left_alone():
    root = _stylesheet('''
      <xsl:template match="/"><xsl:apply-templates mode="M"
          select="//*[let $n := name() return ends-with($n, 'ID')] | //*[let $n := local-name(), $name := 'x'
                  return ends-with($name, 'ID')]"/>
        <xsl:sequence select="//*[ends-with(local-name(), 'ID')]"/></xsl:template>
      <xsl:template match="*[ends-with(local-name(), 'ID')]"/>
      <xsl:template match="*[@a = &quot;ends-with(local-name(), 'ID')&quot;]" mode="M"/>''')
    before = etree.tostring(root)
    # $n is name() / $name is another variable / no mode: not a rule / the words inside a string literal
    assert suffixes.contains_first(root) == 0
    assert etree.tostring(root) == before


_SCHXSLT_RULE = '''<xsl:template match="{match}" priority="1" mode="M">
      <xsl:variable name="schxslt-optimised-found" as="node()*">
        <xsl:variable name="v" select="ram:Amount"/>
        <xsl:if test="not($v)"><svrl:failed-assert location="{{local-name()}}" id="R1"><svrl:text>no amount</svrl:text>
          </svrl:failed-assert></xsl:if>
        <xsl:if test="not(ram:ID)"><svrl:failed-assert location="{{local-name()}}" id="R2"><svrl:text>no id</svrl:text>
          </svrl:failed-assert></xsl:if>
      </xsl:variable>
      <xsl:if test="exists($schxslt-optimised-found)"><schxslt:rule pattern="p"><xsl:sequence
        select="$schxslt-optimised-found"/></schxslt:rule></xsl:if>
    </xsl:template>'''
_REPORT = '''<xsl:template match="/"><xsl:variable name="svrl"><svrl:schematron-output>
      <xsl:apply-templates mode="M" select="//ram:Line | //ram:Header"/></svrl:schematron-output></xsl:variable>
      <xsl:sequence select="for $a in $svrl//svrl:failed-assert return ($a/@id || '@' || $a/@location || ':' || $a)"/>
    </xsl:template>'''


def test_findings_written_directly_come_in_the_same_order_with_the_same_content():
    body = _REPORT + _SCHXSLT_RULE.format(match="ram:Line") + _SCHXSLT_RULE.format(match="ram:Header")
    original, copy = _stylesheet(body), _stylesheet(body)
    assert optimise._written_directly(copy) == 2
    assert not list(copy.iter("{https://doi.org/10.5281/zenodo.1495494}rule"))
    document = '''<ram:Root xmlns:ram="urn:r"><ram:Header><ram:ID/></ram:Header><ram:Line><ram:Amount/></ram:Line>
      <ram:Line/><ram:Line><ram:ID/><ram:Amount/></ram:Line></ram:Root>'''
    want = _run(original, document)
    assert want == ["R1@Header:no amount", "R2@Line:no id", "R1@Line:no amount", "R2@Line:no id"]
    assert _run(copy, document) == want


def test_a_variable_of_another_shape_is_not_unwrapped():
    rule = _SCHXSLT_RULE.format(match="ram:Line")
    shapes = [rule.replace('test="exists($schxslt-optimised-found)"', 'test="true()"'),  # another guard
              rule.replace('<xsl:variable name="v"', 'text<xsl:variable name="v"')]  # text inside the variable
    for shape in shapes:
        root = _stylesheet(shape)
        assert optimise._written_directly(root) == 0


@pytest.fixture(scope="module")
def xrechnung_cii():
    return next(RULES_SOURCE.rglob("XRechnung-CII-validation.xsl")).read_bytes()


def test_the_positions_map_is_asked_only_under_a_wide_parent(xrechnung_cii):
    """The map of wide parents' children is a global variable, evaluated on its first use: the copy's location
    asks it only for a node whose parent has more than 32 element children (the only nodes it holds), so a
    document with findings under narrow parents only never builds it. Locations under both kinds of parent are
    compared with the originals' in tests/test_rules_optimised.py (80 lines, and the corpus)."""
    made, rewrites = optimise.optimise_stated(xrechnung_cii)
    assert rewrites["sibling-positions"] == 1 and rewrites["findings-written-directly"] > 0
    copy = etree.fromstring(made)
    # the report's pattern elements (each only an attribute with base-uri(root())) are left out: nothing reads them
    assert rewrites["pattern-elements-dropped"] == 7
    assert not list(copy.iter("{https://doi.org/10.5281/zenodo.1495494}pattern"))
    when = copy.find(f"{{{XSL}}}function[@name='schxslt:location']//{{{XSL}}}when")
    assert when.get("test") == ("if (exists(../*[33])) then exists($schxslt-optimised-positions(generate-id(.))) "
                                "else false()")
