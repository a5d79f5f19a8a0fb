"""E-invoice pipeline: JSON invoice -> canonical XML -> CII / UBL / PDF, and validation on the official rules.

The package follows the data (docs/architecture.md): `invoice` (model, business-term table, specifications) at
the bottom; `write` (calculation, canonical XML, CII / UBL), `check` (safe XML input, rule packs, engine, report)
and `pdf` (page, Factur-X container, PDF checks) above it; `flows` chains them into the product paths; `service`,
`storage` and `cli` sit on top. The public names below are loaded on first use, so that importing a small part
(settings, the model) does not start Saxon or WeasyPrint.
"""
import importlib

__version__ = "0.1.0"

_PUBLIC = {
    "generate_xml": "pipeline.flows.generate_xml",
    "generate_zugferd": "pipeline.flows.generate_zugferd",
    "validate_xml": "pipeline.flows.validate_xml",
    "validate_pdf": "pipeline.flows.validate_pdf",
    "ApiError": "pipeline.errors",
    "Report": "pipeline.check.report",
    "InvoiceRequest": "pipeline.invoice.model",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    return getattr(importlib.import_module(_PUBLIC[name]), name)
