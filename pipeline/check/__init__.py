"""Judging documents: reading untrusted XML safely (`xmlinput`), the official rule packs (`packs`, KoSIT
`scenarios`), the engine that runs XSD + Schematron (`engine`), the Factur-X profile rules (`profiles`), and the
report (`report`; `rejection` turns a failed report of our own output into a 422)."""
from pipeline.check.report import ERROR, WARNING, Issue, Location, Report

__all__ = ["ERROR", "WARNING", "Issue", "Location", "Report"]
