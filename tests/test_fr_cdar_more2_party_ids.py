"""A party's SIREN (scheme 0002) or SIRET (0009) in a status message is written in the digits 0-9.

`pipeline.invoice.france` judged them with Python's `\\d`, which takes any script's digits: the issuer's SIREN
"２０００００００８" (full width) passed, Luhn key and all, into a message FNFE's chain alone finds valid (it checks no
party id). Now a 400 naming the field, as a wrong length is; the same id in 0-9 is generated."""
from __future__ import annotations

import pytest

from cdar_cases import official_chain
from conftest import REPO
from pipeline.errors import ApiError
from pipeline.flows import status_generate
from pipeline.invoice.request_json import dump_request, load_request

FIXTURE = load_request((REPO / "fixtures" / "fr-status-207.json").read_bytes())
WIDE = {ord(str(n)): chr(0xFF10 + n) for n in range(10)}   # full-width digits


@pytest.mark.parametrize("party, scheme, value", [("issuer", "0002", "200000008"),
                                                  ("recipients", "0009", "10000000900017")])
def test_a_party_id_in_other_digits_is_a_400_naming_it(party, scheme, value):
    request = load_request(dump_request(FIXTURE))
    holder = request["message"][party][0] if party == "recipients" else request["message"][party]
    field = f"message.{party}[0].id" if party == "recipients" else f"message.{party}.id"
    holder.update(id=value, idScheme=scheme)
    xml = status_generate.generate_status(dump_request(request))[0]   # in 0-9: generated, valid
    assert official_chain(xml)[0]
    holder["id"] = value.translate(WIDE)
    with pytest.raises(ApiError) as refused:
        status_generate.generate_status(dump_request(request))
    assert refused.value.http_status == 400
    [error] = refused.value.errors
    assert (error.field, error.code) == (field, "INVALID_VALUE") and "digits 0-9" in error.message
