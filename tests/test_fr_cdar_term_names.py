"""The French names of the CDV terms are the published ones: FNFE's official examples write beside each element the
term and its name (`<!-- MDT-113 (Code motif rejet) : TX_TVA_ERR -->`), and the BR-FR-CDV rule texts name the terms
the examples leave unnamed ("Le code de statut de facture (MDT-115)"). Each of our rows is found at its place in the
examples, with the number the comment there gives it and our French name as the comment words it; a later release
wording a term otherwise fails here. Where the rules word a term otherwise than the examples, the examples' name
stands (pipeline.invoice.cdar_terms says where); the one exception is spelling: MDT-124-2, which the examples write
without accents and the rules with them."""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

import pytest
from lxml import etree

from cdar_cases import NS, PACK, examples
from pipeline.invoice import cdar_terms

# `MDT-57t (ID destinataire (global)) : 9998`: the letter marks a repeat (another recipient, a second datum); the name
# may hold parentheses and " : " of its own, the value follows the last ") : " before it.
COMMENT = re.compile(r"^\s*(MD[GT]-\d+(?:-\d+)?)[a-z]?\s*\((.*?)\)\s:\s", re.S)
RULE_TEXTS = [PACK / folder / f"BR-FR-CDV-Schematron-CDAR{kind}.{folder}" for folder in ("sch", "xslt")
              for kind in ("", "_WARNING")]
# Terms the examples do not name and the rule texts do (the name, lower-cased as in a sentence, before "(MDx-n)").
NAMED_BY_RULES = ("MDG-9", "MDG-37", "MDT-115")
SPELT_AS_THE_RULES = ("MDT-124-2",)
# Named by neither: our names (cdar_terms' docstring says why each has its number).
UNNAMED = ("MDG-16", "MDG-23", "MDG-43", "MDT-116", "MDT-126")
# Rows on an element (not a scheme or currency attribute) with a term.
ELEMENT_ROWS = [t for t in cdar_terms.TERMS if t.term and "/@" not in t.cdar]


def _fold(text: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)).lower()


@lru_cache(maxsize=None)
def _written() -> dict[str, set[tuple[str, str]]]:
    """JSON path -> {(term, name)} the examples' comments write beside the elements of the row's place."""
    found: dict[str, set[tuple[str, str]]] = {}
    for path in examples():
        tree = etree.parse(str(path))
        for row in ELEMENT_ROWS:
            for element in tree.xpath(row.cdar, namespaces=NS):
                if len(element.xpath("*")):
                    continue   # a group (MDG-n): the examples comment its data, not the group
                comment = element.getnext()
                assert isinstance(comment, etree._Comment), (path.name, row.json_path)
                match = COMMENT.match(comment.text)
                assert match, comment.text
                found.setdefault(row.json_path, set()).add((match.group(1), " ".join(match.group(2).split())))
    return found


@lru_cache(maxsize=None)
def _terms_commented() -> set[str]:
    return {m.group(1) for path in examples() for comment in etree.parse(str(path)).xpath("//comment()")
            if (m := COMMENT.match(comment.text))}


@lru_cache(maxsize=None)
def _rules() -> list[str]:
    return [" ".join(path.read_text(encoding="utf-8").split()) for path in RULE_TEXTS]


def _in_every_rule_text(name: str, term: str) -> bool:
    phrase = f"{name[0].lower()}{name[1:]} ({term})"
    return all(phrase in text for text in _rules())


def test_every_term_the_examples_comment_is_a_row_found_at_its_place():
    """Not vacuous: each term of ours the examples name was found where the row says it is, under that number."""
    written = _written()
    ours = {t.term for t in ELEMENT_ROWS}
    assert {row.term for row in ELEMENT_ROWS if row.json_path in written} == ours & _terms_commented()
    assert len(written) >= 30
    for path, pairs in written.items():
        assert {term for term, _ in pairs} == {cdar_terms.BY_PATH[path].term}, path


@pytest.mark.parametrize("row", [r for r in ELEMENT_ROWS if r.term not in SPELT_AS_THE_RULES],
                         ids=lambda r: f"{r.term} {r.json_path}")
def test_our_french_name_is_the_examples_name(row):
    names = {name for _, name in _written().get(row.json_path, ())}
    if not names:   # unnamed there: named by the rules (below) or by neither
        assert row.term in NAMED_BY_RULES + UNNAMED
    else:
        assert names == {row.fr}


def test_a_term_spelt_as_the_rules_spell_it_has_the_examples_words():
    """MDT-124-2: "Numero incremental de detail de statut" (and once "Numéro incremental") in the examples, the rules'
    accented words ours. Should the examples write the accents, the exception goes."""
    for term in SPELT_AS_THE_RULES:
        [row] = [r for r in ELEMENT_ROWS if r.term == term]
        names = {name for _, name in _written()[row.json_path]}
        assert row.fr not in names
        assert _fold(row.fr) in {_fold(name) for name in names}
        assert _in_every_rule_text(row.fr, term)


@pytest.mark.parametrize("term", NAMED_BY_RULES)
def test_a_term_the_examples_leave_unnamed_has_the_rules_name(term):
    [row] = [r for r in cdar_terms.TERMS if r.term == term and "/@" not in r.cdar]
    assert term not in _terms_commented()
    assert _in_every_rule_text(row.fr, term), (term, row.fr)


@pytest.mark.parametrize("term", sorted(cdar_terms.RULE_NAMES))
def test_a_term_no_field_carries_has_the_rules_name(term):
    """MDT-132, MDT-158, MDG-4, MDG-35: a rule's label names them as the rules do, not as the field the 422 points
    at (MDT-132 was labelled with MDT-129's name)."""
    fr = cdar_terms.RULE_NAMES[term][0]
    assert _in_every_rule_text(fr, term), (term, fr)
    assert cdar_terms.rule_label(f"BR-FR-CDV-00_{term}", "fr") == f"{term} {fr}"


def test_the_rule_labels_of_reports_carry_the_published_names():
    """What the report for people and a 422 print: the rule's term with the published name, in French."""
    assert cdar_terms.rule_label("BR-FR-CDV-15_MDT-113", "fr") == "MDT-113 Code motif rejet"
    assert cdar_terms.rule_label("BR-FR-CDV-CL-06_MDT-115", "fr") == "MDT-115 Code de statut de facture"
    assert cdar_terms.rule_label("BR-FR-CDV-10_MDT-87", "fr") == "MDT-87 ID objet (BT-1 d'une facture)"
    assert cdar_terms.rule_label("BR-FR-CDV-10_MDT-87", "en") == "MDT-87 Object ID (BT-1 of an invoice)"


@pytest.mark.parametrize("term", UNNAMED)
def test_a_term_named_by_neither_is_named_by_neither(term):
    """Ours only while neither source names it: the examples comment no element with it, no rule text puts it in
    parentheses after a name."""
    assert term not in _terms_commented()
    assert not any(f"({term})" in text for text in _rules())
