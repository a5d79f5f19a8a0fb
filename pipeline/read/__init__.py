"""The reading direction: a CII / UBL document -> canonical XML (the same vocabulary generation writes, with the
source node of every value) -> the JSON invoice, typed by the same model. `provenance` lists what no field carries.
`pipeline.flows.parse` chains the stages."""
from pipeline.read.canonical import to_canonical
from pipeline.read.provenance import unmapped
from pipeline.read.to_json import invoice_json

__all__ = ["to_canonical", "unmapped", "invoice_json"]
