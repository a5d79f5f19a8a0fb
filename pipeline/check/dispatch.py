"""Per-pattern dispatch: a step of the optimised copies (`pipeline.check.optimise`).

Both compilations find a pattern's rule contexts by walking the whole document: the ISO skeleton applies templates to
every element once per pattern (each pattern a mode, each rule template recursing into the children), SchXslt once
for all patterns (one mode; each node tries every rule's match and goes on with `xsl:next-match`). On a 1,000-line
invoice that is tens of thousands of nodes matched against every rule, of which a few thousand are any rule's
context. The copy applies each pattern's templates once, to the union of its rules' contexts selected from the
root, and the rule templates no longer recurse:

- The same nodes. XSLT 3.0 defines a node pattern P to match a node N when N is in `root(N)//(P)` (section 5.5.3);
  the select is that expression (an absolute alternative as it is, a relative one after `//`). A pattern with
  `current()` (whose meaning differs in a pattern) or another start than a path keeps the walk.
- The same rule per node: the selected nodes are given to the pattern's templates, with their match patterns and
  priorities unchanged, so the rule that fires on a node is the one the walk chose.
- The same order: a union is in document order, the order of the walk (attributes before children as in
  `@*|*`). The ISO skeleton writes each pattern's findings in turn, as before; SchXslt's report is assembled per
  pattern from rule elements in document order, as before.
- A mode in which some rule does not recurse (its context's descendants are not visited by that pattern: three rule
  triples of the Factur-X EXTENDED rules), or in which a rule could match other nodes than elements (the walks reach
  every element, but attributes, text or comments only in some compilations), keeps the walk.
- Errors: a dynamic error in a match pattern counts as no match, in a select it stops the transformation. A node
  selected but matched by no rule is impossible by the equivalence above; should it happen, a template of the
  copy raises an error instead of walking on. A copy that stops with a dynamic error is not trusted with the
  document: the engine answers it with the original stylesheet (`engine.schematron_issues`).

Two cheaper equivalent rule contexts are written as well (`cheaper_contexts`): `ends-with(name(), 'X')` becomes
`ends-with(local-name(), 'X')` when X has no colon (name() is the prefix, a colon and the local name: a suffix
without a colon lies within the local name; name() costs SaxonC ~3.5 us per element, local-name() a lookup), and a
predicate whose conjuncts are all of a few error-free forms (`not(*)`, `not(normalize-space())`, a comparison of
name() with a literal) tests them cheapest first (XPath leaves the order of `and` to the processor; none of these
forms can raise an error, so no order can change a result).
"""
from __future__ import annotations

import re

from lxml import etree

XSL = "http://www.w3.org/1999/XSL/Transform"
_T = f"{{{XSL}}}"
_ERROR = ("error(QName('urn:einvoice-pipeline:optimised', 'unmatched'), "
          "'a node dispatched to a pattern matched none of its rules')")
_WALK_SELECTS = {"*", "@*|*", "@*|node()", "node()", "*|comment()|processing-instruction()"}
_PATTERN_MATCHED = re.compile(r"^\s*\$schxslt:patterns-matched\[\s*\.\s*=\s*'([^']+)'\s*\]\s*$")
_NOT_A_PATH_START = ("$", ".", "key(", "id(", "doc(", "document(", "element-with-id(", "root(")


_ELEMENT_STEP = re.compile(r"^(?:\*|[\w.-]+:\*|\*:[\w.-]+|[\w.-]+(?::[\w.-]+)?|element\([^()]*\))$")
_DOCUMENT_PATTERNS = {"/", "root()"}


def _outside_literals(text: str):
    """(index, character, depth) of each character of an XPath text outside its string literals; depth = how many
    brackets and parentheses enclose it (an opening or closing one itself not counted)."""
    depth, quote = 0, None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
            continue
        if ch in "'\"":
            quote = ch
            continue
        if ch in ")]":
            depth -= 1
        yield i, ch, depth
        if ch in "([":
            depth += 1


def top_level(text: str, separator: str) -> list[str]:
    """`text` split at `separator` outside brackets, parentheses and string literals."""
    parts, start = [], 0
    for i, ch, depth in _outside_literals(text):
        if ch == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


def _first_predicate(step: str) -> int:
    """Where the step's predicates start: its first '[' outside parentheses and string literals (its length when it
    has none). `(a[p] | b)[q]`: the second."""
    return next((i for i, ch, depth in _outside_literals(step) if ch == "[" and depth == 0), len(step))


def matches_elements_only(pattern: str) -> bool:
    """Every alternative of the match pattern ends in an element test (or is the document node)."""
    for alternative in top_level(pattern, "|"):
        alternative = alternative.strip()
        if alternative in _DOCUMENT_PATTERNS:
            continue
        last = top_level(alternative, "/")[-1].strip()
        step = last[:_first_predicate(last)].strip()  # the step without its predicates
        if "[" in last and not last.endswith("]"):
            return False
        if step.startswith("(") and step.endswith(")"):  # (a | b)[p]
            if not matches_elements_only(step[1:-1]):
                return False
        elif not _ELEMENT_STEP.match(step):
            return False
    return True


def once_per_document(pattern: str) -> bool:
    """The pattern matches at most one node of a document: the document node, or its element (`/ubl:Invoice |
    /cn:CreditNote`, with or without predicates), so its rule fires once per pattern at most."""
    for alternative in (a.strip() for a in top_level(pattern, "|")):
        if alternative in _DOCUMENT_PATTERNS:
            continue
        if not alternative.startswith("/") or alternative.startswith("//") or len(top_level(alternative, "/")) != 2:
            return False
        step = alternative[1:].strip()
        if not _ELEMENT_STEP.match(step[:_first_predicate(step)].strip()):
            return False
    return True


def remove(element) -> None:
    """Take an element out of the stylesheet, keeping the text that followed it."""
    parent, tail = element.getparent(), element.tail
    if tail:
        prev = element.getprevious()
        if prev is not None:
            prev.tail = (prev.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def pattern_as_select(pattern: str) -> str | None:
    """The expression that selects, from the root of a document, every node the match pattern matches; None for a
    pattern this does not translate (then the walk stays)."""
    if "current()" in pattern or re.search(r"\s(union|intersect|except)\s", _strip_literals(pattern)):
        return None
    selects = []
    for alternative in (a.strip() for a in top_level(pattern, "|")):
        if not alternative or alternative.startswith(_NOT_A_PATH_START):
            return None
        selects.append(alternative if absolute(alternative) else "//" + alternative)
    return " | ".join(selects)


def absolute(alternative: str) -> bool:
    """The alternative's nodes do not depend on the node it is evaluated from, only on its document: a path from the
    root, or a parenthesised union of such paths with predicates and steps after it (`(/a | /b)[$p]/c`). Then
    `root(N)//(alternative)` is the alternative itself, evaluated once; after `//` it was evaluated again from every
    node of the document (XRechnung UBL's CVD pattern: 31 of the copy's 41 ms on 1,000 lines)."""
    if alternative.startswith("/"):
        return True
    if not alternative.startswith("("):
        return False
    close = next((i for i, ch, depth in _outside_literals(alternative) if ch == ")" and depth == 0), None)
    return close is not None and all(absolute(member.strip()) for member in top_level(alternative[1:close], "|"))


def absolute_groups(root) -> int:
    """How many alternatives of the dispatched selects are parenthesised groups of paths from the root (`absolute`),
    selected once instead of from every node (the rewrite the manifest names)."""
    dispatched = {t.get("mode") for t in root.iter(f"{_T}template")  # the modes given the unmatched-node error
                  if any(s.get("select") == _ERROR for s in t.iterfind(f"{_T}sequence"))}
    return sum(1 for apply in root.iter(f"{_T}apply-templates") if apply.get("mode") in dispatched
               for alternative in top_level(apply.get("select") or "", "|")
               if alternative.strip().startswith("(") and absolute(alternative.strip()))


# `//T[ends-with(local-name(), 'X')]` or `//T[ends-with(local-name(), 'X') and ...]`: one scan for all of a union's
# alternatives with the same element test T, the local name read once per element (~0.5 us each in SaxonC; the
# CEN CII syntax pattern has five such contexts: 49 -> 31 ms on 1,000 lines). Each predicate is boolean (a call of
# ends-with, or an `and` with no comma beside it), so `//T[P1] | //T[P2]` selects what `//T[P1 or P2]` does.
_SUFFIX_SCAN = re.compile(r"^//(?P<test>\*|[\w.-]+:\*)\[ends-with\(local-name\(\), '(?P<suffix>[^':]*)'\)"
                          r"(?P<rest>.*)\]$", re.S)


def union(selects: list[str]) -> str:
    """The union of the selects, with the alternatives that test a local-name suffix on the same elements merged
    into one scan (see _SUFFIX_SCAN)."""
    alternatives = [a.strip() for select in selects for a in top_level(select, "|")]
    scans: dict[str, list[str]] = {}
    merged_into: dict[int, str] = {}  # alternative's index -> the element test whose scan takes it
    for i, alternative in enumerate(alternatives):
        found = _SUFFIX_SCAN.match(alternative)
        rest = found.group("rest") if found else ""
        if found and "]" not in _strip_literals(rest) and len(top_level(rest, ",")) == 1 \
                and (not rest.strip() or re.match(r"\s+and\s", rest)):
            test = f"ends-with($n, '{found.group('suffix')}'){rest}"
            scans.setdefault(found.group("test"), []).append(f"({test})" if rest.strip() else test)
            merged_into[i] = found.group("test")
    out, done = [], set()
    for i, alternative in enumerate(alternatives):
        element = merged_into.get(i)
        if element is None or len(scans[element]) < 2:
            out.append(alternative)
        elif element not in done:
            out.append(f"//{element}[let $n := local-name() return ({' or '.join(scans[element])})]")
            done.add(element)
    return " | ".join(out)


def _strip_literals(text: str) -> str:
    return re.sub(r"'[^']*'|\"[^\"]*\"", "''", text)


def _error_template(mode: str, priority: str):
    template = etree.Element(f"{_T}template", match="node() | @*", mode=mode, priority=priority)
    etree.SubElement(template, f"{_T}sequence", select=_ERROR)
    template.tail = "\n   "
    return template


# ---------------------------------------------------------------- ISO skeleton: a mode per pattern already

def iso_skeleton(root) -> int:
    """Dispatch each pattern mode the document template applies from `/`; the number of patterns dispatched."""
    if any(" " in (t.get("mode") or "").strip() or t.get("mode") == "#all" for t in root.iter(f"{_T}template")):
        return 0  # a template in several modes: the modes are not the patterns' own
    starts = [t for t in root.findall(f"{_T}template[@match='/']") if t.get("mode") is None]
    if len(starts) != 1:
        return 0
    start = starts[0]
    done = 0
    for apply in start.iter(f"{_T}apply-templates"):
        mode = apply.get("mode")
        if apply.get("select") == "/" and mode and re.fullmatch(r"M\d+", mode) and len(apply) == 0:
            select = _iso_mode(root, mode)
            if select is not None:
                apply.set("select", select)
                done += 1
    return done


def _iso_mode(root, mode: str) -> str | None:
    templates = root.findall(f"{_T}template[@mode='{mode}']")
    rules = [t for t in templates if t.get("match") not in ("text()", "@*|node()")]
    walks = [t for t in templates if t.get("match") == "@*|node()"]
    if not rules or len(walks) != 1 or not _only_recursion(walks[0], mode):
        return None
    recursions, selects = [], []
    for rule in rules:
        kids = [k for k in rule if isinstance(k.tag, str)]
        last = kids[-1] if kids else None
        if (last is None or not _is_recursion(last, mode)
                or [a for a in rule.iter(f"{_T}apply-templates") if a.get("mode") == mode and a is not last]):
            return None  # a rule that does not walk on: its context's descendants are not visited
        select = pattern_as_select(rule.get("match"))
        if select is None or not matches_elements_only(rule.get("match")):
            return None  # (every walk reaches the elements; whether it reaches attributes or text varies)
        recursions.append(last)
        selects.append(select)
    for last in recursions:
        remove(last)
    walk = walks[0]
    for child in list(walk):
        walk.remove(child)
    walk.text = None
    etree.SubElement(walk, f"{_T}sequence", select=_ERROR)
    return union(selects)


def _is_recursion(element, mode: str) -> bool:
    return (element.tag == f"{_T}apply-templates" and element.get("mode") == mode and len(element) == 0
            and (element.get("select") or "node()").replace(" ", "") in _WALK_SELECTS)


def _only_recursion(template, mode: str) -> bool:
    kids = [k for k in template if isinstance(k.tag, str)]
    return len(kids) == 1 and _is_recursion(kids[0], mode)


# ---------------------------------------------------------------- SchXslt 1.x: one mode for all patterns

def schxslt(root) -> int:
    """Move each pattern's rule templates into a mode of its own (the pattern bookkeeping and xsl:next-match chains
    go), and apply each mode to its contexts where the walk was started; the number of patterns dispatched."""
    done = 0
    for apply in list(root.iter(f"{_T}apply-templates")):
        if apply.get("select") != "root()" or len(apply) or not apply.get("mode"):
            continue
        owner = apply.getparent()
        patterns = [p.get("id") for p in owner.findall("{https://doi.org/10.5281/zenodo.1495494}pattern")]
        plan = _schxslt_plan(root, apply.get("mode"), patterns)
        if plan is None:
            continue
        index = owner.index(apply)
        for pattern in reversed(patterns):
            rules = plan[pattern]
            if not rules:
                continue
            mode = f"{apply.get('mode')}-{pattern}"
            for rule, body in rules:
                _rewrite_rule(rule, body, mode)
            root.append(_error_template(mode, "-5"))  # above the `#all` templates (-10) that walk on
            new = etree.Element(f"{_T}apply-templates", mode=mode,
                                select=union([pattern_as_select(r.get("match")) for r, _ in rules]))
            new.tail = apply.tail
            owner.insert(index + 1, new)
        remove(apply)
        done += sum(1 for p in patterns if plan[p])
    return done


_SCHXSLT = "https://doi.org/10.5281/zenodo.1495494"
_SVRL = "http://purl.oclc.org/dsdl/svrl"


def unassembled_report(root) -> int:
    """SchXslt builds its SVRL twice: an intermediate report (rule elements in the order the walk met them), then
    the SVRL assembled pattern by pattern, with a metadata element (the processor's name, the time) in front. Once
    every pattern is dispatched, the report's rules already come pattern by pattern, each in document order: the
    copy writes the report into the SVRL as it is, without metadata (the engine reads only the failed asserts and
    successful reports, in document order, wherever they sit). 1 when done, else 0."""
    if [a for a in root.iter(f"{_T}apply-templates") if a.get("select") == "root()" and a.get("mode")]:
        return 0  # a walk is left: its rules meet the patterns node by node, and only the assembly orders them
    for template in root.findall(f"{_T}template[@match='root()']"):
        otherwise = template.find(f"{_T}choose/{_T}otherwise")
        report = otherwise.find(f"{_T}variable[@name='report']") if otherwise is not None else None
        holder = report.find(f"{{{_SCHXSLT}}}report") if report is not None else None
        calls = list(holder) if holder is not None else []
        if not calls or any(c.tag != f"{_T}call-template" for c in calls):
            return 0
        for child in list(otherwise):
            otherwise.remove(child)
        output = etree.SubElement(otherwise, f"{{{_SVRL}}}schematron-output")
        output.extend(calls)
        return 1
    return 0


def _schxslt_plan(root, mode: str, patterns: list[str]):
    """{pattern id: [(rule template, the elements of its body)]} when every template of the mode has SchXslt's
    shape (the patterns-matched parameter, lets, and a choose whose `when` passes a matched pattern on and whose
    `otherwise` ends in the next-match), else None."""
    plan: dict[str, list] = {p: [] for p in patterns}
    for template in root.findall(f"{_T}template[@mode='{mode}']"):
        kids = [k for k in template if isinstance(k.tag, str)]
        if (len(kids) < 2 or kids[0].tag != f"{_T}param" or kids[-1].tag != f"{_T}choose"
                or any(k.tag != f"{_T}variable" for k in kids[1:-1])):
            return None
        branches = [k for k in kids[-1] if isinstance(k.tag, str)]
        if len(branches) != 2 or branches[0].tag != f"{_T}when" or branches[1].tag != f"{_T}otherwise":
            return None
        matched = _PATTERN_MATCHED.match(branches[0].get("test") or "")
        body = [k for k in branches[1] if isinstance(k.tag, str)]
        if matched is None or matched.group(1) not in plan or not body or body[-1].tag != f"{_T}next-match":
            return None
        kept = kids[1:-1] + body[:-1]
        if any(f"${kids[0].get('name')}" in value for k in kept for e in k.iter() if isinstance(e.tag, str)
               for value in e.attrib.values()):
            return None  # the rule reads the pattern bookkeeping itself
        if pattern_as_select(template.get("match")) is None or not matches_elements_only(template.get("match")):
            return None
        plan[matched.group(1)].append((template, kept))
    return plan


def _rewrite_rule(template, body, mode: str) -> None:
    """The rule template in its pattern's mode: its lets and its rule's content, without the bookkeeping."""
    for child in list(template):
        template.remove(child)
    template.text = "\n      "
    for element in body:
        template.append(element)
    template.set("mode", mode)


# ---------------------------------------------------------------- cheaper equivalent rule contexts

_NAME_SUFFIX = re.compile(r"ends-with\(\s*name\(\s*\)\s*,\s*'([^':]*)'\s*\)")
# conjunct forms that cannot raise an error, cheapest first
_CONJUNCTS = [re.compile(r"^not\s*\(\s*\*\s*\)$"), re.compile(r"^not\s*\(\s*normalize-space\(\s*\)\s*\)$"),
              re.compile(r"^(not\s*\(\s*)?name\(\s*\)\s*!?=\s*'[^']*'(\s*\))?$")]


def cheaper_contexts(root) -> tuple[int, int]:
    """Rewrite the rule contexts (match patterns of templates in a mode) as the module docstring says; (name
    suffixes rewritten, predicates reordered)."""
    suffixes = reordered = 0
    for template in root.iter(f"{_T}template"):
        match = template.get("match")
        if not match or not template.get("mode"):
            continue
        match, n = _NAME_SUFFIX.subn(lambda m: f"ends-with(local-name(), '{m.group(1)}')", match)
        suffixes += n
        predicates = re.findall(r"\[[^\[\]]*\]", match)
        match = re.sub(r"\[([^\[\]]*)\]", _cheapest_first, match)
        reordered += sum(a != b for a, b in zip(predicates, re.findall(r"\[[^\[\]]*\]", match)))
        template.set("match", match)
    return suffixes, reordered


def _rank(conjunct: str) -> int | None:
    for rank, form in enumerate(_CONJUNCTS):
        if form.match(conjunct):
            return rank
    return None


def _cheapest_first(predicate: re.Match) -> str:
    conjuncts = [c.strip() for c in re.split(r"\s+and\s+", predicate.group(1))]
    ranks = [_rank(c) for c in conjuncts]
    if len(conjuncts) < 2 or None in ranks:
        return predicate.group(0)
    return "[" + " and ".join(c for _, c in sorted(zip(ranks, conjuncts), key=lambda rc: rc[0])) + "]"
