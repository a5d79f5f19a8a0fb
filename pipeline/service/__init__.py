"""HTTP service layer (Falcon). Stages below this package know nothing about HTTP."""
