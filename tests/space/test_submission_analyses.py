"""The analyses on a submission's page (issue 17): the tables and the duration chart of a judge right
only on the longest clips, the optional setting tag of the Submit form (validated, stored, shown)
and the deltas across one submitter's settings of a model."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import numpy as np
import pytest
from gradio_client import Client, handle_file

from speakersleuth.metrics.score import leaderboard_row
from speakersleuth.space import leaderboard_table
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.disclosure import Disclosure
from speakersleuth.space.submission_form import FormError, clean_metadata
from speakersleuth.space.submission_page import SubmissionPage
from tests.support.space_support import free_port, predictions, running_app

FORM = {
    "model_name": "judge",
    "organisation": "lab",
    "model_type": "LALM",
    "access": "open",
    "link": "",
    "model_date": "",
}


@pytest.fixture
def page(tmp_path, make):
    return SubmissionPage(make(), tmp_path / "public" / "predictions")


def longest_quarter(page: SubmissionPage) -> dict[str, str]:
    """Id -> scenario of the instances in Q4: the 2 longest of 9 by rank, ties in gold order."""
    prov = page.provenance("main")
    return {prov.ids[i]: prov.scenario[i] for i in np.argsort(prov.seconds, kind="stable")[-(len(prov.ids) // 4) :]}


def right_on_the_longest(page: SubmissionPage, gold) -> bytes:
    """Detection right on ``longest_quarter``, wrong elsewhere; localization always [] (right on S1 only)."""
    longest = longest_quarter(page)
    flip = {"consistent": "inconsistent", "inconsistent": "consistent"}
    lines = []
    for rid, row in gold.tasks["detection"].items():
        lines.append(
            {"task": "detection", "id": rid, "prediction": row["label"] if rid in longest else flip[row["label"]]}
        )
        lines.append({"task": "localization", "id": rid, "prediction": []})
    lines += [{"task": "discrimination", "id": rid, "prediction": "A"} for rid in gold.tasks["discrimination"]]
    return "\n".join(map(json.dumps, lines)).encode()


def table_rows(html: str, title: str) -> list[list[str]]:
    """The cells of the table under the heading that starts with ``title``."""
    table = html.split(f"<h4>{title}", 1)[1].split("</table>", 1)[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in table.split("<tr>")[2:]]


def test_the_page_shows_accuracy_by_duration_source_vc_model_and_scenario(page, gold):
    record = page.submitter.submit(right_on_the_longest(page, gold), "main", FORM).record
    details, _, _, analyses, chart = page.show(record.id)
    duration = table_rows(analyses, "By duration quartile")
    assert [row[0].split(" ")[0] for row in duration] == ["Q1", "Q2", "Q3", "Q4"]
    assert duration[0][2] == "0.0 (0.0 to 0.0)" and duration[3][2] == "100.0 (100.0 to 100.0)"
    longest = list(longest_quarter(page).values())
    assert duration[3][1] == f"2 ({'/'.join(str(longest.count(s)) for s in ('S1', 'S2', 'S3'))})"
    assert table_rows(analyses, "By source corpus")[0][:2] == ["synthetic", "9 (3/3/3)"]
    vc_model = table_rows(analyses, "By voice-conversion model")[0]
    assert vc_model[:2] == ["tone-shift", "6 (0/3/3)"]  # right on the S2/S3 of Q4 only
    assert vc_model[2].startswith(f"{100 * (len(longest) - longest.count('S1')) / 6:.1f} (")
    scenario = table_rows(analyses, "By scenario")
    assert [row[3] for row in scenario] == ["100.0 (100.0 to 100.0)", "0.0 (0.0 to 0.0)", "0.0 (0.0 to 0.0)"]  # loc []
    bars = chart.data
    detection = bars[bars["task"] == "Detection accuracy"]
    assert detection["value"].tolist() == [0.0, 0.0, 0.0, 100.0] and detection["quartile"].iloc[0].startswith("Q1 (")
    assert "<dt>Setting</dt><dd>not tagged</dd>" in details and "Settings of this model" not in analyses


def test_the_setting_tag_is_optional_and_checked():
    assert clean_metadata("m").setting == "" and clean_metadata("m", setting=None).setting == ""
    assert clean_metadata("m", setting="no_reference").setting == "no_reference"
    with pytest.raises(FormError, match="setting must be one of main, context, no_reference, per_turn, or empty"):
        clean_metadata("m", setting="zero-shot")


def test_a_submitter_with_two_settings_sees_the_deltas_against_main(page, gold, make):
    main = page.submitter.submit(right_on_the_longest(page, gold), "main", {**FORM, "setting": "main"}).record
    other = {**FORM, "setting": "no_reference"}
    refused = page.submitter.submit(b"", "main", {**other, "setting": "zero-shot"})
    assert refused.status == "invalid" and any("setting must be one of" in e for e in refused.errors)
    flipped = (
        right_on_the_longest(page, gold).replace(b'"consistent"', b'"x"').replace(b'"inconsistent"', b'"consistent"')
    )
    no_reference = page.submitter.submit(
        flipped.replace(b'"x"', b'"inconsistent"'), "main", other, address="127.0.0.1"
    ).record
    assert page.submitter.store.get(no_reference.id).metadata.setting == "no_reference"
    details, _, _, analyses, _ = page.show(no_reference.id)
    assert "<dt>Setting</dt><dd>no_reference</dd>" in details
    rows = table_rows(analyses, "Settings of this model")
    assert [row[0] for row in rows] == ["main", "no_reference"]
    before, after = leaderboard_row(main.scores)["det_bal_acc"], leaderboard_row(no_reference.scores)["det_bal_acc"]
    assert rows[0][4] == f"{before:.1f} (+0.0)" and rows[1][4] == f"{after:.1f} ({after - before:+.1f})"
    assert after != before
    assert table_rows(page.show(main.id)[3], "Settings of this model") == rows  # the same table on both pages
    someone_else = page.submitter.submit(
        right_on_the_longest(page, gold).replace(b"[]", b"[1]"),
        "main",
        {**FORM, "organisation": "other lab", "setting": "context"},
        address="10.0.0.7",
    ).record
    assert "context" not in [row[0] for row in table_rows(page.show(main.id)[3], "Settings of this model")]
    assert "Settings of this model" not in page.show(someone_else.id)[3]  # a single setting: nothing to compare
    frame, _ = leaderboard_table.leaderboard_frame(Disclosure().rows(page.submitter.store.results()))
    assert {f"{FORM['model_name']} [{s}]" for s in ("main", "no_reference", "context")} <= set(
        frame[leaderboard_table.MODEL]
    )


def test_the_submit_form_stores_the_setting_over_http(dataset, gold, tmp_path):
    config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port())
    upload = tmp_path / "p.jsonl"
    upload.write_bytes(predictions(gold, 3))
    with running_app(config, n_bootstrap=20) as (app, url):
        client = Client(url, verbose=False, download_files=False, analytics_enabled=False)
        status = client.predict(
            handle_file(str(upload)), "main", "m", "org", "other", "open", "", "", "per_turn", api_name="/submit"
        )[0]
        assert "Accepted" in status and [r.metadata.setting for r in app.store.results()] == ["per_turn"]
