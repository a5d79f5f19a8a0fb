"""The options of a `request` part (the JSON beside an uploaded document), checked alike wherever they arrive: the
reading and status endpoints, a job's request (`job_document.check_options`) and `pipeline inbox`. A bad value is a
400 INVALID_INPUT naming `request.<name>`.
"""
from __future__ import annotations

from dataclasses import dataclass

from pipeline.errors import ApiError, ErrorDetail
from pipeline.flows.convert import SPECS, TARGETS, check_spec
from pipeline.invoice.model import metadata_language
from pipeline.invoice.specs import profile_named


def bad_option(name: str, message: str, value) -> ApiError:
    return ApiError(400, "INVALID_INPUT", f"request.{name} {message}.",
                    [ErrorDetail("INVALID_VALUE", message, field=f"request.{name}", rejectedValue=value)])


def flag(request: dict, name: str) -> bool:
    """A JSON boolean, false when absent."""
    value = request.get(name, False)
    if not isinstance(value, bool):
        raise bad_option(name, "must be true or false", value)
    return value


def choice(request: dict, name: str, allowed: tuple[str, ...], upper: bool = False) -> str | None:
    """One of `allowed` (compared in lower case, or upper with `upper`), None when absent or null."""
    value = request.get(name)
    if value is None:
        return None
    text = (value.strip().upper() if upper else value.strip().lower()) if isinstance(value, str) else value
    if text not in allowed:
        raise bad_option(name, f"must be one of {', '.join(allowed)}", value)
    return text


def language(request: dict) -> str | None:
    """request.metadataLanguage: en | de as config.metadataLanguage takes it (`model.metadata_language`)."""
    value = request.get("metadataLanguage")
    try:
        return None if value is None else metadata_language(value)
    except (TypeError, ValueError) as exc:
        raise bad_option("metadataLanguage", str(exc), value) from None


@dataclass(frozen=True)
class ConvertOptions:
    to: str
    spec: str | None
    profile: str | None
    language: str | None
    allow_loss: bool

    def as_args(self) -> tuple:
        """The options in the order `flows.convert.convert` takes them after the document."""
        return self.to, self.spec, self.profile, self.language, self.allow_loss


def convert_options(request: dict) -> ConvertOptions:
    """What POST /v1/invoice/convert and a convert job take: `to` (required), `spec`, `profile` (ZUGFERD),
    `metadataLanguage` (ZUGFERD: the page's) and `allowLoss`."""
    to = choice(request, "to", TARGETS, upper=True)
    if to is None:
        raise bad_option("to", f"is required: one of {', '.join(TARGETS)}", None)
    profile = request.get("profile")
    if profile is not None:
        try:
            profile = profile_named(profile).name
        except (ApiError, AttributeError, TypeError):
            raise bad_option("profile", "names no ZUGFeRD / Factur-X profile", profile) from None
        if to != "ZUGFERD":  # it was ignored: an XML target is written on its spec's rules, never cut to a profile
            raise bad_option("profile", f"applies to the ZUGFERD target only (a Factur-X PDF's profile); {to} is "
                             "written on the rules of request.spec", profile)
    spec = choice(request, "spec", SPECS)
    check_spec(to, spec)   # (a job's request is refused when it is submitted, not document by document)
    return ConvertOptions(to, spec, profile, language(request), flag(request, "allowLoss"))
