"""Security headers on every HTML answer, in one place: a rendered invoice (`render`, `convert` to HTML), a
validation report for people (Accept: text/html), the pages (/, /docs) and any HTML answer added later.

An answer that brings its own Content-Security-Policy keeps it (the pages allow their own scripts); every other HTML
answer is a document: its stylesheet sits in a <style> element and its images in data: URLs, nothing runs, nothing
is fetched, it is framed by no other page and sends no referrer.
"""
from __future__ import annotations

DOCUMENT_CSP = "; ".join((
    "default-src 'none'", "style-src 'unsafe-inline'", "img-src data:", "base-uri 'none'", "form-action 'none'",
    "frame-ancestors 'none'"))
COMMON = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY"}


class SecurityHeadersMiddleware:
    def process_response(self, req, resp, resource, req_succeeded):
        if not (resp.content_type or "").startswith("text/html"):
            return
        if resp.get_header("Content-Security-Policy") is None:
            resp.set_header("Content-Security-Policy", DOCUMENT_CSP)
        for name, value in COMMON.items():
            if resp.get_header(name) is None:
                resp.set_header(name, value)
