"""The blind copy (issue 17): ``python -m speakersleuth.speakersleuth_dataset blind`` writes a public copy whose
test split has no gold, provenance or dialogue column, ids that only a secret makes and rows in
their order; the scorer with ``--gold`` gives exactly the full folder's scores; a stock
``load_dataset`` reads the public copy; the Space scores it from the private gold and its Viewer
shows no test gold."""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import Counter
from pathlib import Path

import gradio as gr
import huggingface_hub
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from datasets import load_dataset

import speakersleuth.speakersleuth_dataset as ssd
import speakersleuth.speakersleuth_format.blind as ssd_blind
from speakersleuth.builder_scripts import card
from speakersleuth.metrics.report import main as score_main
from speakersleuth.metrics.submission import load_gold
from speakersleuth.space import viewer
from speakersleuth.space.config import SpaceConfig
from speakersleuth.space.store import SqliteStore
from speakersleuth.space.submitter import Submitter, gold_folder
from tests.support.synthetic import build_synthetic_dataset, dialogue_records

DIALOGUES = 6
#: A seed nobody could guess (blind refuses guessable ones).
SECRET_SEED = 2**62 + 12345
#: A build card body like the builder's: an introduction with the paragraph on gold columns, then sections.
CARD_BODY = """# SpeakerSleuth (synthetic)

For tests only.

Judge each instance on its own: S1, S2 and S3 of a dialogue share `dialogue_id`.

## Statistics

| main | test | 18 |

## Voice conversion

Build: seed 0.

## Data fields

### `detection`

| column | type | meaning |
|---|---|---|
| `dialogue_id` | string | the build's table |

Audio columns hold clips.

## Using the data in a training loop

{TRAINING_LOOP}
## Citation

cite this"""
#: The builder's own training-loop section (the template is str.format-ed: braces doubled)
TRAINING_LOOP = (
    card.TEMPLATE.read_text().partition("## Using the data in a training loop\n")[2].partition("\n## ")[0].format()
)
CARD_BODY = CARD_BODY.replace("{TRAINING_LOOP}", TRAINING_LOOP)
#: What the issue hides (from its text): each task's gold, how an instance was made (for discrimination,
#: each candidate's), and the dialogue, which groups S1/S2/S3.
GOLD = ("label", "inconsistent_turns", "answer", "gold_ranking")
MADE = ("scenario", "converted_turn", "vc_model", "substitute_speaker", "substitute_gender", "substitute_similarity")
CANDIDATES_MADE = ("candidate_scenarios", "candidate_substitute_speakers", "candidate_similarities")
HIDDEN = {*GOLD, *MADE, *CANDIDATES_MADE, "dialogue_id"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path, Path]:
    """A full build (main and 10turn, plus a labelled validation split of detection) and its blind
    copy: (full, public, gold)."""
    root = tmp_path_factory.mktemp("blind")
    full = build_synthetic_dataset(root / "full", dialogues=DIALOGUES, variants=("main", "10turn"))
    with ssd.DatasetWriter(full, "detection", "validation") as writer:
        writer.write_all(dialogue_records("main", 99, random.Random(1))[0])
    ssd.write_card(full, CARD_BODY, build_seed=SECRET_SEED)
    assert (
        ssd.main(
            ["blind", "--dataset", str(full), "--public-out", str(root / "public"), "--gold-out", str(root / "gold")]
        )
        == 0
    )
    return full, root / "public", root / "gold"


def _test_rows(folder: Path, config: str, columns=None) -> list[dict]:
    return ssd.read_rows(folder, config, "test", columns=columns).to_pylist()


def blind_to_p2(tmp_path: Path, folder: Path, *options: str) -> int:
    """The exit status of ``blind`` on ``folder`` into ``tmp_path/p2`` and ``tmp_path/g2``."""
    return ssd.main(
        [
            "blind",
            "--dataset",
            str(folder),
            "--public-out",
            str(tmp_path / "p2"),
            "--gold-out",
            str(tmp_path / "g2"),
            *options,
        ]
    )


def test_public_test_split_has_no_gold_and_ids_only_a_secret_makes(built, tmp_path):
    full, public, gold = built
    for config in ("detection", "localization", "discrimination", "detection-10turn", "discrimination-10turn"):
        names = pq.read_schema(ssd.shard_paths(public, config)[0]).names
        assert not set(HIDDEN) & set(names) and "source_id" not in names, (config, names)
        source = {row["id"] for row in _test_rows(full, config, ["id"])}
        ids = [row["id"] for row in _test_rows(public, config, ["id"])]
        assert not source & set(ids) and len(set(ids)) == len(ids) == len(source)
        assert {row["source_id"] for row in _test_rows(gold, config, ["source_id"])} == source
    assert [r["id"] for r in _test_rows(public, "detection", ["id"])] == [
        r["id"] for r in _test_rows(public, "localization", ["id"])
    ]
    again = ssd.write_blind(full, tmp_path / "public", tmp_path / "gold")  # a new secret: other ids for the same rows
    assert again["detection/test"] == 3 * DIALOGUES
    assert not {r["id"] for r in _test_rows(public, "detection", ["id"])} & {
        r["id"] for r in _test_rows(tmp_path / "public", "detection", ["id"])
    }
    assert "secret" not in " ".join(p.name for p in gold.rglob("*"))  # the mapping is the gold's source_id, no key


def test_rows_are_in_the_order_of_their_hashed_ids_not_by_dialogue(built):
    full, public, gold = built
    ids = [r["id"] for r in _test_rows(public, "detection", ["id"])]
    assert ids == sorted(ids)
    dialogue_of = {r["id"]: r["dialogue_id"] for r in _test_rows(gold, "detection", ["id", "dialogue_id"])}
    scenario_of = {r["id"]: r["scenario"] for r in _test_rows(gold, "detection", ["id", "scenario"])}
    built_order = [r["dialogue_id"] for r in _test_rows(full, "detection", ["dialogue_id"])]
    assert all(built_order[i] == built_order[i + 1] for i in (0, 1, 3, 4))  # the build keeps a dialogue together
    blocks = [{dialogue_of[i] for i in ids[k : k + 3]} for k in range(0, len(ids), 3)]
    assert not all(len(b) == 1 for b in blocks)
    assert [scenario_of[i] for i in ids] != ["S1", "S2", "S3"] * DIALOGUES


def test_scorer_with_gold_gives_exactly_the_full_folders_scores(built, tmp_path, capsys):
    full, public, gold = built
    source_of = {
        r["id"]: r["source_id"]
        for config in ("detection", "discrimination")
        for r in _test_rows(gold, config, ["id", "source_id"])
    }
    rng = random.Random(7)
    lines = []
    for task, rows in load_gold(full).tasks.items():
        for rid, row in rows.items():
            if task == "detection":
                lines.append({"task": task, "id": rid, "prediction": rng.choice(ssd.LABELS), "score": rng.random()})
            elif task == "localization":
                lines.append({"task": task, "id": rid, "prediction": rng.sample(range(1, 6), rng.randint(0, 2))})
            else:
                lines.append(
                    {"task": task, "id": rid, "prediction": rng.choice("ABC"), "ranking": rng.sample("ABC", 3)}
                )
    public_id = {source: pid for pid, source in source_of.items()}
    (tmp_path / "full.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "blind.jsonl").write_text(
        "".join(json.dumps({**line, "id": public_id[line["id"]]}) + "\n" for line in lines)
    )
    scores = []
    for file, where in (("full.jsonl", ["--dataset", str(full)]), ("blind.jsonl", ["--gold", str(gold)])):
        assert score_main(["--predictions", str(tmp_path / file), *where, "--json", "--bootstrap", "200"]) == 0
        scores.append(json.loads(capsys.readouterr().out))
        scores[-1].pop("sha256")
    assert scores[0] == scores[1] and scores[0]["detection"]["auroc"] is not None
    assert score_main(["--predictions", str(tmp_path / "blind.jsonl"), "--dataset", str(public)]) == 2
    assert "holds no gold: this is a blind copy's public folder" in capsys.readouterr().err


def test_scoring_the_other_copys_ids_says_which_copy_in_one_line(built, tmp_path, capsys):
    """The build's ids scored against the blind gold (the README's blind example judged on the
    build: every id was 'unknown'), and the public copy's ids scored against the build."""
    full, public, gold = built
    build_lines = [
        {"task": "detection", "id": rid, "prediction": "consistent"} for rid in load_gold(full).tasks["detection"]
    ]
    (tmp_path / "build.jsonl").write_text("".join(json.dumps(line) + "\n" for line in build_lines))
    assert (
        score_main(["--predictions", str(tmp_path / "build.jsonl"), "--dataset", str(public), "--gold", str(gold)])
        == 1
    )
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "are those of the build" in err
        and "judge the public copy (--dataset <public copy>)" in err
    ), err
    public_ids = [r["id"] for r in _test_rows(public, "detection", ["id"])]
    (tmp_path / "public.jsonl").write_text(
        "".join(json.dumps({"task": "detection", "id": i, "prediction": "consistent"}) + "\n" for i in public_ids)
    )
    assert score_main(["--predictions", str(tmp_path / "public.jsonl"), "--dataset", str(full)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "are a blind copy's" in err and "(--gold <gold folder>)" in err, err


def test_stock_load_dataset_reads_the_public_copy_with_audio(built):
    full, public, gold = built
    test = ssd.load("discrimination", "test", root=public)
    assert len(test) == DIALOGUES and not set(HIDDEN) & set(test.features)
    assert (
        test[0]["candidates"][0]["array"].size > 0 and test[0]["candidates"][0]["sampling_rate"] == ssd.SAMPLING_RATE
    )
    validation = load_dataset(str(public), "detection-validation", split="validation")
    assert {"label", "scenario", "dialogue_id"} <= set(validation.features) and len(validation) == 3
    original = ssd.shard_paths(full, "detection", "validation")[0]
    assert (public / "main" / "detection" / original.name).read_bytes() == original.read_bytes()
    counts = ssd.validate_folder(public)  # the validator knows a blind copy: no gold to check, clips decoded
    assert counts["discrimination/test"] == DIALOGUES and counts["detection/validation"] == 3
    card = (public / "README.md").read_text()
    assert "## Blind test split" in card and "For tests only." in card and "config_name: detection-validation" in card
    assert "| detection | test | 18 |" in card and "cite this" in card
    _, header, body = card.split(
        "---\n", 2
    )  # the header's dataset_info names the labelled validation configs' columns
    assert not [w for w in ("build_seed", str(SECRET_SEED)) if w in header]
    for path in (public / "README.md", gold / "README.md"):  # a secret seed: both cards say it is not known
        assert huggingface_hub.DatasetCard.load(path).data.to_dict()[ssd.SEED_KNOWN_KEY] is False, path
    prose = (
        body.split("## Data fields")[0] + body.split("## Data fields")[1].split("\n## ", 1)[1]
    )  # the tables name validation columns
    assert not [w for w in ("dialogue_id", "Judge each", "## Statistics", "Build: seed") if w in prose]
    infos = huggingface_hub.DatasetCard.load(public / "README.md").data.dataset_info
    assert not [
        (i["config_name"], f["name"])
        for i in infos
        if i["splits"][0]["name"] == "test"
        for f in i["features"]
        if f["name"] in ssd.BLIND_COLUMNS
    ]


def test_the_public_cards_data_fields_are_the_columns_load_dataset_reads(built):
    """The build's data-fields tables are replaced by the copy's: each config's blind test columns,
    and the labelled ``-validation`` configs' columns, as a stock ``load_dataset`` reads them."""
    _, public, _ = built
    section = (public / "README.md").read_text().split("## Data fields\n", 1)[1].split("\n## ", 1)[0]
    assert "the build's table" not in section and "Audio columns hold clips." in section
    tables = {}
    for block in section.split("\n### ")[1:]:
        heading, *lines = block.splitlines()
        columns = {m.group(1) for line in lines if (m := re.match(r"\| `([^`]+)` \|", line))}
        tables |= dict.fromkeys(re.findall(r"`([^`]+)`", heading), columns)
    configs = [entry["config_name"] for entry in huggingface_hub.DatasetCard.load(public / "README.md").data.configs]
    assert set(tables) == set(configs) and "detection-validation" in configs
    for name in configs:
        split = "validation" if name.endswith("-validation") else "test"
        assert tables[name] == set(load_dataset(str(public), name, split=split).features), name
    assert "label" in tables["detection-validation"] and "label" not in tables["detection"]


def test_the_public_cards_training_loop_runs_on_the_public_copy(built):
    """The builder's "Using the data in a training loop" section is kept in the public card, and its
    Python, pointed at the public copy, runs with a stock load_dataset over the blind test split."""
    _, public, _ = built
    assert "```python" in TRAINING_LOOP, "the builder's card template has no training-loop section with Python"
    section = (
        (public / "README.md").read_text().partition("## Using the data in a training loop\n")[2].partition("\n## ")[0]
    )
    assert section.strip() == TRAINING_LOOP.strip()
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert 'load_dataset("speakersleuth", "detection", split="test")' in code
    seen = []
    code = code.replace(
        '    ids = batch["id"]', '    ids = batch["id"]; seen.extend(ids)'
    )  # every batch, not only the last
    namespace = {"seen": seen}
    exec(code.replace('"speakersleuth"', repr(str(public))), namespace)  # noqa: S102 - the card's own example
    batch = namespace["batch"]
    assert batch["target_audio"].ndim == 3 and batch["target_audio_mask"].shape == batch["target_audio"].shape
    assert (batch["target_audio_mask"].sum(-1) == batch["target_audio_lengths"]).all()
    assert "label" not in batch and seen == [r["id"] for r in load_dataset(str(public), "detection", split="test")]


def test_the_card_paragraphs_and_sections_blind_handles_are_the_builders():
    template = card.TEMPLATE.read_text()
    assert all(f"\n\n{start}" in template for start in ssd.BUILD_CARD_TEST_PARAGRAPHS)
    assert all(f"\n## {title}\n" in template for title in ssd.BUILD_CARD_PUBLIC_SECTIONS)


def test_clip_names_carry_only_the_public_id(built):
    full, public, _ = built
    build_ids = {
        r["id"]
        for config in ("detection", "discrimination", "detection-10turn")
        for r in _test_rows(full, config, ["id"])
    }
    for config in ("detection", "discrimination", "detection-10turn"):
        spec = ssd.get_config(config)
        for row in _test_rows(public, config):
            clips = [
                c
                for column in spec.audio_columns
                for c in (row[column] if isinstance(row[column], list) else [row[column]])
            ]
            assert clips and all(c["path"].startswith(row["id"] + "-") and c["path"].endswith(".flac") for c in clips)
            text = json.dumps({k: v for k, v in row.items() if k not in spec.audio_columns}) + " ".join(
                c["path"] for c in clips
            )
            assert not [i for i in build_ids if i in text], (config, row["id"])


def test_blind_refuses_unsafe_targets(built, tmp_path, capsys):
    full, public, gold = built
    cases = [
        (["--public-out", str(public), "--gold-out", str(tmp_path / "g")], "exists and is not an empty folder"),
        (["--public-out", str(tmp_path / "p"), "--gold-out", str(tmp_path / "p" / "gold")], "none inside another"),
        (["--public-out", str(tmp_path / "p"), "--gold-out", str(tmp_path / "g")], None),
    ]
    for args, message in cases:
        assert ssd.main(["blind", "--dataset", str(full), *args]) == (2 if message else 0)
        assert (message or "note: paired copy") in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("x")
    guessable = build_synthetic_dataset(tmp_path / "guessable", dialogues=1, variants=("main",))
    inputs = [
        (public, "already a blind copy"),
        (gold, "the gold folder of a blind copy"),
        (tmp_path / "empty", "empty: no test shards"),
        (tmp_path / "a-file", "a-file: not a folder"),
        (tmp_path / "nowhere", "nowhere: no such folder"),
        (guessable, "the card does not record the build's seed"),
    ]
    for folder, message in inputs:
        assert blind_to_p2(tmp_path, folder) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert blind_to_p2(tmp_path, guessable, "--allow-known-seed") == 0  # a card without its seed: known
    for card in (tmp_path / "p2" / "README.md", tmp_path / "g2" / "README.md"):
        assert huggingface_hub.DatasetCard.load(card).data.to_dict()[ssd.SEED_KNOWN_KEY] is True, card
    shutil.rmtree(tmp_path / "p2")
    shutil.rmtree(tmp_path / "g2")
    ssd.write_card(guessable, "# x", build_seed=7)
    assert blind_to_p2(tmp_path, guessable) == 2
    assert "built with seed 7, which anyone can try" in capsys.readouterr().err
    assert not (tmp_path / "p2").exists() and not list(tmp_path.glob(".p*"))  # nothing half-written
    assert blind_to_p2(tmp_path, guessable, "--allow-known-seed") == 0
    for card in (tmp_path / "p2" / "README.md", tmp_path / "g2" / "README.md"):  # both cards say the seed is known
        assert huggingface_hub.DatasetCard.load(card).data.to_dict()[ssd.SEED_KNOWN_KEY] is True, card


def test_blind_writes_both_folders_or_neither(built, tmp_path, monkeypatch, capsys):
    """Where a folder cannot be written, or the second move fails, nothing is left: a public copy
    without its gold could never be scored (its ids' secret is gone)."""
    full, _, _ = built
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    targets = [
        (["--public-out", str(tmp_path / "p"), "--gold-out", "."], "the current folder or one above it"),
        (
            ["--public-out", str(tmp_path / "p"), "--gold-out", str(tmp_path / "a-file" / "gold")],
            "a-file/gold: cannot write a folder here",
        ),
    ]
    for args, message in targets:
        assert ssd.main(["blind", "--dataset", str(full), *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "here"] and not any(
            (tmp_path / "here").iterdir()
        )

    replace = ssd_blind.os.replace
    monkeypatch.setattr(
        ssd_blind.os, "replace", lambda src, dst: 1 / 0 if Path(dst) == tmp_path / "p" else replace(src, dst)
    )
    with pytest.raises(ZeroDivisionError):  # the public copy's move fails after the gold's
        ssd.write_blind(full, tmp_path / "p", tmp_path / "g")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "here"]
    monkeypatch.setattr(ssd_blind.os, "replace", replace)
    ssd.write_blind(full, tmp_path / "p", tmp_path / "g")
    mask = ssd._umask()
    assert (tmp_path / "p").stat().st_mode & 0o777 == 0o777 & ~mask and (
        tmp_path / "g"
    ).stat().st_mode & 0o777 == 0o700


def test_every_unpaired_copy_of_a_build_keeps_the_same_instances(built, tmp_path):
    """Copies that kept different instances could be pooled to pair a dialogue's rows up again."""
    full, _, _ = built
    kept = []
    for copy in ("one", "two"):
        ssd.write_blind(full, tmp_path / copy / "public", tmp_path / copy / "gold", unpaired=True)
        configs = [
            c
            for c in ("detection", "discrimination", "detection-10turn", "discrimination-10turn")
            if ssd.shard_paths(tmp_path / copy / "gold", c)
        ]
        kept.append([r for c in configs for r in _test_rows(tmp_path / copy / "gold", c, ["id", "source_id"])])
    assert {r["source_id"] for r in kept[0]} == {r["source_id"] for r in kept[1]}
    assert not {r["id"] for r in kept[0]} & {r["id"] for r in kept[1]}  # under new ids


def test_space_scores_from_the_private_gold_and_the_viewer_shows_no_test_gold(built, tmp_path):
    full, public, gold = built
    config = SpaceConfig.from_env({}, dataset=str(public), data_dir=tmp_path)
    with pytest.raises(ValueError, match="blind copy without test gold"):
        gold_folder(config, public)
    config = SpaceConfig.from_env({"SPEAKERSLEUTH_GOLD": str(gold)}, dataset=str(public), data_dir=tmp_path)
    submitter = Submitter(config, SqliteStore(tmp_path), public, variants=["main"], gold=gold_folder(config, public))
    lines = [
        {"task": "detection", "id": r["id"], "prediction": r["label"]}
        for r in _test_rows(gold, "detection", ["id", "label"])
    ]
    lines += [
        {"task": "localization", "id": r["id"], "prediction": r["inconsistent_turns"]}
        for r in _test_rows(gold, "localization", ["id", "inconsistent_turns"])
    ]
    lines += [
        {"task": "discrimination", "id": r["id"], "prediction": r["answer"], "ranking": r["gold_ranking"]}
        for r in _test_rows(gold, "discrimination", ["id", "answer", "gold_ranking"])
    ]
    data = "".join(json.dumps(line) + "\n" for line in lines)  # a blind round scores whole files
    result = submitter.submit(
        data.encode(),
        "main",
        {
            "model_name": "oracle",
            "organisation": "lab",
            "model_type": "other",
            "access": "open",
            "link": "",
            "model_date": "",
        },
    )
    scores = result.record.scores  # a blind round (space.disclosure): both parts scored, the public one released
    assert result.status == "accepted" and scores["policy"] == "blind-round"
    assert (
        scores["private"]["detection"]["balanced_accuracy"]
        == scores["public"]["detection"]["balanced_accuracy"]
        == 100.0
    )
    assert (
        100.0 - scores["step"]["det_bal_acc"] < scores["released"]["det_bal_acc"] <= 100.0
    )  # the line of its Ladder grid at or below 100
    index = viewer.InstanceIndex(public)
    assert index.configs() == [c for c in ssd.CONFIGS if ssd.shard_paths(full, c)]
    for config_name in index.configs():
        private = {r["id"]: r for r in _test_rows(gold, config_name, ["id", "source_id", "dialogue_id"])}
        for instance_id in index.ids(config_name):
            dialogue, facts, turns, candidates, _ = viewer.instance_view(
                index.load(config_name, instance_id), config_name
            )
            shown = dialogue + facts + " ".join(label for label, _ in turns + candidates)
            words = (
                "S1",
                "S2",
                "S3",
                "consistent",
                "converted",
                "gold",
                private[instance_id]["source_id"],
                private[instance_id]["dialogue_id"],
            )
            assert not [w for w in words if w in shown], (config_name, instance_id, shown)


def test_the_viewer_offers_no_scenario_filter_on_a_blind_copy(built):
    full, public, _ = built
    for folder, shown in ((full, True), (public, False)):
        with gr.Blocks() as demo:
            viewer.build_viewer_tab(viewer.InstanceIndex(folder))
        scenario = [
            b for b in demo.blocks.values() if getattr(b, "label", None) == "Scenario (detection/localization)"
        ]
        assert len(scenario) == 1 and scenario[0].visible is shown


def test_app_and_seed_take_the_gold_from_a_private_folder(built, tmp_path, capsys):
    from speakersleuth.space import seed
    from speakersleuth.space.app import build_app

    full, public, gold = built
    with pytest.raises(ValueError, match="blind copy without test gold"):
        build_app(SpaceConfig.from_env({}, dataset=str(public), data_dir=tmp_path / "a"))
    with pytest.raises(
        ValueError, match=r"a paired blind copy: \d+ test instances share a dialogue or a clip.*--allow-paired"
    ):
        build_app(
            SpaceConfig.from_env({}, dataset=str(public), gold=str(gold), data_dir=tmp_path / "p"), n_bootstrap=0
        )
    paired = {"SPEAKERSLEUTH_ALLOW_PAIRED": "1"}  # this copy is paired: served only when told so, with a banner
    app = build_app(
        SpaceConfig.from_env(paired, dataset=str(public), gold=str(gold), data_dir=tmp_path / "b"), n_bootstrap=0
    )
    assert (
        app.submitter.gold_root == gold.resolve() and app.dataset == public.resolve() and app.submitter.policy.paired
    )
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "example.jsonl").write_bytes(
        Path(app.public_dir / "examples" / "example-predictions-main.jsonl").read_bytes()
    )
    args = ["--predictions", str(tmp_path / "results"), "--dataset", str(public), "--data-dir", str(tmp_path / "c")]
    assert seed.main(args) == 2 and "blind copy without test gold" in capsys.readouterr().err
    assert seed.main([*args, "--gold", str(gold)]) == 0 and "1 accepted" in capsys.readouterr().out


def _restricted(full: Path, ids: set[str], out: Path) -> Path:
    """The full build with only the test instances ``ids`` (what an unpaired copy's gold covers)."""
    for path in full.rglob("*.parquet"):
        table = pq.read_table(path)
        if path.name.startswith("test-"):
            table = table.filter(pc.is_in(table.column("id"), pa.array(sorted(ids))))
        (out / path.relative_to(full)).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, out / path.relative_to(full))
    (out / "README.md").write_bytes((full / "README.md").read_bytes())
    return out


def test_rows_of_a_dialogue_share_clips_and_the_unpaired_copy_keeps_one_per_group(built, tmp_path, capsys):
    full, public, _ = built
    paired_groups = Counter(ssd.instance_groups(public).values())
    assert max(paired_groups.values()) >= 4  # S1, S2, S3 and the discrimination row of a dialogue
    assert "rows can be regrouped by their audio" in (public / "README.md").read_text()

    unpaired, gold = tmp_path / "public", tmp_path / "gold"
    assert (
        ssd.main(
            ["blind", "--dataset", str(full), "--public-out", str(unpaired), "--gold-out", str(gold), "--unpaired"]
        )
        == 0
    )
    capsys.readouterr()
    assert set(Counter(ssd.instance_groups(unpaired).values()).values()) == {1}  # no two test instances share a clip
    kept_rows = [
        r
        for config in ("detection", "discrimination", "detection-10turn", "discrimination-10turn")
        for r in _test_rows(gold, config, ["source_id", "dialogue_id"])
    ]
    kept = {r["source_id"] for r in kept_rows}
    assert len({r["dialogue_id"] for r in kept_rows}) == len(kept) == DIALOGUES  # main and 10turn share the dialogues
    assert "This copy is unpaired" in (unpaired / "README.md").read_text()
    assert ssd.validate_folder(unpaired)["detection/test"] == len(_test_rows(gold, "detection", ["id"]))


def test_an_unpaired_copy_writes_no_empty_test_split_so_the_stock_library_loads_every_config(tmp_path, capsys):
    """Two dialogues built in main and 10turn give two test instances for six configs: the configs
    that keep none get no test split (``load_dataset`` cannot read an empty shard)."""
    full = build_synthetic_dataset(tmp_path / "full", dialogues=2, variants=("main", "10turn"))
    ssd.write_card(full, CARD_BODY, build_seed=SECRET_SEED)
    public, gold = tmp_path / "public", tmp_path / "gold"
    assert (
        ssd.main(["blind", "--dataset", str(full), "--public-out", str(public), "--gold-out", str(gold), "--unpaired"])
        == 0
    )
    out = capsys.readouterr().out
    empty = [
        spec.name
        for spec in ssd.CONFIGS.values()
        if ssd.shard_paths(full, spec.name) and not ssd.shard_paths(public, spec.name)
    ]
    assert (
        len(empty) >= 2 and all(f"{name}/test" in out for name in empty) and out.count("no test split") == len(empty)
    )
    names = [entry["config_name"] for entry in ssd.card_yaml(public)["configs"]]
    assert not set(empty) & set(names) and len(names) == 6 - len(empty)
    for name in names:
        audio = ssd.get_config(name).audio_columns
        for row in load_dataset(str(public), name, split="test"):  # decodes every clip (torchcodec)
            clips = [
                clip for column in audio for clip in (row[column] if isinstance(row[column], list) else [row[column]])
            ]
            assert clips and all(clip["array"].size for clip in clips)
    assert sum(ssd.validate_folder(public).values()) == sum(len(_test_rows(gold, name, ["id"])) for name in names)


def test_the_space_reads_private_gold_from_a_hub_dataset_with_the_token(built, tmp_path, monkeypatch):
    """On Spaces the gold is a private Hub dataset: downloaded with ``HF_TOKEN`` into the data dir."""
    full, public, gold = built
    calls = []

    def download(repo_id, *, repo_type, token, local_dir):
        calls.append((repo_id, repo_type, token))
        shutil.copytree(gold, local_dir, dirs_exist_ok=True)
        return str(local_dir)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", download)
    config = SpaceConfig.from_env(
        {"SPEAKERSLEUTH_GOLD": "lab/speakersleuth-gold", "HF_TOKEN": "hf_x"}, dataset=str(public), data_dir=tmp_path
    )
    local = gold_folder(config, public)
    assert calls == [("lab/speakersleuth-gold", "dataset", "hf_x")] and local.is_relative_to(tmp_path)
    assert ssd.read_gold(local)["detection"] == ssd.read_gold(gold)["detection"]


def test_the_unpaired_copy_keeps_the_scenarios_balanced_and_scores_exactly(tmp_path, capsys):
    full = build_synthetic_dataset(tmp_path / "full", dialogues=12, variants=("main",))
    ssd.write_card(full, CARD_BODY, build_seed=SECRET_SEED)
    gold = tmp_path / "gold"
    assert (
        ssd.main(
            [
                "blind",
                "--dataset",
                str(full),
                "--public-out",
                str(tmp_path / "public"),
                "--gold-out",
                str(gold),
                "--unpaired",
            ]
        )
        == 0
    )
    capsys.readouterr()
    slots = [r["scenario"] for r in _test_rows(gold, "detection", ["scenario"])] + ["disc"] * len(
        _test_rows(gold, "discrimination", ["id"])
    )
    assert Counter(slots) == {"S1": 3, "S2": 3, "S3": 3, "disc": 3}
    kept = {
        r["source_id"] for config in ("detection", "discrimination") for r in _test_rows(gold, config, ["source_id"])
    }
    rows = dict(load_gold(full).tasks.items())
    source_of = {
        r["id"]: r["source_id"]
        for config in ("detection", "discrimination")
        for r in _test_rows(gold, config, ["id", "source_id"])
    }
    lines = [
        {
            "task": "detection",
            "id": pid,
            "prediction": rows["detection"][sid]["label"] if i % 3 else "consistent",
            "score": i % 5 / 5,
        }
        for i, (pid, sid) in enumerate(source_of.items())
        if sid in rows["detection"]
    ]
    lines += [
        {"task": "discrimination", "id": pid, "prediction": "A", "ranking": ["A", "B", "C"]}
        for pid, sid in source_of.items()
        if sid in rows["discrimination"]
    ]
    (tmp_path / "blind.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "full.jsonl").write_text(
        "".join(json.dumps({**line, "id": source_of[line["id"]]}) + "\n" for line in lines)
    )
    scores = []
    for file, where in (
        ("full.jsonl", ["--dataset", str(_restricted(full, kept, tmp_path / "restricted"))]),
        ("blind.jsonl", ["--gold", str(gold)]),
    ):
        assert score_main(["--predictions", str(tmp_path / file), *where, "--json", "--bootstrap", "100"]) == 0
        scores.append(json.loads(capsys.readouterr().out))
        scores[-1].pop("sha256")
    assert scores[0] == scores[1] and scores[0]["detection"]["paired_accuracy"] is None
