"""The PDF side: the readable page (`page`: canonical XML -> HTML -> PDF/A-3b with WeasyPrint), the ZUGFeRD
container (`assemble`: XMP, embedded XML and attachments), the checks of any PDF (`checks`: PDF/A-3, Factur-X XMP,
the embedded invoice), the validation report for people (`report_page`) and the garbage collector paused around
the pure-Python work on a PDF we make (`collector`). The profiles themselves are data in
`pipeline.invoice.specs`. Import the module you need: each loads its own heavy library (WeasyPrint, pikepdf)."""

import logging

__all__ = ["assemble", "checks", "collector", "page", "report_page"]

# fontTools, which reads font programs for WeasyPrint (subsetting the page's fonts) and for pikepdf's PDF/A check of
# an uploaded PDF's embedded fonts, warns on stderr about the harmless 1970 dates in some fonts' headers ("'modified'
# timestamp seems very low": 11 lines in a folder run of 95 real-world PDFs); its errors still show.
logging.getLogger("fontTools").setLevel(logging.ERROR)
