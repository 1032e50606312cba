"""``metrics.score.score_predictions``: predictions held in memory (a list of dicts, a pandas
DataFrame) scored to the very dict the command line prints for the same predictions as a file,
bad rows refused with the file's messages."""

from __future__ import annotations

import json
import random

import pandas as pd
import pytest

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.metrics.report import main
from speakersleuth.metrics.score import leaderboard_row, score_predictions
from speakersleuth.metrics.submission import SubmissionError, load_gold
from tests.support.synthetic import build_synthetic_dataset, dialogue_records


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return build_synthetic_dataset(tmp_path_factory.mktemp("in_memory") / "ds", dialogues=4, variants=("main", "4vc"))


def judged(gold, seed: int = 0) -> list[dict]:
    """A judge's lines for every instance of ``gold``: labels, scores, turn sets and rankings drawn at random."""
    rng, lines = random.Random(seed), []
    for rid in gold.tasks["detection"]:
        lines.append(
            {
                "task": "detection",
                "id": rid,
                "prediction": rng.choice(["consistent", "inconsistent"]),
                "score": rng.random(),
            }
        )
    for rid, row in gold.tasks["localization"].items():
        lines.append(
            {"task": "localization", "id": rid, "prediction": rng.choice([[], [1], list(row["inconsistent_turns"])])}
        )
    for rid, row in gold.tasks["discrimination"].items():
        ranking = rng.sample(list(row["candidate_labels"]), 3)
        lines.append({"task": "discrimination", "id": rid, "prediction": ranking[0], "ranking": ranking})
    return lines


def cli(capsys, path, folder, *args) -> tuple[int, str, str]:
    code = main(["--predictions", str(path), "--dataset", str(folder), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("variant", ["main", "4vc"])
def test_a_list_of_dicts_scores_to_what_the_cli_prints_for_the_file(folder, tmp_path, capsys, variant):
    lines = judged(load_gold(folder, variant))
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, _ = cli(capsys, path, folder, "--json", "--bootstrap", "200")
    printed = json.loads(out)
    assert (
        code == 0
        and printed["variant"] == variant
        and printed["tasks"] == ["detection", "localization", "discrimination"]
    )
    assert (
        score_predictions(lines, folder, n_bootstrap=200) == printed
    )  # the variant taken from the ids, as the CLI does
    assert score_predictions(lines, load_gold(folder, variant), n_bootstrap=200) == printed
    assert leaderboard_row(score_predictions(lines, str(folder), variant=variant, n_bootstrap=200)) == leaderboard_row(
        printed
    )


def test_a_dataframe_scores_as_its_rows_do_and_missing_cells_are_left_out(folder, capsys, tmp_path):
    lines = judged(load_gold(folder, "main"), seed=1)
    frame = pd.DataFrame(lines)  # score NaN on localization/discrimination rows, ranking NaN on the turn tasks
    assert frame["score"].isna().sum() and frame["ranking"].isna().sum()
    expected = score_predictions(lines, folder, n_bootstrap=100)
    scored = score_predictions(frame, folder, n_bootstrap=100)
    assert scored == expected  # missing cells left out: the very rows, so the same hash too
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    read = pd.read_json(path, lines=True)
    assert score_predictions(read, folder, n_bootstrap=100) | {"sha256": None} == expected | {"sha256": None}
    unanswered = frame.copy()
    unanswered.loc[0, "prediction"] = None  # no answer: scored as the file's null
    assert (
        score_predictions(unanswered, folder, n_bootstrap=0)["detection"]["answered"]
        == len(load_gold(folder).tasks["detection"]) - 1
    )


def test_bad_rows_give_the_files_errors(folder, tmp_path, capsys):
    lines = judged(load_gold(folder, "main"), seed=2)
    lines[2] = {**lines[2], "prediction": "yes"}
    lines[4] = {**lines[4], "confidence": 0.3}
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, _, err = cli(capsys, path, folder)
    with pytest.raises(SubmissionError) as refused:
        score_predictions(lines, folder)
    assert code == 1 and err == f"{path}: {refused.value}\n"
    assert [e.split(":")[0] for e in refused.value.errors] == [
        "line 3",
        "line 5",
    ] and "confidence" in refused.value.errors[1]
    with pytest.raises(SubmissionError) as framed:
        score_predictions(pd.DataFrame(lines), folder)
    assert [e.split(":")[0] for e in framed.value.errors] == ["line 3", "line 5"]
    with pytest.raises(TypeError, match="a list of dicts, a pandas DataFrame or a datasets.Dataset, got str"):
        score_predictions(str(path), folder)
    with pytest.raises(ValueError, match="the gold is of variant main, not 4vc"):
        score_predictions(lines, load_gold(folder, "main"), variant="4vc")


def test_a_datasets_dataset_and_torch_scores_score_as_the_list_does(folder):
    """Scores given as torch scalars, and a ``datasets.Dataset`` of the lines (a null cell where a
    line has no such key), give what the plain list gives (the table's rows hash differently: their
    keys come in the table's column order)."""
    import datasets
    import torch

    lines = [line for line in judged(load_gold(folder, "main"), seed=3) if line["task"] != "localization"]
    expected = score_predictions(lines, folder, n_bootstrap=0)
    as_tensors = [
        dict(line, score=torch.tensor(line["score"], dtype=torch.float64)) if "score" in line else line
        for line in lines
    ]
    assert score_predictions(as_tensors, folder, n_bootstrap=0) == expected
    table = datasets.Dataset.from_list([{"ranking": None, "score": None, **line} for line in lines])
    assert table.column_names == ["ranking", "score", "task", "id", "prediction"]
    scored = score_predictions(table, folder, n_bootstrap=0)
    assert {k: v for k, v in scored.items() if k != "sha256"} == {k: v for k, v in expected.items() if k != "sha256"}


def test_validation_ids_scored_as_test_point_to_the_validation_split(tmp_path):
    """Ids of the validation split, scored as the default test split, are refused with the split to use."""
    folder = build_synthetic_dataset(tmp_path / "ds", dialogues=2, variants=("main",))
    with ssd.DatasetWriter(folder, "detection", "validation") as writer:
        writer.write_all(dialogue_records("main", 99, random.Random(1))[0])
    ssd.write_card(folder, "# SpeakerSleuth (synthetic)\n\nFor tests only.")
    ids = load_gold(folder, "main", "validation").tasks["detection"]
    lines = [{"task": "detection", "id": rid, "prediction": "consistent"} for rid in ids]
    with pytest.raises(ValueError, match=r'are in the validation split of .*split="validation"'):
        score_predictions(lines, folder)
    assert score_predictions(lines, folder, split="validation", n_bootstrap=0)["split"] == "validation"
