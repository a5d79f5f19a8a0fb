"""Issue 37: documents we cannot judge, sent through every way in as a receiver does: batch validation over HTTP and
a validate job (with its reports for people, in English and German) on a started `pipeline serve`. Each says
`indeterminate` (never valid, never a format error), why, and the rules that ran; the one that also breaks a rule
that ran is `invalid`, its finding listed beside what was not judged. The single endpoint's report is the reference.

And what judged a document the XRechnung configuration rejects (no KoSIT scenario for its id): its scenario selection,
listed in `rules` (it was `rules: []` beside `version: 3.0.2`)."""
from __future__ import annotations

import io
import json
import zipfile

import pytest
import requests
from lxml import html

from pipeline.check import verdict
from test_jobs import results, wait_for
from test_parse import upload
from test_platform_helpers import serve_with_key
from test_verdict import ZUGFERD1_XML, client, edition_2026, own_pdf, xrechnung_40  # noqa: F401 - the fixtures
from test_verdict_version import _edited

INDETERMINATE = "indeterminate"


@pytest.fixture(scope="module")
def documents(own_pdf) -> dict[str, tuple[bytes, str, list[str]]]:  # noqa: F811 - the fixture
    """name -> (document, its verdict, the packs that ran on it at /xrechnung/validate)."""
    unknown_profile = _edited(own_pdf, invoice=lambda xml: xml.replace(
        b">urn:cen.eu:en16931:2017<", b">urn:cen.eu:en16931:2017#conformant#urn:factur-x.eu:1p0:premium<", 1))
    broken = xrechnung_40().replace(b"<ram:TypeCode>380</ram:TypeCode>", b"<ram:TypeCode>999</ram:TypeCode>", 1)
    return {"cen2026.xml": (edition_2026(), INDETERMINATE, []),
            "xrechnung40.xml": (xrechnung_40(), INDETERMINATE, ["en16931"]),
            "zugferd1.xml": (ZUGFERD1_XML.read_bytes(), INDETERMINATE, ["zugferd-1.0"]),
            "premium.pdf": (unknown_profile, INDETERMINATE, ["pdf", "en16931"]),
            "xrechnung40-broken.xml": (broken, "invalid", ["en16931"])}


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    server, _, token = serve_with_key(tmp_path_factory.mktemp("verdict-surfaces"), "verdict", 100, workers=1,
                                      warm=False)
    yield server, token
    server.stop()


def _single(client, data: bytes, name: str) -> dict:  # noqa: F811 - the fixture
    # a PDF gets the ZUGFeRD / Factur-X report in a batch and a job, whatever the rules asked for (README)
    spec = "zugferd" if name.endswith(".pdf") else "xrechnung"
    report = upload(client, data, {}, name=name, path=f"/v1/invoice/{spec}/validate").json
    report.pop("requestId", None)
    return report


def _said(report: dict, verdict_: str, ran: list[str]) -> None:
    assert (report["verdict"], report["valid"]) == (verdict_, False), report
    assert [n["code"] for n in report["notJudged"]] == [verdict.RULES_NOT_INSTALLED]
    assert [r["pack"] for r in report["rules"]] == ran
    if verdict_ == INDETERMINATE:  # neither a proper e-invoice nor a format error: its own class and sentence
        assert report["summary"]["errors"] == 0 and report["summary"]["worstCategory"] == INDETERMINATE
        assert report["summary"]["meaning"] in (verdict.MEANING, verdict.MEANING_ABROAD)
    else:  # the error found on the rules that ran stands
        assert "BR-CL-01" in {i["code"] for i in report["issues"] if i["severity"] == "ERROR"}


def _files(documents: dict) -> list[tuple]:
    return [("file", (name, data, "application/octet-stream")) for name, (data, _, _) in documents.items()]


def test_batch_over_http_says_indeterminate_and_counts_it(live, client, documents):  # noqa: F811 - the fixture
    server, token = live
    r = requests.post(f"{server.url}/v1/invoice/xrechnung/validate/batch", files=_files(documents), timeout=300,
                      headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200, r.text
    answer = r.json()
    assert [e["name"] for e in answer["results"]] == list(documents)
    for entry in answer["results"]:
        data, said, ran = documents[entry["name"]]
        _said(entry["report"], said, ran)
        entry["report"].pop("requestId", None)
        assert entry["report"] == _single(client, data, entry["name"])
    # `invalid` counts every document that is not valid, `indeterminate` those of them not judged (README)
    assert {k: answer["summary"][k] for k in ("files", "valid", "invalid", INDETERMINATE, "errors")} == \
        {"files": 5, "valid": 0, "invalid": 5, INDETERMINATE: 4, "errors": 0}


@pytest.mark.parametrize("language, said, why, ran", [("en", "Indeterminate", "Not judged", "Rules applied"),
                                                       ("de", "Nicht beurteilbar", "Nicht beurteilt",
                                                        "Angewandte Regeln")])
def test_a_job_and_its_reports_for_people_say_indeterminate(live, client, documents, language, said, why,
                                                            ran):  # noqa: F811 - the fixture
    server, token = live
    auth = {"Authorization": f"Bearer {token}"}
    request = {"operation": "validate", "spec": "xrechnung", "html": True, "metadataLanguage": language}
    r = requests.post(f"{server.url}/v1/jobs", headers=auth, timeout=120,
                      files=[("request", (None, json.dumps(request), "application/json")), *_files(documents)])
    assert r.status_code == 202, r.text
    job = wait_for(server.url, token, r.json()["id"])
    assert (job["state"], job["valid"], job["invalid"], job[INDETERMINATE], job["errors"]) == ("done", 0, 5, 4, 0)
    lines = results(server.url, token, job["id"])
    assert [line["name"] for line in lines] == list(documents)
    for line in lines:
        data, verdict_, packs = documents[line["name"]]
        _said(line["report"], verdict_, packs)
        line["report"].pop("requestId", None)
        assert line["report"] == _single(client, data, line["name"])
    reports = zipfile.ZipFile(io.BytesIO(requests.get(f"{server.url}/v1/jobs/{job['id']}/results?format=zip",
                                                      headers=auth, timeout=120).content))
    for name, (_, verdict_, packs) in documents.items():
        page = html.fromstring(reports.read(f"{name}.html"))
        [box] = page.xpath("//section[contains(@class, 'verdict')]")
        text = " ".join(box.text_content().split())
        assert box.get("class").split()[-1] == verdict_
        assert why in text and verdict.RULES_NOT_INSTALLED in text and ran in text
        assert all(pack in text for pack in packs) if packs else f"{ran}: {'none' if language == 'en' else 'keine'}" \
            in text
        if verdict_ == INDETERMINATE:
            assert text.startswith(said) and verdict.MEANING[language][:60] in text


def _rejected() -> bytes:
    """An XRechnung 3.0 invoice whose id has a suffix no scenario of the configuration names: KoSIT rejects it."""
    return xrechnung_40().replace(b"xrechnung_4.0", b"xrechnung_3.0.2")


def test_a_kosit_rejection_names_the_scenario_selection_that_judged_it(client, tmp_path):  # noqa: F811 - the fixture
    report = upload(client, _rejected(), {}, path="/v1/invoice/xrechnung/validate").json
    assert (report["verdict"], report["notJudged"]) == ("invalid", [])
    assert [i["code"] for i in report["issues"] if i["severity"] == "ERROR"] == ["XRECHNUNG-NO-SCENARIO"]
    # `version` names the configuration, and `rules` what of it ran: its scenario selection, no XSD or Schematron
    assert report["rules"] == [{"pack": "xrechnung", "version": report["version"],
                                "steps": [{"step": "scenarios", "name": "scenarios.xml"}]}]
    page = upload(client, _rejected(), {"metadataLanguage": "en"}, path="/v1/invoice/xrechnung/validate",
                  headers={"Accept": "text/html"})
    [applied] = html.fromstring(page.content).xpath("//section[contains(@class, 'verdict')]/div[@class='applied']")
    assert " ".join(applied.text_content().split()) == f"Rules applied1. xrechnung {report['version']}: scenarios.xml"
