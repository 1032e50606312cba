"""Impersonation (issue 14, defect 6): names are compared as a reader sees them (NFKC, case, TR39
confusables, separators), the built-in baselines' names and organisation are theirs alone, and a
(model name, organisation) belongs to the identity that used it first. Each refusal is one clear
message naming the field and the entry it reads like, and costs no quota."""

from __future__ import annotations

import doctest
import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import gradio as gr
import pytest
from gradio_client import Client, handle_file

from speakersleuth.space import disclosure, names, submit
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.store import BASELINE_SUBMITTER, Metadata
from speakersleuth.space.submitter import NAME_REFUSED
from tests.support.space_support import free_port, predictions, running_app

BASELINE = {
    "model_name": "pairwise-resemblyzer",
    "organisation": names.BASELINE_ORGANISATION,
    "model_type": "embedding",
    "access": "open",
    "link": "",
    "model_date": "",
}
FORM = {**BASELINE, "model_name": "judge A", "organisation": "lab"}
CYRILLIC_COPY = "\u0440\u0430irwise-resemblyzer"  # Cyrillic р and а


def profile(username: str) -> gr.OAuthProfile:
    return gr.OAuthProfile({"name": username, "preferred_username": username, "profile": "", "picture": ""})


ALICE, BOB, MALLORY = profile("alice"), profile("bob"), profile("mallory")


@pytest.fixture
def seeded(make, gold):
    """A Submitter whose store holds one baseline, stored as ``space.seed`` does; quota 1."""
    submitter = make(rate_limit=1)
    assert seed_baseline(submitter, gold, BASELINE).status == "accepted"
    return submitter


def seed_baseline(submitter, gold, form, pattern=1):
    return submitter.submit(predictions(gold, pattern), "main", form, as_user=BASELINE_SUBMITTER, rate_limited=False)


@pytest.mark.parametrize(
    "look_alike",
    [
        CYRILLIC_COPY,
        "p\u03b1irwise-resemblyzer",  # Greek alpha
        "\u0420\u0410IRWISE-RESEMBLYZER",  # Cyrillic capitals
        "\uff50\uff41\uff49\uff52\uff57\uff49\uff53\uff45-resemblyzer",  # fullwidth
        "Pairwise-Resemblyzer",
        "pairwise\u2010resemblyzer",
        "pairwise\u2013resemblyzer",
        "pairwise\u2014resemblyzer",  # hyphen, en and em dash
        "pairwise_resemblyzer",
        "pairwise resemblyzer",
        " pairwise -- resemblyzer ",
        "pairwise\ufe0f-resemblyzer",
        "pair\u3164wise-resemblyzer",  # invisible variation selector, Hangul filler
        "pa\u0131rw\u0131se-resemblyzer",  # dotless i
        "pairwise-resemblyzer\u2800",
        "pairwise\u2800resemblyzer\u3000",  # Braille blank, ideographic space
    ],
)
def test_look_alikes_fold_to_one_name(look_alike):
    assert names.confusable(look_alike, "pairwise-resemblyzer")


@pytest.mark.parametrize(
    "a, b",
    [
        ("SpeakerSIeuth baselines", names.BASELINE_ORGANISATION),  # capital I for l
        ("Institute", "lnstitute"),
        ("Institute", "institute"),
        ("m0del", "model"),
        ("rnodel", "model"),
        ("\u0391\u0392\u0395", "ABE"),  # Greek capitals
    ],
)
def test_letters_that_read_alike_are_confusable(a, b):
    assert names.confusable(a, b)


@pytest.mark.parametrize(
    "a, b",
    [
        ("pairwise-resemblyzer", "centroid-resemblyzer"),
        ("pairwise-ecapa", "pairwise-ecapa2"),
        ("judge A", "judge B"),
        ("model v1.5", "model v15"),
        ("pairwise-resemblyzer", "pairwiseresemblyzer"),
        ("caf\u00e9", "cafe"),
        ("lion", "iion"),
        ("\u5224\u5b9a\u5668", "\u5224\u5b9a"),
    ],
)
def test_different_names_stay_different(a, b):
    assert not names.confusable(a, b)


@pytest.mark.parametrize(
    "form, fields",
    [
        (BASELINE, ["model name", "organisation"]),  # the exact copy of name and organisation
        ({**BASELINE, "model_name": CYRILLIC_COPY, "organisation": ""}, ["model name"]),
        (
            {**BASELINE, "organisation": "my lab"},
            ["model name"],
        ),  # a baseline's name is reserved whatever the organisation
        ({**FORM, "organisation": "SpeakerSleuth Baselines"}, ["organisation"]),
        ({**FORM, "organisation": "Speaker\u0405leuth_baselines"}, ["organisation"]),  # Cyrillic Ѕ
        ({**FORM, "organisation": "SpeakerSleuthBaselines"}, ["organisation"]),  # anything starting "SpeakerSleuth"
        ({**FORM, "organisation": "Speaker Sleuth team\u2800"}, ["organisation"]),
    ],
)
def test_baselines_names_and_organisation_are_reserved(seeded, gold, form, fields):
    result = seeded.submit(predictions(gold, 2), "main", form, MALLORY)
    assert result.status == "invalid", result
    assert result.message == NAME_REFUSED
    assert len(result.errors) == len(fields)
    for field, error in zip(fields, result.errors):
        assert error.startswith(f"{field} \u201c{form[field.replace(' ', '_')]}\u201d reads as"), error
        expected = (
            "baseline \u201cpairwise-resemblyzer\u201d"
            if field == "model name"
            else "reserved for the built-in baselines"
        )
        assert expected in error and "reserved" in error
    assert [r.submitter for r in seeded.store.results()] == [BASELINE_SUBMITTER]
    assert seeded.submit(predictions(gold, 2), "main", FORM, MALLORY).status == "accepted"  # no quota was used


def test_seeding_is_never_refused(make, gold):
    submitter = make()
    assert submitter.submit(predictions(gold, 1), "main", FORM, ALICE).status == "accepted"
    assert seed_baseline(submitter, gold, BASELINE, 2).status == "accepted"
    assert seed_baseline(submitter, gold, {**BASELINE, "model_name": "centroid-resemblyzer"}, 3).status == "accepted"
    assert seed_baseline(submitter, gold, FORM, 4).status == "accepted"  # even a pair someone else used first
    assert len(submitter.store.results()) == 4


def test_a_name_and_organisation_belong_to_whoever_used_them_first(make, gold):
    submitter = make(rate_limit=3)
    assert submitter.submit(predictions(gold, 1), "main", FORM, ALICE).status == "accepted"
    assert submitter.submit(predictions(gold, 2), "main", FORM, ALICE).status == "accepted"  # the owner reuses it
    copy = submitter.submit(
        predictions(gold, 3), "main", {**FORM, "model_name": "Judge \u0410", "organisation": "LAB"}, BOB
    )
    assert copy.status == "invalid" and copy.errors == [
        "model name and organisation \u201cJudge \u0410\u201d (\u201cLAB\u201d) read as \u201cjudge A\u201d (\u201clab\u201d), "
        "which another submitter used first; choose another model name or organisation"
    ]
    assert (
        submitter.submit(predictions(gold, 4), "main", {**FORM, "organisation": "other lab"}, BOB).status == "accepted"
    )
    assert submitter.submit(predictions(gold, 5), "main", {**FORM, "model_name": "judge B"}, BOB).status == "accepted"
    assert submitter.submit(predictions(gold, 9), "main", {**FORM, "organisation": ""}, ALICE).status == "accepted"
    no_org = submitter.submit(predictions(gold, 10), "main", {**FORM, "organisation": ""}, BOB)
    assert no_org.status == "invalid" and "(no organisation)" in no_org.errors[0]
    assert (
        submitter.submit(predictions(gold, 11), "main", {**FORM, "model_name": "judge C"}, BOB).status == "accepted"
    )  # quota kept


def test_the_first_user_owns_a_pair_even_when_others_used_it_before_the_rule(make, gold):
    submitter = make()
    for user, at in (("hf:bob", 200.0), ("hf:alice", 100.0)):  # stored before names were checked
        submitter.store.add(
            variant="main",
            sha256=hashlib.sha256(user.encode()).hexdigest(),
            predictions=b"{}",
            scores={},
            metadata=Metadata("judge A", "lab"),
            submitter=user,
            num_lines=1,
            now=at,
        )
    assert submitter.submit(predictions(gold, 1), "main", FORM, ALICE).status == "accepted"
    assert submitter.submit(predictions(gold, 2), "main", FORM, BOB).status == "invalid"


def test_a_withdrawn_submission_keeps_its_name(make, gold):
    submitter = make()
    record = submitter.submit(predictions(gold, 1), "main", FORM, ALICE).record
    assert submitter.withdraw(record.id, "superseded", ALICE).status == "withdrawn"
    assert submitter.submit(predictions(gold, 2), "main", FORM, MALLORY).status == "invalid"


@pytest.mark.parametrize(
    "form, error",
    [
        ({**FORM, "model_name": "\u3164"}, "model name shows no visible character"),
        ({**FORM, "organisation": "\u3164\ufe0f"}, "organisation shows no visible character"),
        ({**FORM, "model_name": "\u2800\u2800"}, "model name shows no visible character"),  # Braille blanks
        (
            {**FORM, "model_name": "\u2713 judge"},
            "model name contains a check mark (\u2713), which looks like the "
            "leaderboard's mark of a verified baseline",
        ),
        (
            {**FORM, "organisation": "lab \u2705"},
            "organisation contains a check mark (\u2705), which looks like the "
            "leaderboard's mark of a verified baseline",
        ),
        ({**FORM, "model_name": "j" * 101}, "model name is longer than 100 characters"),
        ({**FORM, "organisation": "o" * 101}, "organisation is longer than 100 characters"),
        ({**FORM, "model_name": "\u0440" * 5_000_000}, "model name is longer than 100 characters"),  # 10 MB of UTF-8
    ],
)
def test_hostile_names_are_one_clear_refusal(make, gold, form, error):
    submitter = make()
    result = submitter.submit(predictions(gold), "main", form, ALICE)
    assert (result.status, result.errors) == ("invalid", [error])
    assert submitter.store.results() == []


def test_a_refusal_quoting_a_stored_name_can_always_be_sent(make, gold):
    """A stored name from before surrogates were refused is quoted escaped, never raw."""
    submitter = make()
    submitter.store.add(
        variant="main",
        sha256="0" * 64,
        predictions=b"{}",
        scores={},
        metadata=Metadata("judge\ud800", "lab"),
        submitter="hf:alice",
        num_lines=1,
        now=1.0,
    )
    result = submitter.submit(predictions(gold), "main", {**FORM, "model_name": "JUDGE\\ud800"}, BOB)
    assert result.status == "invalid" and "\u201cjudge\\ud800\u201d" in result.errors[0]
    submit.result_html(result).encode("utf-8")


def test_through_the_api_a_multi_megabyte_name_is_one_refusal_and_a_look_alike_is_refused(tmp_path, dataset, gold):
    """The form's max_length binds the browser only: the HTTP API passes any text to the handler."""
    config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path / "data"), port=free_port())
    path = tmp_path / "upload.jsonl"
    path.write_bytes(predictions(gold, 2))
    with running_app(config, n_bootstrap=50) as (app, url):
        assert seed_baseline(app.submitter, gold, BASELINE).status == "accepted"
        client = Client(
            url, verbose=False, download_files=False, analytics_enabled=False, httpx_kwargs={"timeout": 120}
        )
        for name, error in (
            ("x" * 3_000_000, "model name is longer than 100 characters"),
            (CYRILLIC_COPY, "reads as the built-in baseline"),
        ):
            status = client.predict(
                handle_file(str(path)), "main", name, "", "other", "open", "", "", api_name="/submit"
            )[0]
            assert error in status and status.count("<li>") == 1, status[:300]
        assert [r.submitter for r in app.store.results()] == [BASELINE_SUBMITTER]


def test_docstring_examples():
    result = doctest.testmod(names)
    assert result.attempted and result.failed == 0


def test_identities_racing_for_one_new_name_get_it_once(make, gold, monkeypatch):
    """Both pass the first check before either is stored (a barrier in scoring holds them there);
    the check under the store's lock gives the name to one."""
    submitter = make()
    barrier = threading.Barrier(2, timeout=30)
    scorer = disclosure.score_submission

    def score_together(*args, **kwargs):
        barrier.wait()
        return scorer(*args, **kwargs)

    monkeypatch.setattr(disclosure, "score_submission", score_together)
    with ThreadPoolExecutor(2) as pool:
        results = list(
            pool.map(
                lambda i: submitter.submit(predictions(gold, i + 1), "main", FORM, address=f"10.9.0.{i}"), range(2)
            )
        )
    assert sorted(r.status for r in results) == ["accepted", "invalid"], results
    (refused,) = [r for r in results if r.status == "invalid"]
    assert refused.message == NAME_REFUSED and "another submitter used first" in refused.errors[0]
    assert len(submitter.store.results()) == 1
