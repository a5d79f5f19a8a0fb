"""The bottom of the house: the invoice model (pydantic `InvoiceRequest`), the business-term table that every
stage and both directions share, the official code lists, and the specifications as data (BT-24 ids, Factur-X
profiles). Nothing here runs Saxon, lxml or WeasyPrint."""
from pipeline.invoice.model import InvoiceRequest, parse_request, validate_request
from pipeline.invoice.request_json import dump_request, load_request, with_config
from pipeline.invoice.specs import PROFILES, Profile, profile_for_guideline, profile_named
from pipeline.invoice.terms import TERMS, Term, business_term, field_for_rule, term_for

__all__ = ["InvoiceRequest", "parse_request", "validate_request", "dump_request", "load_request", "with_config",
           "PROFILES", "Profile", "profile_for_guideline", "profile_named", "TERMS", "Term", "business_term",
           "field_for_rule", "term_for"]
