"""Rewrite xslt/canonical.xsd from the model and the business-term table (`pipeline.write.canonical.schema_xsd`).
Usage: python3 scripts/write_canonical_xsd.py"""
from pipeline.write.canonical import XSD_PATH, schema_xsd

XSD_PATH.write_bytes(schema_xsd())
print(f"wrote {XSD_PATH}")
