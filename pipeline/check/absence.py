"""Absence asserts: a step of the optimised copies (`pipeline.check.optimise`).

The syntax-restriction rules are hundreds of asserts on one rule context that a path is absent,
`not(cac:OrderReference/cbc:UUID)`: the CEN UBL root rule has 727 asserts, ~620 of them of this form, ~150 starting
with `(cac:InvoiceLine|cac:CreditNoteLine)`. Each walks its path from the rule's node again (on a 1,000-line
invoice each of those 150 scans the root's thousand children and then every line's), and each is an instruction of
its own even where, as in nearly every invoice, none of the paths exists. Three rewrites, all exact:

- **Shared path steps.** A path prefix that four or more such asserts of one template share is a template variable,
  evaluated once, and each assert continues from the longest one: `not(cac:OrderReference/cbc:UUID)` becomes
  `not($v/cbc:UUID)` with `$v` bound to `cac:OrderReference` (itself continuing from a shorter shared prefix where
  there is one). A path `A/B/C` is `(A/B)/C` (XPath 3.1, 3.3.1.1: `/` is left-associative, each step's result in
  document order without duplicates) and a variable holds the value of its select in the same context.
- **Absence guards.** A run of consecutive such asserts (at most 32) is wrapped in one `xsl:if` that tests whether
  any of their paths exists, `exists($v/(cbc:UUID | cbc:IssueDate) | (cbc:CopyIndicator))`: each assert of the run
  writes nothing when its path is absent, so when none exists the run writes nothing, and otherwise every assert
  runs as before, in its order. `E/(A|B)` selects what `E/A | E/B` does.

- **All of a rule's paths at once.** A template with two or more guards tests, once, whether any path of any of
  its guards exists: one variable holds `exists()` of their union written as a tree of their steps,
  `exists(cac:A/(cbc:B | cac:C/(cbc:D | cbc:E)) | cbc:F)` (a path whose prefix is itself one of the paths is left
  out: it exists only where the prefix does), and each guard asks it first, `$any and exists(...)`. Each guard's
  union is part of the whole one, so the guard's value is unchanged; neither side can raise an error (child steps
  by name). Where none exists (nearly every invoice) the CEN UBL syntax rule evaluates that one expression instead
  of its 63 step variables and 22 unions: the copy 5-7 % faster on a typical invoice (bench/README.md, h6).

- **Attributes absent from the whole document.** The CEN UBL rules test 21 attribute names one by one anywhere in
  the document, `not(//@schemeName)` (global variables since `optimise._hoist`): 21 walks through every attribute
  of every element, 0.57 ms each on a 1,000-line invoice in SaxonC. The copy lists the names of the document's
  attributes once, `distinct-values(//@*!node-name())`, and each test asks whether `QName('', 'schemeName')` is among
  them: `//@N` is empty exactly when no attribute of the document has that expanded name (an unprefixed name in
  an attribute test is in no namespace), in the same global context.

Where: only asserts whose test is exactly `not(PATH)` (the ISO skeleton: an empty `xsl:when`, the finding in
`xsl:otherwise`) or `not(not(PATH))` (SchXslt: `xsl:if` around the finding), PATH being child steps with prefixed
names (the first may be a parenthesised union of such names): such steps cannot raise an error. The assert's
ancestors up to its template are `xsl:choose`, `xsl:when`, `xsl:otherwise`, `xsl:if` and `xsl:variable` only
(nothing that changes the context item), none of them changes how XPath is read, and every prefix in the path is
bound to the same namespace at the assert as at the template, where the variables are declared.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

XSL = "http://www.w3.org/1999/XSL/Transform"
_T = f"{{{XSL}}}"
_NAME = r"[A-Za-z_][\w.-]*:[A-Za-z_][\w.-]*"
_FIRST = rf"(?:{_NAME}|\(\s*{_NAME}(?:\s*\|\s*{_NAME})+\s*\))"
_PATH = rf"{_FIRST}(?:\s*/\s*{_NAME})*"
_ISO_TEST = re.compile(rf"^\s*not\(\s*({_PATH})\s*\)\s*$")
_SCHXSLT_TEST = re.compile(rf"^\s*not\(\s*not\(\s*({_PATH})\s*\)\s*\)\s*$")
_STEP = re.compile(rf"\(\s*{_NAME}(?:\s*\|\s*{_NAME})+\s*\)|{_NAME}")
_SAME_CONTEXT = {f"{_T}choose", f"{_T}when", f"{_T}otherwise", f"{_T}if", f"{_T}variable"}
_SCOPE_ATTRIBUTES = ("version", "xpath-default-namespace", "default-collation")
VARIABLE = "schxslt-optimised-step-"
RUN = 32  # asserts under one guard: a hit costs the guard and at most this many asserts
SHARED_BY = 4  # asserts that make a prefix worth a variable (2: CEN CII 1-2 % slower, UBL the same)
ATTRIBUTE_NAMES = "schxslt-optimised-attribute-names"
_ATTRIBUTE_ABSENT = re.compile(r"^\s*not\(\s*(not\(\s*)?//@([A-Za-z_][\w.-]*)\s*\)\s*(\))?\s*$")


@dataclass
class _Assert:
    element: object   # what writes the finding when the path exists: the xsl:choose (ISO) or the xsl:if (SchXslt)
    test: object      # the element whose @test holds the path
    form: str         # the test with {} for the path
    steps: tuple[str, ...]


def absence_asserts(root, shared_by: int = SHARED_BY) -> tuple[int, int, int]:
    """Rewrite every rule template of the stylesheet: (asserts continuing from a shared prefix, guards written,
    templates whose guards first ask one test of all their paths)."""
    shared = guards = at_once = 0
    for number, template in enumerate(root.findall(f"{_T}template[@match]")):
        asserts = [a for el in template.iter(f"{_T}if", f"{_T}when") if (a := _absence(el, template))]
        if not asserts:
            continue
        names = _bind_prefixes(template, asserts, f"{VARIABLE}{number}-", shared_by)
        for a in asserts:
            a.test.set("test", a.form.format(_continued(a.steps, names)))
        shared += sum(1 for a in asserts if _base(a.steps, names)[0])
        guarded = _guard_runs(asserts, names)
        guards += len(guarded)
        if len(guarded) >= 2:
            _all_paths_first(template, guarded, f"{VARIABLE}{number}-any")
            at_once += 1
    return shared, guards, at_once


def _absence(test, template) -> _Assert | None:
    parent = test.getparent()
    if test.tag == f"{_T}when":
        m = _ISO_TEST.match(test.get("test", ""))
        siblings = [c for c in parent if isinstance(c.tag, str)]
        if m is None or len(test) or (test.text or "").strip() or len(siblings) != 2 \
                or siblings[0] is not test or siblings[1].tag != f"{_T}otherwise":
            return None
        element, form = parent, "not({})"
    else:
        m = _SCHXSLT_TEST.match(test.get("test", ""))
        if m is None:
            return None
        element, form = test, "not(not({}))"
    steps = tuple(re.sub(r"\s+", "", s) for s in _STEP.findall(m.group(1)))
    if not same_context(element, template) or any(test.get(a) for a in _SCOPE_ATTRIBUTES) \
            or not _same_namespaces(test, template, steps):
        return None
    return _Assert(element, test, form, steps)


def _bind_prefixes(template, asserts: list[_Assert], prefix: str, shared_by: int) -> dict[tuple[str, ...], str]:
    """A variable, at the top of the template, for each proper path prefix shared by `shared_by` or more asserts."""
    shared = Counter(a.steps[:i] for a in asserts for i in range(1, len(a.steps)))
    bound = sorted((p for p, n in shared.items() if n >= shared_by), key=len)  # a prefix before its continuations
    names = {path: f"{prefix}{n}" for n, path in enumerate(bound, 1)}
    declare_at_top(template, [(names[path], _continued(path, names)) for path in bound])
    return names


def declare_at_top(template, variables: list[tuple[str, str]]) -> None:
    """`xsl:variable name= select=` for each (name, select), in order, after the template's parameters."""
    at = sum(1 for child in template if child.tag == f"{_T}param")
    for name, select in variables:
        variable = template.makeelement(f"{_T}variable", name=name, select=select)
        variable.tail = template[at - 1].tail if at else template.text
        template.insert(at, variable)
        at += 1


def _base(path: tuple[str, ...], names: dict[tuple[str, ...], str]) -> tuple[str | None, tuple[str, ...]]:
    """The variable of the longest proper prefix that has one, and the steps after it."""
    for i in range(len(path) - 1, 0, -1):
        if path[:i] in names:
            return f"${names[path[:i]]}", path[i:]
    return None, path


def _continued(path: tuple[str, ...], names: dict[tuple[str, ...], str]) -> str:
    base, rest = _base(path, names)
    return "/".join(((base,) if base else ()) + rest)


def _runs(asserts: list[_Assert]) -> list[list[_Assert]]:
    """Consecutive absence asserts under one parent, at most RUN in a run, runs of two or more."""
    ours = {id(a.element): a for a in asserts}
    parents = {id(a.element.getparent()): a.element.getparent() for a in asserts}
    runs = []
    for parent in parents.values():
        run: list[_Assert] = []
        for child in parent:
            if not isinstance(child.tag, str):
                continue  # a comment or a processing instruction of the stylesheet: no instruction
            found = ours.get(id(child))
            if found is None or len(run) == RUN:
                runs.append(run)
                run = [found] if found else []
            else:
                run.append(found)
        runs.append(run)
    return [run for run in runs if len(run) >= 2]


def _guard_runs(asserts: list[_Assert], names) -> list[tuple[object, list[_Assert]]]:
    """Each run under a guard of its own: [(guard, run)]."""
    made = []
    for run in _runs(asserts):
        first = run[0].element
        parent = first.getparent()
        guard = parent.makeelement(f"{_T}if", test=f"exists({_union(run, names)})")
        guard.tail = first.tail
        parent.insert(parent.index(first), guard)
        for a in run:
            guard.append(a.element)
        made.append((guard, run))
    return made


def _all_paths_first(template, guarded: list[tuple[object, list[_Assert]]], name: str) -> None:
    """One variable: does any path of the template's guards exist? Each guard asks it before its own union."""
    paths = [a.steps for _, run in guarded for a in run]
    declare_at_top(template, [(name, f"exists({step_tree(paths)})")])
    for guard, _ in guarded:
        guard.set("test", f"${name} and {guard.get('test')}")


def step_tree(paths: list[tuple[str, ...]]) -> str:
    """The union of the paths with shared leading steps written once: `a/(b | c/(d | e)) | f`. A path that continues
    one of the others is left out (where it exists, so does the shorter one)."""
    tree: dict = {}
    for steps in sorted(set(paths), key=lambda p: (len(p), p)):  # the same copy on every install
        node = tree
        for step in steps[:-1]:
            node = node.setdefault(step, {})
            if node is None:
                break
        else:
            node[steps[-1]] = None  # the end of a path: what continues it is not needed

    def written(node: dict, top: bool = False) -> str:
        union = " | ".join(step if rest is None else f"{step}/{written(rest)}" for step, rest in node.items())
        return union if top or len(node) == 1 else f"({union})"  # `/` binds tighter than `|`
    return written(tree, top=True)


def _union(run: list[_Assert], names) -> str:
    """The paths of the run as one union, those continuing from the same variable under one step."""
    groups: dict[str | None, list[str]] = {}
    for a in run:
        base, rest = _base(a.steps, names)
        groups.setdefault(base, []).append("/".join(rest))
    parts = []
    for base, rests in groups.items():
        inner = rests[0] if len(rests) == 1 else f"({' | '.join(rests)})"  # `/` binds tighter than `|`
        parts.append(f"{base}/{inner}" if base else inner)
    return " | ".join(parts)


def same_context(element, template) -> bool:
    """No ancestor between the element and its template changes the context item or how XPath is read."""
    node = element.getparent()
    while node is not template:
        if node is None or node.tag not in _SAME_CONTEXT or any(node.get(a) for a in _SCOPE_ATTRIBUTES):
            return False
        node = node.getparent()
    return True


def _same_namespaces(test, template, steps: tuple[str, ...]) -> bool:
    prefixes = {name.split(":")[0] for step in steps for name in re.findall(_NAME, step)}
    return all(test.nsmap.get(p) is not None and test.nsmap.get(p) == template.nsmap.get(p) for p in prefixes)


def absent_attributes(root) -> int:
    """Tests `not(//@N)` (ISO) or `not(not(//@N))` (SchXslt), N without a prefix, read one list of the document's
    attribute names: global variables (`optimise._hoist` made them) and the tests a rule template keeps in place (a
    rule on the document element keeps its tests: the CEN UBL syntax rules' 21, a scan each: 154 -> 127 ms of the
    copy on 1,000 lines). Returns how many."""
    sites = [(v, "select") for v in root.findall(f"{_T}variable[@select]") if not v.get("as") and not len(v)]
    for template in root.iterfind(f"{_T}template[@match][@mode]"):
        sites += [(test, "test") for test in template.iter(f"{_T}if", f"{_T}when") if same_context(test, template)]
    made = 0
    for element, attribute in sites:
        m = _ATTRIBUTE_ABSENT.match(element.get(attribute))
        if m is None or bool(m.group(1)) != bool(m.group(3)):
            continue
        present = f"${ATTRIBUTE_NAMES} = QName('', '{m.group(2)}')"
        element.set(attribute, f"not(not({present}))" if m.group(1) else f"not({present})")
        made += 1
    if made:
        names = root.makeelement(f"{_T}variable", name=ATTRIBUTE_NAMES, select="distinct-values(//@*!node-name())")
        names.tail = "\n   "
        root.append(names)
    return made
