"""One orchestration module per product path, each reading top to bottom like the pipeline:

    generate_xml       parse -> calculate -> canonical -> transform -> validate
    generate_zugferd   ... -> transform to the profile -> validate -> page -> PDF -> embed -> check
    validate_xml       read safely -> syntax -> rule pack -> XSD + Schematron -> report
    validate_pdf       PDF/A -> XMP -> embedded invoice -> profile rules -> report
    parse              source -> canonical (read) -> JSON -> model -> unmapped
    convert            parse -> source judged -> generate the target
    render             source -> canonical -> page -> PDF / HTML
    validation_report  report -> code frames -> (invoice page) -> HTML / PDF

Import the module you need (`from pipeline.flows.generate_xml import generate_xml`): each pulls in only the
stages of its own path."""

__all__ = ["generate_xml", "generate_zugferd", "validate_xml", "validate_pdf", "parse", "convert", "render",
           "validation_report"]
