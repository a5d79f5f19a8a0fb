"""Every request works within its time budget (`pipeline.budget`, EINVOICE_REQUEST_BUDGET), opened here before the
platform layer and the resource run and closed when the answer is done."""
from __future__ import annotations

from pipeline import budget
from pipeline.settings import get_settings


class TimeBudgetMiddleware:
    def __init__(self, seconds: float | None = None):
        self.seconds = get_settings().request_budget if seconds is None else seconds

    def process_request(self, req, resp):
        req.context.budget_token = budget.start(self.seconds)

    def process_response(self, req, resp, resource, req_succeeded):
        token = getattr(req.context, "budget_token", None)
        if token is not None:
            req.context.budget_token = None
            budget.end(token)
