"""The texts of the OpenAPI document in another language than English (GET /v1/openapi.json?lang=de).

The document is written in English by pipeline.service.openapi and openapi_status. What a person reads in Swagger
UI (info, tags, operations' summaries and descriptions, parameters', responses' and headers' descriptions, schema
descriptions) is translated here from data: `openapi_de.json` beside this file maps each English text, exactly as
the document has it, to its German text. A text the builders compose from parts (costs from the configuration,
error code lists) is a template there with `{name}` placeholders, filled by `Texts.__call__` where the builder
composes it. Machine words stay as they are: names of fields, parameters, headers, tags and schemas, enum values,
codes, examples, `x-` extensions, schema titles (pydantic's model names; Swagger UI shows a field's name).

English has no table: `Texts("en")` fills templates only, so the English document is the one written in the code.
A text without a German entry stays English and is listed in `Texts.missing` (tests/test_openapi_de.py fails on it).
"""
from __future__ import annotations

import copy
import json
from functools import lru_cache
from pathlib import Path

LANGUAGES = ("en", "de")
DATA = {"de": Path(__file__).with_name("openapi_de.json")}
TEXT_KEYS = ("summary", "description")
SKIPPED = ("enum", "const", "default", "example", "examples", "required")


@lru_cache(maxsize=None)
def table(lang: str) -> dict:
    """{"tags": {tag: description}, "texts": {English: translation}} of `lang`."""
    return json.loads(DATA[lang].read_text(encoding="utf-8"))


class Texts:
    """The texts of one language: `texts(template, **values)` where a builder composes a text, `translate(doc)` for
    the document's other texts."""

    def __init__(self, lang: str = "en"):
        if lang not in LANGUAGES:
            raise ValueError(f"no OpenAPI texts in {lang!r}")
        self.lang = lang
        data = table(lang) if lang != "en" else {}
        self.texts: dict[str, str] = data.get("texts", {})
        self.tags: dict[str, str] = data.get("tags", {})
        self.missing: list[str] = []   # English texts without a translation (templates as written), in order
        self.used: set[str] = set()    # the entries of the table this document took
        self._composed: set[str] = set()

    def __call__(self, text: str, **values) -> str:
        """`text` (a template: `{name}` placeholders for `values`) in this language, its placeholders filled."""
        if self.lang != "en":
            text = self._lookup(text)
        for name, value in values.items():
            text = text.replace("{" + name + "}", str(value))
        if self.lang != "en":
            self._composed.add(text)
        return text

    def costs(self, cost: int) -> str:
        """What an operation costs, as every operation's description ends."""
        return self("Costs {cost} credit(s).", cost=cost) if cost else self("Costs no credits.")

    def join(self, *parts: str) -> str:
        """A text the builder composes of texts in this language, `parts` (each from `__call__`), space-separated."""
        text = " ".join(parts)
        if self.lang != "en":
            self._composed.add(text)
        return text

    def _lookup(self, text: str) -> str:
        found = self.texts.get(text)
        if found is None and not text.strip():   # nothing to read
            return text
        if found is None:
            if text not in self.missing:
                self.missing.append(text)
            return text
        self.used.add(text)
        return found

    def translate(self, doc: dict) -> dict:
        """A copy of the English document `doc` with this language's texts (English: `doc` itself)."""
        if self.lang == "en":
            return doc
        doc = copy.deepcopy(doc)
        seen: set[int] = set()

        def text(value: str) -> str:
            return value if value in self._composed else self._lookup(value)

        def walk(node, schemas_by_name: bool = False):
            if isinstance(node, list):
                for value in node:
                    walk(value)
                return
            if not isinstance(node, dict) or id(node) in seen:   # a part used twice is translated once
                return
            seen.add(id(node))
            for key, value in node.items():
                if schemas_by_name:   # `properties`: the keys are field names, the values schemas
                    walk(value)
                elif key in TEXT_KEYS and isinstance(value, str):
                    node[key] = text(value)
                elif key not in SKIPPED and not key.startswith("x-"):
                    walk(value, key in ("properties", "patternProperties"))

        doc["info"]["title"] = text(doc["info"]["title"])
        walk(doc)
        names = dict.fromkeys(tag for item in doc["paths"].values() for op in item.values()
                              for tag in op.get("tags", ()))
        for tag in names:
            if tag not in self.tags and f"tag {tag}" not in self.missing:
                self.missing.append(f"tag {tag}")
        out = {}
        for key, value in doc.items():   # the tags' descriptions (this language only: the English document has none)
            if key == "paths":
                out["tags"] = [{"name": tag, "description": self.tags[tag]} for tag in names if tag in self.tags]
            out[key] = value
        return out


ENGLISH = Texts("en")   # the texts as pipeline.service.openapi and openapi_status write them
