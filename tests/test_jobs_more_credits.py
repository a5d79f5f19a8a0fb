"""A job's credits at extreme prices: `cost x accepted documents` past what any key may hold (MAX_BALANCE) was an
OverflowError on SQLite (a price past 2**63 - 1: a 500 at submission); now no key holds it, so the job is not
created (402 INSUFFICIENT_CREDITS, nothing written), on both stores. A job whose documents were all refused holds
nothing and is created whatever its price."""
from __future__ import annotations

from pipeline.storage.jobs import MAX_COST
from pipeline.storage.store import MAX_BALANCE
from tests.test_jobs import job_store  # noqa: F401 - the fixture (both stores)

SPANS = {0: (0, 1), 1: (1, 1)}


def test_a_hold_past_what_a_key_may_hold_is_refused_on_both_stores(job_store):  # noqa: F811 - the fixture
    store = job_store
    store.create_key("k1", "t", "test", "x", MAX_BALANCE, None)
    for n, cost in enumerate((MAX_BALANCE // 2 + 1, MAX_BALANCE + 1, 2**63, 10**30)):
        assert store.create_job(f"j{n}", "k1", "validate", "{}", ["a", "b"], {}, SPANS, cost) is None, cost
        assert store.get_job(f"j{n}") is None
    assert store.get_key("k1").balance == MAX_BALANCE
    job = store.create_job("held", "k1", "validate", "{}", ["a", "b"], {}, SPANS, MAX_COST)  # the dearest price
    assert job.to_dict()["creditsReserved"] == 2 * MAX_COST > 2**31  # (int64 in the OpenAPI document)
    assert store.get_key("k1").balance == MAX_BALANCE - 2 * MAX_COST


def test_a_job_of_refused_documents_only_holds_nothing_whatever_its_price(job_store):  # noqa: F811 - the fixture
    store = job_store
    store.create_key("k1", "t", "test", "x", 0, None)
    job = store.create_job("j1", "k1", "validate", "{}", ["a", "b"], {0: '{"error": 1}', 1: '{"error": 2}'}, {},
                           10**30)
    assert (job.state, job.reserved, job.errors) == ("done", 0, 2)
    assert store.get_key("k1").balance == 0
