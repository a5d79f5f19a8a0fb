"""The PDF side of ZUGFeRD / Factur-X: the readable page (`page`: canonical XML -> HTML -> PDF/A-3b with
WeasyPrint), the container (`assemble`: XMP, embedded XML and attachments) and the checks of any PDF (`checks`:
PDF/A-3, Factur-X XMP, the embedded invoice). The profiles themselves are data in `pipeline.invoice.specs`."""
