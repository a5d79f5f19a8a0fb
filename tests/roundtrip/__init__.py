"""Round-trip tools (test code): read CII / UBL back into the business terms of service spec section 2,
and convert official corpus invoices into InvoiceRequest JSON."""
