"""The command line's messages in the language a person asked for (`--lang de`): the codes, field paths and JSON
stay as scripts read them; a message of the service is said as the web page says it, so that one code has one
wording wherever a person meets it."""
from __future__ import annotations

LANGUAGES = ("en", "de")


def lang_argument(parser, help: str) -> None:
    """`--lang en|de` (default en) on a command whose own messages follow it."""
    parser.add_argument("--lang", choices=LANGUAGES, default="en", help=help)


def in_language(language: str, code: str | None, english: str, own: str | None = None) -> str:
    """A refusal's or notice's message in `language`: in German the service's own German (`own`, its messageDe) or
    the page's sentence for the code, the English where neither exists."""
    if language != "de":
        return english
    from pipeline.flows.validation_report import german  # lazy: the page's sentences only for a German message

    return german(code, own) or english
