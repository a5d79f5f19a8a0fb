"""A price per document is at most 2**31 - 1 credits (a job's price column is an INTEGER, 32 bits on PostgreSQL:
EINVOICE_CREDIT_COSTS /v1/invoice/convert=3000000000 made every convert job a 500 "integer out of range" there).
A job holds up to EINVOICE_MAX_JOB_FILES times that: its creditsReserved and creditsCharged are int64."""
from __future__ import annotations

import pytest

from pipeline.service.openapi import build
from pipeline.service.platform import ConfigError, PlatformConfig
from pipeline.storage.jobs import MAX_COST


def test_a_price_past_int32_is_refused_at_start():
    ok = PlatformConfig.from_env({"EINVOICE_CREDIT_COSTS": f"/v1/invoice/convert={MAX_COST}"})
    assert ok.cost("POST", "/v1/invoice/convert") == MAX_COST
    for n in (MAX_COST + 1, 10**30):
        with pytest.raises(ConfigError, match="at most 2147483647"):
            PlatformConfig.from_env({"EINVOICE_CREDIT_COSTS": f"/v1/invoice/convert={n}"})


def test_a_job_s_credits_are_int64_in_the_openapi_document():
    document = build({"/v1/jobs", "/v1/jobs/{job_id}"}, PlatformConfig())
    props = document["paths"]["/v1/jobs/{job_id}"]["get"]["responses"]["200"]["content"]["application/json"][
        "schema"]["properties"]
    assert all(props[k]["format"] == "int64" for k in ("creditsReserved", "creditsCharged"))
    assert props["total"]["format"] == "int32"
