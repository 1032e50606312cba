"""The build pipeline end to end on a tiny speech-like corpus, with the offline WORLD/Praat backends:
what it publishes, its card, its resumption and review (``test_build_shards.py``: builds in shard
processes). The default build is made once per session for both (``shared_speechlike_build``)."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from datasets import Audio, List, load_dataset
from huggingface_hub import DatasetCard
from torch.utils.data import DataLoader

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.builder_scripts import card
from speakersleuth.builder_scripts.sources.ami import AMI
from speakersleuth.builder_scripts.sources.bazinga import Bazinga
from speakersleuth.builder_scripts.sources.dailytalk import DailyTalk
from speakersleuth.builder_scripts.verification import GENDER_F0_BOUNDARY, median_f0, read_review_decisions
from speakersleuth.speech.encoders import encoder_label, offline_encoders
from tests.support.pipeline_fixtures import SPEAKERS, SpeechLikeCorpus
from tests.support.small_builds import (
    build_options,
    build_speechlike,
    fingerprint,
    record_speechlike,
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.filterwarnings("ignore")


def test_build_passes_validator_and_loads_everywhere(built):
    tmp, report = built
    root = tmp / "speakersleuth"
    counts = ssd.validate_folder(root)  # with every clip decoded
    assert counts["detection/test"] == 6 and counts["discrimination/test"] == 2
    assert counts["detection-10turn/test"] == 3
    assert report["dialogues"] == {"main": 2, "4vc": 2, "10turn": 1}
    for name in ssd.CONFIGS:
        ds = load_dataset(str(root), name, split="test", cache_dir=str(tmp / "hf_cache"))
        assert len(ds) == counts[f"{name}/test"]
    card = (root / "README.md").read_text()
    assert "| main | test | speechlike | 2 | 6 | 2 |" in card and "| validation |" not in card
    assert (root / "duration_histogram.png").stat().st_size > 1000
    assert "spectral_flatness" in card and "world" in card
    assert "| 2 of 2 |" in card  # S3 > S2 in every dialogue


def test_the_card_measures_s2_and_s3_under_every_wheel_encoder(built):
    tmp, _ = built
    root = tmp / "speakersleuth"
    table = {
        tuple(cells[:3]): cells[3:]
        for line in (root / "README.md").read_text().splitlines()
        if len(cells := [c.strip() for c in line.strip("|").split("|")]) == 9
    }
    assert {label for label, variant, scenario in table if variant == "main"} == {
        encoder_label(e) for e in offline_encoders()
    }
    rows = ssd.read_rows(root, ssd.config_name("detection", "main")).to_pylist()
    for scenario in ("S2", "S3"):  # the build's own encoder (CAM++ by default) agrees with substitute_similarity
        chosen = np.mean([r["substitute_similarity"] for r in rows if r["scenario"] == scenario])
        assert table[("CAM++", "main", scenario)][:2] == ["2", f"{chosen:.3f}"]


def test_the_card_measures_how_distinct_the_pool_speakers_are(built):
    """One row per wheel encoder: the pool's size by gender, the EER of telling its speakers apart
    and the closest pair, as the bank's own statistics give them."""
    tmp, _ = built
    card = (tmp / "speakersleuth" / "README.md").read_text()
    rows = {
        cells[0]: cells[1:]
        for line in card.splitlines()
        if len(cells := [c.strip() for c in line.strip("|").split("|")]) == 7 and "pairs)" in line
    }
    assert set(rows) == {encoder_label(e) for e in offline_encoders()}
    genders = [gender for gender, _ in SPEAKERS.values()]  # every speaker of the corpus is in the pool
    for label, (total, female, male, eer, nearest, closest) in rows.items():
        assert (int(total), int(female), int(male)) == (len(genders), genders.count("female"), genders.count("male"))
        rate, same, different = re.fullmatch(
            r"([\d.]+) % \((\d+) same-, (\d+) different-speaker pairs\)", eer
        ).groups()
        # better than chance (the README's <= 3 % is the embedded corpus' voice bank, measured by
        # benchmarks/bench_voice_bank.py; this tiny speech-like corpus' speakers are closer)
        assert 0.0 <= float(rate) < 50.0, (label, eer)
        clips = 3 * len(genders)  # the pool takes 3 clips a speaker: every pair of clips is one trial
        assert (int(same), int(different)) == (3 * len(genders), clips * (clips - 1) // 2 - 3 * len(genders)), (
            label,
            eer,
        )
        low, median, high = (float(v) for v in nearest.split(" / "))
        assert -1.0 <= low <= median <= high < 1.0  # no two speakers of the pool share one voice
        pair, cosine = re.fullmatch(r"(\S+ ~ \S+) \((-?[\d.]+)\)", closest).groups()
        assert float(cosine) == high and pair.split(" ~ ")[0] != pair.split(" ~ ")[1]  # the closest pair is the max


def test_s2_and_s3_hold_on_every_instance(built):
    tmp, _ = built
    for variant in ssd.VARIANTS:
        rows = ssd.read_rows(tmp / "speakersleuth", ssd.config_name("detection", variant)).to_pylist()
        by_dialogue = {}
        for row in rows:
            by_dialogue.setdefault(row["dialogue_id"], {})[row["scenario"]] = row
        for dialogue, scen in by_dialogue.items():
            assert set(scen) == {"S1", "S2", "S3"}, dialogue
            s2, s3 = scen["S2"], scen["S3"]
            assert s2["converted_turn"] == s3["converted_turn"]
            assert s2["substitute_gender"] != s2["target_gender"]
            assert "/" not in s2["substitute_speaker"] + s3["substitute_speaker"], (
                "a substitute of the row's own source goes by its plain id"
            )
            assert s3["substitute_similarity"] > s2["substitute_similarity"]
            k = s2["converted_turn"] - 1
            f0 = median_f0(ssd.load_waveform(s2["target_audio"][k]["bytes"]))
            assert (f0 > GENDER_F0_BOUNDARY) == (s2["substitute_gender"] == "female")
            for i in range(len(s2["target_audio"])):
                same = s2["target_audio"][i]["bytes"] == scen["S1"]["target_audio"][i]["bytes"]
                assert same == (i != k), "only turn k differs from S1"


def test_main_segments_nest_in_the_10turn_ones(built):
    """Dialogues with a 10-turn segment come first for main, its window inside that one: the two
    variants share the 10turn dialogues and their voiced turns."""
    from speakersleuth.builder_scripts.scenarios import Unit

    tmp, _ = built
    units = {
        v: {
            p.stem: Unit.load(p).segment for p in (tmp / "cache" / "units").glob(f"pool-*/code-*/{v}/speechlike/*.npz")
        }
        for v in ("main", "10turn")
    }
    shared = set(units["main"]) & set(units["10turn"])
    assert units["10turn"] and shared == set(units["10turn"])
    for name in shared:
        short, long = units["main"][name], units["10turn"][name]
        assert set(short.target_turns) < set(long.target_turns) and short.reference_turns == long.reference_turns


def test_validation_split_is_disjoint_and_leaves_the_test_split_unchanged(built, tmp_path):
    tmp, _ = built
    corpus = record_speechlike(tmp_path / "corpus")
    report = build_speechlike(build_options(tmp_path, validation_dialogues=1), corpus)
    root = tmp_path / "speakersleuth"
    assert report["dialogues"] == {"main": 2, "4vc": 2, "10turn": 1}
    assert report["validation_dialogues"] == {"main": 1, "4vc": 1, "10turn": 1}
    counts = ssd.validate_folder(root, check_audio=False)
    assert counts["detection/validation"] == 3 and counts["discrimination-10turn/validation"] == 1
    assert fingerprint(root) == fingerprint(tmp / "speakersleuth")  # test rows, labels and audio
    for variant in ssd.VARIANTS:
        name = ssd.config_name("detection", variant)
        dialogues = {
            split: {r["dialogue_id"] for r in ssd.read_rows(root, name, split, columns=["dialogue_id"]).to_pylist()}
            for split in ssd.SPLITS
        }
        assert dialogues["validation"] and not dialogues["test"] & dialogues["validation"]
    assert len(load_dataset(str(root), "localization-4vc", split="validation", cache_dir=str(tmp_path / "hf"))) == 3
    assert "| main | validation | speechlike | 1 | 3 | 1 |" in (root / "README.md").read_text()
    build_speechlike(build_options(tmp_path), corpus)  # without the split: its old shards go
    assert not any(ssd.shard_paths(root, name, "validation") for name in ssd.CONFIGS)
    assert "validation" not in (root / "README.md").read_text().split("---")[1]


def test_the_plan_names_replacements_and_publish_never_converts(built, tmp_path, corpus):
    """A dropped unit's replacement is the plan's decision (``missing_units``), made before
    publishing; publishing a selection with a unit not made is refused before anything is written."""
    from speakersleuth.builder_scripts.plan import make_plan
    from speakersleuth.builder_scripts.publish import publish
    from speakersleuth.builder_scripts.units import UnitStore, generation_key
    from speakersleuth.builder_scripts.verification import get_text_filter

    tmp, _ = built
    opts = build_options(tmp, out=tmp_path / "out")
    plan = make_plan(opts, {"speechlike": SpeechLikeCorpus(corpus, dialogues=6)}, get_text_filter("heuristic"))
    (pool,) = (tmp / "cache" / "units").glob("pool-*")
    store = UnitStore(opts.cache, pool.name.removeprefix("pool-"), methods=generation_key(opts))
    assert plan.missing_units(store.verdict) == []  # the built cache holds every selected unit
    kept = plan.select(("main", "test"), store.verdict).kept
    rejected = kept[0][0]
    store.review = {("main", f"speechlike/{rejected.dialogue_id}"): "review: garbled"}
    (job,) = plan.missing_units(store.verdict)
    later = [segment.dialogue_id for segment, _ in plan.candidates[("main", "test")]]
    assert job.variants == ("main", "4vc") and later.index(job.segment.dialogue_id) > later.index(
        kept[-1][0].dialogue_id
    )
    with pytest.raises(RuntimeError, match=f"not made .first: main test speechlike/{job.segment.dialogue_id}"):
        publish(opts, plan, store, {}, {})
    assert not (tmp_path / "out").exists()


def test_rebuild_without_changes_skips_the_work(built, corpus):
    tmp, first = built
    again = build_speechlike(build_options(tmp), corpus)
    assert again["seconds"].get("vc", 0) == 0
    assert again["seconds"]["wall"] < first["seconds"]["wall"]


def test_review_round_trip_drops_rejected_dialogues(built, tmp_path, corpus):
    tmp, _ = built
    from speakersleuth.builder_scripts.verification import export_review

    sheet = export_review(tmp / "speakersleuth", tmp_path / "review")
    rows = list(csv.DictReader(open(sheet)))
    assert len(rows) == 5 and all((tmp_path / "review" / f).is_file() for f in rows[0]["audio_files"].split(";"))
    rows[0]["decision"], rows[0]["reason"] = "reject", "converted turn garbled"
    with open(sheet, "w", newline="") as f:
        writer = csv.DictWriter(f, rows[0].keys())
        writer.writeheader()
        writer.writerows(rows)
    rejected = read_review_decisions(sheet)
    assert rejected == {(rows[0]["variant"], rows[0]["dialogue_id"]): "review: converted turn garbled"}
    out = tmp_path / "reviewed"
    report = build_speechlike(build_options(tmp, out=out, review_decisions=sheet), corpus)
    ids = {r["dialogue_id"] for r in ssd.read_rows(out, ssd.config_name("detection", rows[0]["variant"])).to_pylist()}
    assert rows[0]["dialogue_id"] not in ids
    assert report["verification"]["after conversion"]["review: converted turn garbled"] == 1


def test_review_sheet_with_a_typo_is_refused(tmp_path):
    sheet = tmp_path / "r.csv"
    sheet.write_text("dialogue_id,variant,decision,reason\nspeechlike/1,main,rejekt,x\n")
    with pytest.raises(ValueError, match=r"r.csv:2: decision must be accept or reject, got 'rejekt'"):
        read_review_decisions(sheet)


@pytest.mark.parametrize("damage", ["missing", "corrupt"])
def test_bad_source_file_is_named(tmp_path, damage):
    corpus = record_speechlike(tmp_path / "corpus")
    victims = sorted(corpus.rglob("*.wav"))
    for victim in victims:
        if damage == "missing":
            victim.unlink()
        else:
            victim.write_bytes(b"RIFF0000WAVEjunk")
    with pytest.raises((FileNotFoundError, ValueError, RuntimeError)) as info:
        build_speechlike(build_options(tmp_path), corpus)
    assert ".wav" in str(info.value) and str(corpus) in str(info.value)


# --- the card as a user meets it: metadata, data fields, a training loop -----------------------


def _card_section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_the_card_tells_the_truth_about_the_build(built):
    """Size category, license and dataset_info from what was built (rows counted by stock
    ``load_dataset``), and the one citation."""
    root = built[0] / "speakersleuth"
    header = DatasetCard.load(root / "README.md").data.to_dict()
    rows = {name: load_dataset(str(root), name, split="test").num_rows for name in ssd.CONFIGS}
    assert sum(rows.values()) < 1000 and header["size_categories"] == ["n<1K"]
    assert header["license"] == SpeechLikeCorpus.hub_license == "cc0-1.0"  # the build's one source
    assert {i["config_name"]: i["splits"][0]["num_examples"] for i in header["dataset_info"]} == rows
    text = (root / "README.md").read_text()
    assert _card_section(text, "Citation").split("```bibtex\n", 1)[1].split("```", 1)[0] == ssd.CITATION
    assert (
        "- **speechlike** (tests/support/pipeline_fixtures.py): `cc0-1.0`; CC0-1.0 (generated test signals)." in text
    )


def test_the_card_license_of_several_sources_lists_each_and_bazinga_is_not_cc_by_sa():
    assert card.licenses({"bazinga": Bazinga})[0] == "unknown"
    ids, text = card.licenses({"dailytalk": DailyTalk, "ami": AMI, "bazinga": Bazinga})
    assert ids == ["cc-by-4.0", "cc-by-sa-4.0", "unknown"]
    assert "`cc-by-sa-4.0`; CC-BY-SA-4.0" in text.split("**dailytalk**")[1].split("\n")[0]
    assert "`unknown`; unknown: gated" in text.split("**bazinga**")[1].split("\n")[0]


def test_the_cards_data_fields_name_every_column_of_every_config(built):
    """Every column of every config's features (as stock ``load_dataset`` reads them) is in the
    table whose heading names the config, a list of clips typed as one."""
    root = built[0] / "speakersleuth"
    tables = {}
    for block in _card_section((root / "README.md").read_text(), "Data fields").split("\n### ")[1:]:
        heading, *lines = block.splitlines()
        columns = dict(m.groups() for line in lines if (m := re.match(r"\| `([^`]+)` \| ([^|]+) \|", line)))
        tables |= dict.fromkeys(re.findall(r"`([^`]+)`", heading), columns)
    assert set(tables) == set(ssd.CONFIGS)
    for name in ssd.CONFIGS:
        features = load_dataset(str(root), name, split="test").features
        assert set(tables[name]) == set(features), name
        for column, feature in features.items():
            clips = isinstance(feature, List) and isinstance(feature.feature, Audio)
            assert tables[name][column].strip().startswith("list of audio clips") == clips, (name, column)


def test_a_torch_dataloader_over_every_config_with_the_documented_collate(built):
    """``DataLoader(ds, batch_size=2, collate_fn=ssd.collate)`` over each config: every clip is
    the stored FLAC as soundfile decodes it, zero-padded, with its length and mask; the other
    columns are the row's values as pyarrow reads them."""
    root = built[0] / "speakersleuth"
    for name, spec in ssd.CONFIGS.items():
        stored = {row["id"]: row for row in ssd.read_rows(root, name).to_pylist()}
        seen = 0
        for batch in DataLoader(load_dataset(str(root), name, split="test"), batch_size=2, collate_fn=ssd.collate):
            for i, rid in enumerate(batch["id"]):
                row, seen = stored[rid], seen + 1
                for column in spec.audio_columns:
                    clips = row[column] if isinstance(row[column], list) else [row[column]]
                    audio, lengths, mask = (batch[f"{column}{part}"][i] for part in ("", "_lengths", "_mask"))
                    if not isinstance(row[column], list):
                        audio, lengths, mask = audio[None], lengths[None], mask[None]
                    assert audio.shape[0] == len(clips) and batch[f"{column}_sampling_rate"] == ssd.SAMPLING_RATE
                    for j, clip in enumerate(clips):
                        samples = torch.from_numpy(sf.read(io.BytesIO(clip["bytes"]), dtype="float32")[0])
                        n = samples.numel()
                        assert lengths[j] == n and torch.equal(audio[j, :n], samples), (name, rid, column, j)
                        assert not audio[j, n:].any() and mask[j, :n].all() and not mask[j, n:].any()
                assert {c: batch[c][i] for c in row if c not in spec.audio_columns} == {
                    c: v for c, v in row.items() if c not in spec.audio_columns
                }
        assert seen == len(stored) > 0, name


def test_the_cards_casting_recipe_and_torch_format(built):
    """What the card says: ``List(Audio(sampling_rate=8000))`` casts a list of clips and
    ``Audio(...)`` alone cannot; ``with_format("torch")`` still yields decoders, which the default
    collate refuses and ``ssd.collate`` batches as it does the plain dataset."""
    ds = load_dataset(str(built[0] / "speakersleuth"), "discrimination-4vc", split="test")
    with pytest.raises(TypeError, match="Couldn't cast array of type list"):
        ds.cast_column("candidates", Audio(sampling_rate=8000))
    full, half = (
        next(iter(DataLoader(d, batch_size=2, collate_fn=ssd.collate)))
        for d in (ds, ds.cast_column("candidates", List(Audio(sampling_rate=8000))))
    )
    assert half["candidates_sampling_rate"] == 8000 and full["candidates_sampling_rate"] == ssd.SAMPLING_RATE
    assert (half["candidates_lengths"] - full["candidates_lengths"] / 2).abs().max() <= 1
    assert torch.equal(half["context_audio"], full["context_audio"])  # the other columns keep their rate
    torch_format = ds.with_format("torch")
    with pytest.raises(TypeError, match="AudioDecoder"):
        next(iter(DataLoader(torch_format, batch_size=2)))
    batch = next(iter(DataLoader(torch_format, batch_size=2, collate_fn=ssd.collate)))
    assert torch.equal(batch["candidates"], full["candidates"]) and torch.equal(
        batch["candidates_mask"], full["candidates_mask"]
    )
