"""A payment received (212 Encaissée) states one amount received per VAT rate (BR-FR-CDV-14: MEN, MDT-215 with its
rate MDT-224). Two amounts at one rate were generated as sent, and the official chain takes them (it counts the MEN
blocks, not their rates): the platform declaring the VAT due on receipts is left to guess which is meant, or to add
them up. Now the second is a 400 naming its rate's field and MDT term, and the first's place."""
from __future__ import annotations

import copy

import pytest

from cdar_cases import official_chain
from conftest import REPO
from pipeline.errors import ApiError
from pipeline.flows import status_generate
from pipeline.invoice import cdar
from pipeline.invoice.request_json import dump_request, load_request
from pipeline.write import cdar as writing

FIXTURE = load_request((REPO / "fixtures" / "fr-status-212.json").read_bytes())   # MEN at 20 % and at 5.5 %


def _refusal(request: dict) -> ApiError:
    with pytest.raises(ApiError) as caught:
        status_generate.generate_status(dump_request(request))
    return caught.value


def _characteristics(request: dict, detail: int = 0) -> list[dict]:
    return request["status"]["details"][detail]["characteristics"]


def test_a_second_amount_at_one_rate_is_a_400_naming_its_rate():
    request = copy.deepcopy(FIXTURE)
    _characteristics(request)[1]["percent"] = _characteristics(request)[0]["percent"]
    exc = _refusal(request)
    assert exc.http_status == 400
    [entry] = exc.errors
    assert (entry.code, entry.field, entry.businessTerm) == \
        ("INVALID_VALUE", "status.details[0].characteristics[1].percent", "MDT-224")
    assert "status.details[0].characteristics[0]" in entry.message and "BR-FR-CDV-14" in entry.message


def test_the_rate_is_compared_as_a_number_across_details():
    request = copy.deepcopy(FIXTURE)
    request["status"]["details"].append({"characteristics": [
        {"typeCode": "MEN", "amount": load_request(b"15.00"), "percent": load_request(b"5.50")}]})
    _characteristics(request)[1]["percent"] = load_request(b"5.5")
    [entry] = _refusal(request).errors
    assert entry.field == "status.details[1].characteristics[0].percent"


def test_the_official_chain_alone_takes_the_two_amounts():
    """Why the model checks it: generated without the check, the message passes FNFE's chain."""
    request = copy.deepcopy(FIXTURE)
    _characteristics(request)[1]["percent"] = _characteristics(request)[0]["percent"]
    xml = writing.to_cdar(status_generate.canonical_of(cdar.StatusRequest.model_validate(request))).xml
    assert official_chain(xml)[0]


def test_distinct_rates_and_other_data_at_one_rate_are_generated():
    request = copy.deepcopy(FIXTURE)
    # an amount paid (MPA) beside the amount received at the same rate is another datum, not a second receipt
    _characteristics(request).append({"typeCode": "MPA", "amount": 100, "currencyCode": "EUR", "percent": 20})
    xml, report = status_generate.generate_status(dump_request(request))
    assert report.valid and official_chain(xml)[0]
