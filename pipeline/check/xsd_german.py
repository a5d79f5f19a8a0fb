"""The German text of an XSD finding (`Issue.message_de`): libxml2 words its schema errors in English ("Element
'ram:Name': This element is not expected."), and a German page or report showed them so. These are the
validator's sentences, not the official rules' texts: each sentence libxml2 writes for the schemas we run is said
again in German, with the names and values it quotes unchanged. A message with a sentence not in the table gets no
German text (None): the report shows the English one rather than half a translation.

`rule_engine_error` does the same for a RULE-ENGINE-ERROR: Saxon's words for the dynamic error that stopped an
official stylesheet ("A sequence of more than one item ... is not allowed as the first argument of ...")."""
from __future__ import annotations

import re

# What the finding is at: "Element 'x'" or "Element 'x', attribute 'y'" (the names as libxml2 gives them).
_SUBJECT = re.compile(r"^(Element '[^']*')(?:, attribute '([^']*)')?: ")
_Q = r"'((?:[^']|'(?! ))*)'"   # a quoted name or value (a value may hold an apostrophe followed by a letter)

# (libxml2's sentence, its German); groups are carried over in order.
_SENTENCES = (
    (r"This element is not expected\. Expected is one of \( (.*) \)\.",
     "Dieses Element ist hier nicht erwartet. Erwartet wird eines von ( {0} )."),
    (r"This element is not expected\. Expected is \( (.*) \)\.",
     "Dieses Element ist hier nicht erwartet. Erwartet wird ( {0} )."),
    (r"This element is not expected\.", "Dieses Element ist hier nicht erwartet."),
    (r"Missing child element\(s\)\. Expected is one of \( (.*) \)\.",
     "Untergeordnete Elemente fehlen. Erwartet wird eines von ( {0} )."),
    (r"Missing child element\(s\)\. Expected is \( (.*) \)\.",
     "Untergeordnete Elemente fehlen. Erwartet wird ( {0} )."),
    (rf"\[facet 'pattern'\] The value {_Q} is not accepted by the pattern {_Q}\.",
     "[Facette 'pattern'] Der Wert '{0}' entspricht nicht dem Muster '{1}'."),
    (rf"\[facet 'enumeration'\] The value {_Q} is not an element of the set (\{{.*\}})\.",
     "[Facette 'enumeration'] Der Wert '{0}' gehört nicht zur Menge {1}."),
    (rf"\[facet 'minLength'\] The value has a length of {_Q}; this underruns the allowed minimum length of {_Q}\.",
     "[Facette 'minLength'] Der Wert hat die Länge '{0}' und ist kürzer als die kleinste erlaubte Länge '{1}'."),
    (rf"\[facet 'maxLength'\] The value has a length of {_Q}; this exceeds the allowed maximum length of {_Q}\.",
     "[Facette 'maxLength'] Der Wert hat die Länge '{0}' und ist länger als die größte erlaubte Länge '{1}'."),
    (rf"\[facet 'length'\] The value has a length of {_Q}; this differs from the allowed length of {_Q}\.",
     "[Facette 'length'] Der Wert hat die Länge '{0}' statt der erlaubten Länge '{1}'."),
    (rf"\[facet 'totalDigits'\] The value {_Q} has more digits than are allowed \({_Q}\)\.",
     "[Facette 'totalDigits'] Der Wert '{0}' hat mehr Ziffern als erlaubt ('{1}')."),
    (rf"\[facet 'fractionDigits'\] The value {_Q} has more fraction digits than are allowed \({_Q}\)\.",
     "[Facette 'fractionDigits'] Der Wert '{0}' hat mehr Nachkommastellen als erlaubt ('{1}')."),
    (rf"\[facet 'minInclusive'\] The value {_Q} is less than the minimum value allowed \({_Q}\)\.",
     "[Facette 'minInclusive'] Der Wert '{0}' ist kleiner als der kleinste erlaubte Wert ('{1}')."),
    (rf"\[facet 'maxInclusive'\] The value {_Q} is greater than the maximum value allowed \({_Q}\)\.",
     "[Facette 'maxInclusive'] Der Wert '{0}' ist größer als der größte erlaubte Wert ('{1}')."),
    (rf"\[facet 'minExclusive'\] The value {_Q} must be greater than {_Q}\.",
     "[Facette 'minExclusive'] Der Wert '{0}' muss größer sein als '{1}'."),
    (rf"\[facet 'maxExclusive'\] The value {_Q} must be less than {_Q}\.",
     "[Facette 'maxExclusive'] Der Wert '{0}' muss kleiner sein als '{1}'."),
    (rf"{_Q} is not a valid value of the atomic type {_Q}\.",
     "'{0}' ist kein gültiger Wert des atomaren Typs '{1}'."),
    (rf"{_Q} is not a valid value of the local atomic type\.", "'{0}' ist kein gültiger Wert des lokalen atomaren Typs."),
    (rf"{_Q} is not a valid value of the union type {_Q}\.", "'{0}' ist kein gültiger Wert des Vereinigungstyps '{1}'."),
    (rf"{_Q} is not a valid value of the local union type\.",
     "'{0}' ist kein gültiger Wert des lokalen Vereinigungstyps."),
    (rf"{_Q} is not a valid value of the list type {_Q}\.", "'{0}' ist kein gültiger Wert des Listentyps '{1}'."),
    (rf"The attribute {_Q} is not allowed\.", "Das Attribut '{0}' ist hier nicht erlaubt."),
    (rf"The attribute {_Q} is required but missing\.", "Das Pflichtattribut '{0}' fehlt."),
    (r"Character content other than whitespace is not allowed because the content type is 'element-only'\.",
     "Text außer Leerraum ist hier nicht erlaubt: der Inhalt dieses Elements besteht nur aus Elementen."),
    (r"Element content is not allowed, because the content type is a simple type definition\.",
     "Elemente sind hier nicht erlaubt: der Inhalt dieses Elements ist ein einfacher Wert."),
    (r"Character content is not allowed, because the content type is empty\.",
     "Text ist hier nicht erlaubt: der Inhalt dieses Elements ist leer."),
    (r"Element content is not allowed, because the content type is empty\.",
     "Elemente sind hier nicht erlaubt: der Inhalt dieses Elements ist leer."),
    (r"Element content is not allowed, because the type definition is simple\.",
     "Elemente sind hier nicht erlaubt: der Inhalt dieses Elements ist ein einfacher Wert."),
    (r"No matching global declaration available for the validation root\.",
     "Das Schema erklärt kein Wurzelelement dieses Namens."),
    (r"Missing child element\(s\)\.", "Untergeordnete Elemente fehlen."),
)
_COMPILED = tuple((re.compile(pattern), german) for pattern, german in _SENTENCES)


def german(message: str) -> str | None:
    """libxml2's XSD `message` in German, or None when a sentence of it is not one of the table's."""
    text = message.strip()
    subject = _SUBJECT.match(text)
    if subject is None:
        return None
    body = text[subject.end():]
    for pattern, words in _COMPILED:
        found = pattern.fullmatch(body)
        if found:
            head = subject.group(1) + (f", Attribut '{subject.group(2)}'" if subject.group(2) else "")
            return f"{head}: {words.format(*found.groups())}"
    return None


# Saxon's dynamic errors met when official rules read a document they did not foresee (two URIIDs, a date with
# leading whitespace read as a number); the values and function names Saxon quotes are carried over unchanged, an
# explanation it adds in English is left out (the API's `message` keeps it).
_ORDINALS = {"first": "erstes", "second": "zweites", "third": "drittes", "fourth": "viertes"}
_ENGINE_SENTENCES = (
    (r"A sequence of more than one item (?P<items>\{.*\} )?is not allowed as the (?P<nth>first|second|third|fourth) "
     r"argument of (?P<function>\S+?\(\))(?P<rest>.*)",
     "Eine Folge aus mehr als einem Wert {items}ist als {nth} Argument von {function} nicht erlaubt{rest}"),
    (r"An empty sequence is not allowed as the (?P<nth>first|second|third|fourth) argument of (?P<function>\S+?\(\))"
     r"(?P<rest>.*)", "Eine leere Folge ist als {nth} Argument von {function} nicht erlaubt{rest}"),
    (r"Cannot convert string (?P<value>\".*\") to (?P<type>xs:\w+): no digits in value",
     "Die Zeichenkette {value} lässt sich nicht in {type} umwandeln: der Wert enthält keine Ziffern"),
    (r"Cannot convert string (?P<value>\".*\") to (?P<type>xs:\w+)(?::.*)?",
     "Die Zeichenkette {value} lässt sich nicht in {type} umwandeln"),
)
_ENGINE_COMPILED = tuple((re.compile(pattern, re.S), german) for pattern, german in _ENGINE_SENTENCES)


def rule_engine_error(stylesheet: str, message: str) -> str | None:
    """The German of a RULE-ENGINE-ERROR on `stylesheet`: Saxon's `message` in German when it is one of the table's,
    else quoted as Saxon wrote it (the sentence around it is ours, so it is German either way)."""
    head = f"Die offiziellen Regeln ({stylesheet}) brachen bei diesem Dokument mit einem Laufzeitfehler ab"
    for pattern, words in _ENGINE_COMPILED:
        found = pattern.fullmatch(message.strip())
        if found:
            parts = {k: _ORDINALS.get(v, v) if k == "nth" else (v or "") for k, v in found.groupdict().items()}
            return f"{head}: {words.format(**parts)}"
    return f"{head}; Saxon meldet: {message}"
