"""Round-trip tools (test code): read CII / UBL back into the business terms of service spec section 2, written
independently of the stylesheets, to judge both directions of the pipeline."""
