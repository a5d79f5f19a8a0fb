"""The OpenAPI document against the service specification's field tables, by script: section 2 of
../shared/spec/service-spec.md is parsed (its markdown tables and its `Object: field (type), ...` lists), and every
field it names is held against the component schema GET /v1/openapi.json serves: present, same type, `format: date`
for dates and `int32` for integers, the spec's closed value sets as `enum`, required where the spec requires it and
not required in a request where the spec does not. Every other field of those schemas must call itself an extension.
"""
from __future__ import annotations

import re

import falcon.testing
import pytest

from conftest import SHARED
from pipeline.service.app import create_app

SPEC = SHARED / "spec" / "service-spec.md"
# The spec names one shape under four names (2.4 "Postal address shape (the same for ...)"); we have one schema.
SHAPES = {"Postal address shape": "PostalAddress"}
BASE_TYPES = {"string": "string", "strings": "string", "number": "number", "date": "date", "dates": "date",
              "boolean": "boolean", "integer": "integer", "int32": "integer", "integer int32": "integer"}
NAME = r"[A-Z][A-Za-z0-9]+"


class Field:
    def __init__(self):
        self.type: tuple | None = None     # ("string",) ("date",) ("integer",) ("ref", X) ("array", X) ("enum", [..])
        self.required: bool | None = None  # None: the spec does not say (optional by the section 2 rule)

    def __repr__(self):
        return f"Field({self.type}, required={self.required})"


def _split(text: str, separators: str = ",;") -> list[str]:
    """Split at separators outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        depth += char == "("
        depth -= char == ")"
        if char in separators and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [p for p in parts + [current.strip()] if p]


class SpecFields:
    """object name -> field name -> Field, from section 2 of the spec."""

    def __init__(self, text: str):
        self.objects: dict[str, dict[str, Field]] = {}
        self.aliases: dict[str, str] = {}
        section = text[text.index("## 2. Resources"):text.index("## 3. States")]
        heading = None
        for block in re.split(r"\n(?=### )", section):
            heading = self._object_of(block.splitlines()[0])
            self._tables(block, heading)
            self._lists(block, heading)

    @staticmethod
    def _object_of(heading_line: str) -> str | None:
        words = re.findall(NAME, heading_line.split(" ", 2)[-1]) if heading_line.startswith("### ") else []
        camel = [w for w in words if re.search(r"[a-z][A-Z]", w)]
        return (camel or words or [None])[-1]

    def field(self, obj: str, name: str) -> Field:
        return self.objects.setdefault(obj, {}).setdefault(name, Field())

    # -- annotations: "(string, required)", "(array of ItemAttribute: name, value, strings)", "(ERROR or WARNING)"
    def _annotate(self, obj: str, names: list[str], note: str | None, group_note: str | None = None) -> None:
        for name in names:
            f = self.field(obj, name)
            for text in (group_note, note):
                if text:
                    self._apply(obj, name, f, text)

    def _apply(self, obj: str, name: str, f: Field, note: str) -> None:
        note = note.strip()
        if note.startswith("optional:"):          # an inline object: "optional: xpath string, line int32"
            inner = name[:1].upper() + name[1:]
            f.type, f.required = ("ref", inner), False
            for item in _split(note.removeprefix("optional:")):
                field_name, _, kind = item.partition(" ")
                self._apply(inner, field_name, self.field(inner, field_name), kind)
            return
        array = re.fullmatch(rf"array of ({NAME})(?:: (.*))?", note)
        if array:
            f.type = ("array", array.group(1))
            if array.group(2):
                self._list(array.group(1), array.group(2))
            return
        enum = re.fullmatch(r"([A-Z]+(?:, [A-Z]+)*) or ([A-Z]+)", note)
        if enum:
            f.type = ("enum", enum.group(1).split(", ") + [enum.group(2)])
            return
        if note == "any JSON object":
            f.type = ("any",)
            return
        for word in _split(note):
            word = word.removeprefix("all ").strip()
            if word in BASE_TYPES:
                f.type = (BASE_TYPES[word],)
            elif word == "required":
                f.required = True
            elif word == "optional":
                f.required = False
            elif re.fullmatch(NAME, word):
                f.type = ("ref", word)

    def _list(self, obj: str, text: str, group_note: str | None = None) -> None:
        """`a (type), b, c (types); d (Ref)`: an annotation applies to its field and the bare ones before it; a bare
        type word at the end (`name, value, strings`) or the object's own note types the rest."""
        pending: list[str] = []
        for item in _split(text):
            m = re.fullmatch(r"(\w+)(?: \((.*)\))?", item)
            if not m:
                continue
            name, note = m.groups()
            if note is None and name in BASE_TYPES:
                self._annotate(obj, pending, name)
                pending = []
            elif note is None:
                pending.append(name)
            else:
                self._annotate(obj, pending + [name], note, group_note)
                pending = []
        self._annotate(obj, pending, None, group_note)

    # -- "Object: fields." definitions in prose, bullets and two-column tables
    def _lists(self, block: str, heading: str | None) -> None:
        for line in block.splitlines():
            line = line.strip().removeprefix("- ")
            row = re.fullmatch(rf"\| ({NAME}) \| (.*) \|", line)
            if row and row.group(1) not in ("Field", "Object", "Part"):
                self._list(row.group(1), row.group(2))
                continue
            for sentence in re.split(rf"\. (?={NAME}(?: and {NAME})?(?: \([^)]*\))?: )", line):
                m = re.match(rf"({NAME}(?: and {NAME})?|Postal address shape)(?: \(([^)]*)\))?: (.*)$", sentence)
                if not m or m.group(1) in ("Types",):
                    continue
                names, note, fields = m.groups()
                fields = re.split(r"\.(?: |$)", fields)[0]   # the list ends at its sentence's end
                if names == "Required":
                    for name in _split(fields):
                        self.field(heading, name).required = True
                    continue
                targets = [SHAPES[names]] if names in SHAPES else names.split(" and ")
                if names in SHAPES:
                    for alias in re.findall(NAME, note or ""):
                        self.aliases[alias] = SHAPES[names]
                group = note if note and not note.startswith(("same shape", "the same for", "JSON object")) else None
                if note and note.startswith("same shape"):
                    group = note.removeprefix("same shape").strip(", ")
                for target in targets:
                    self._list(target, fields, group)

    def _tables(self, block: str, heading: str | None) -> None:
        rows = [[c.strip() for c in line.strip().strip("|").split("|")]
                for line in block.splitlines() if line.startswith("|")]
        if not rows or rows[0][:2] != ["Field", "Type"]:
            return
        header = rows[0]
        for cells in rows[2:]:
            cell = dict(zip(header, cells))
            f = self.field(heading, cell["Field"])
            kind = cell["Type"]
            m = re.fullmatch(r"(array of )?(\w+)(?: int32)?(?: \((.*)\))?", kind)
            assert m, kind
            array, word, note = m.groups()
            if word in BASE_TYPES:
                f.type = (BASE_TYPES[word],)
            elif re.fullmatch(NAME, word):
                f.type = ("array", word) if array else ("ref", word)
            if note:
                for part in _split(note, ","):
                    if part == "required":
                        f.required = True
                if re.fullmatch(NAME, word) and note != "required":   # "Period (startDate, endDate; dates)"
                    self._list(word, note.replace(", required", ""))
            if cell.get("Required") in ("yes", "no"):
                f.required = cell["Required"] == "yes"
            rule = cell.get("Rule") or cell.get("Notes") or ""
            if re.fullmatch(NAME, word) and rule and not array:   # "summary | ValidationSummary | errors (...)"
                self._list(word, rule.rstrip("."))
                continue
            for sentence in re.split(r"\. ?", rule):   # "XML syntax: CII or UBL.", "Allowed values: en, de."
                values = sentence.rsplit(": ", 1)[-1].strip()
                listed = re.fullmatch(r"(\w+(?:, \w+)*)(?:,? or (\w+))?", values)
                if listed and (listed.group(2) or (values != sentence and ", " in values)):
                    f.type = ("enum", listed.group(1).split(", ") + ([listed.group(2)] if listed.group(2) else []))


@pytest.fixture(scope="module")
def spec() -> SpecFields:
    return SpecFields(SPEC.read_text("utf-8"))


@pytest.fixture(scope="module")
def schemas() -> dict:
    r = falcon.testing.TestClient(create_app(platform=False)).simulate_get("/v1/openapi.json")
    assert r.status_code == 200
    return r.json["components"]["schemas"]


def _branch(prop: dict) -> dict:
    options = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    assert len(options) == 1, prop
    return {**options[0], **{k: v for k, v in prop.items() if k not in ("anyOf", "type")}} if "anyOf" in prop \
        else prop


def _ref(prop: dict) -> str | None:
    return prop["$ref"].rsplit("/", 1)[1] if "$ref" in prop else None


def _requests(schemas: dict) -> set[str]:
    """The schemas a request body uses (reached from InvoiceRequest and XRechnungValidationRequest)."""
    seen, todo = set(), ["InvoiceRequest", "XRechnungValidationRequest"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += re.findall(r"#/components/schemas/(\w+)", str(schemas[name]))
    return seen


def test_the_parser_reads_every_object_of_section_2(spec):
    """A guard for the script: the objects and fields the spec defines are all read, with the types it says."""
    assert {"InvoiceRequest", "GenerationConfig", "Invoice", "Seller", "Buyer", "PostalAddress", "SellerContact",
            "BuyerContact", "Payee", "SellerTaxRepresentativeParty", "DeliveryInformation", "PaymentInstructions",
            "CreditTransfer", "PaymentCardInformation", "DirectDebit", "DocumentTotals", "VatBreakdown",
            "DocumentLevelAllowance", "DocumentLevelCharge", "InvoiceLineAllowance", "InvoiceLineCharge",
            "InvoiceLine", "PriceDetails", "LineVatInformation", "ItemInformation", "ItemAttribute", "Period",
            "ProcessControl", "PrecedingInvoiceReference", "AdditionalSupportingDocument",
            "XRechnungValidationRequest", "XRechnungValidationResponse", "ValidationSummary", "Issue", "Location",
            "ErrorResponse", "ErrorDetail"} <= set(spec.objects)
    assert sum(len(fields) for fields in spec.objects.values()) >= 190
    untyped = [(o, n) for o, fields in spec.objects.items() for n, f in fields.items() if f.type is None]
    assert not untyped
    assert spec.objects["GenerationConfig"]["syntax"].type == ("enum", ["CII", "UBL"])
    assert spec.objects["GenerationConfig"]["metadataLanguage"].type == ("enum", ["en", "de"])
    assert spec.objects["Location"]["line"].type == ("integer",)
    assert spec.objects["Seller"]["postalAddress"].type == ("ref", "SellerPostalAddress")
    assert spec.objects["Invoice"]["invoiceLines"].required and spec.objects["Invoice"]["invoiceLines"].type == (
        "array", "InvoiceLine")
    address = spec.objects["PostalAddress"]
    assert address["city"].required and address["postcode"].required is False
    assert spec.aliases == dict.fromkeys(("SellerPostalAddress", "BuyerPostalAddress",
                                          "SellerTaxRepresentativePostalAddress", "DeliveryAddress"), "PostalAddress")


def test_every_spec_field_has_its_type_format_enum_and_requiredness_in_openapi(spec, schemas):
    requests = _requests(schemas)
    problems = []
    for obj, fields in spec.objects.items():
        name = spec.aliases.get(obj, obj)
        assert name in schemas, f"no schema {name} for the spec's {obj}"
        schema = schemas[name]
        for field, want in fields.items():
            where = f"{obj}.{field}"
            if field not in schema["properties"]:
                problems.append(f"{where}: missing")
                continue
            prop = _branch(schema["properties"][field])
            kind = want.type[0]
            if kind in ("string", "number", "boolean"):
                ok = prop.get("type") == kind and prop.get("format") is None
            elif kind == "date":
                ok = (prop.get("type"), prop.get("format")) == ("string", "date")
            elif kind == "integer":
                ok = (prop.get("type"), prop.get("format")) == ("integer", "int32")
            elif kind == "enum":
                ok = prop.get("type") == "string" and sorted(prop.get("enum", [])) == sorted(want.type[1])
            elif kind == "ref":
                ok = _ref(prop) == spec.aliases.get(want.type[1], want.type[1])
            elif kind == "array":
                target = want.type[1]
                ok = prop.get("type") == "array" and _ref(prop["items"]) == spec.aliases.get(target, target)
            else:   # any JSON value
                ok = not {"type", "$ref", "enum", "anyOf"} & set(prop)
            if not ok:
                problems.append(f"{where}: spec {want.type}, OpenAPI {prop}")
            required = field in schema.get("required", [])
            if want.required and not required:
                problems.append(f"{where}: required by the spec, optional in OpenAPI")
            if name in requests and required and not want.required:
                problems.append(f"{where}: optional in the spec, required in OpenAPI")
    assert not problems, "\n".join(problems)


def test_every_other_field_of_those_schemas_says_it_is_an_extension(spec, schemas):
    """Fields the spec does not list are ours: their description says so, so a client knows what is beyond it."""
    unmarked = []
    for obj, fields in spec.objects.items():
        schema = schemas[spec.aliases.get(obj, obj)]
        for field, prop in schema["properties"].items():
            if field not in fields and "extension" not in prop.get("description", "").lower():
                unmarked.append(f"{obj}.{field}")
    assert not unmarked, unmarked
