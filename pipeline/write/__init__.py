"""The writing direction: AUTO calculation -> canonical XML (one element per business term) -> CII / UBL, and the
EN 16931 CII reduced to a Factur-X profile. Each stage is a function; `pipeline.flows` chains them."""
from pipeline.write.calc import calculate, check_manual_amounts, check_vat_accounting_total
from pipeline.write.canonical import to_canonical, with_derived
from pipeline.write.transform import to_cii, to_profile, to_ubl

__all__ = ["calculate", "check_manual_amounts", "check_vat_accounting_total", "to_canonical", "with_derived", "to_cii",
           "to_profile", "to_ubl"]
