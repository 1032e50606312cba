"""The dataset card of a build: every number in it is computed from the written shards.

``dataset_card.md`` at the top of the project (installed as ``speakersleuth/dataset_card.md``) is the template (``str.format`` fields); this module
fills it with a Table-1-style statistics table per variant and source, a clip-duration histogram
(``duration_histogram.png`` beside the card), the voice-conversion mix, the speaker pool (how
distinct its speakers are under every encoder), the substitutes' similarity to the target, the
verification counts, the shortcut audit, and the sources' licenses and citations.
"""

from __future__ import annotations

import io
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd

from . import artifacts
from .card_audit import BuildAudit, feature_lists
from .speaker_bank import pool_name, row_pool_name
from .vc.respeak import voice_engine

TEMPLATE = Path(__file__).resolve().parent.parent / "dataset_card.md"
#: What the card of a round's build (``--round``) adds to the paragraph on judging each instance on its own.
ROUND_NOTE = (
    "\n\nThis is a leaderboard round's build: each test dialogue gives one instance (S1, S2, S3 or "
    "discrimination, a quarter each), so no two test rows share a dialogue or a clip; the validation "
    "split keeps every scenario of its dialogues."
)
HISTOGRAM = "duration_histogram.png"
#: what the shortcut audit's artefact table counts (``builder_scripts/artifacts.py``)
ARTIFACTS_CAPTION = (
    "Resynthesis artefacts of the discrimination candidates (S1 original, S2/S3 converted): share of clips with an "
    f"impulse (a {artifacts.WINDOW_SECONDS * 1000:.0f} ms window within {artifacts.SIGNAL_RANGE_DB:.0f} dB of the clip's "
    f"loudest whose largest sample-to-sample jump exceeds {artifacts.IMPULSE_RATIO:.0f} x its median jump), share with "
    f"a run of >= {artifacts.ZERO_RUN_SECONDS * 1000:.0f} ms of exact zeros between the first and last such window, "
    "and the median harmonics-to-noise ratio (Praat) of voiced frames."
)


def _seconds(clip: dict) -> float:
    info = sf.info(io.BytesIO(clip["bytes"]))
    return info.frames / info.samplerate


def _rows(root: Path, task: str, variant: str, columns: list[str], split: str = "test") -> list[dict]:
    """Rows (these columns) of one config and split; empty when it has no shards."""
    name = ssd.config_name(task, variant)
    if not ssd.shard_paths(root, name, split):
        return []
    return ssd.read_rows(root, name, split, columns=columns).to_pylist()


def statistics(root: Path) -> tuple[str, dict[str, list[float]]]:
    """Markdown table per variant, split and source, and the test target-clip durations per variant."""
    lines = [
        "| variant | split | source | dialogues | instances (det/loc) | discrimination | target speakers | avg. turns / segment | target turns | audio (min) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    durations: dict[str, list[float]] = defaultdict(list)
    columns = [
        "dialogue_id",
        "source_dataset",
        "target_speaker",
        "turns",
        "scenario",
        "target_audio",
        "reference_audio",
    ]
    for variant in ssd.VARIANTS:
        for split in ssd.SPLITS:
            rows = _rows(root, "detection", variant, columns, split)
            if not rows:
                continue
            disc = Counter(
                r["source_dataset"] for r in _rows(root, "discrimination", variant, ["source_dataset"], split)
            )
            by_source = defaultdict(list)
            for row in rows:
                by_source[row["source_dataset"]].append(row)
            for source, items in sorted(by_source.items()):
                seconds = 0.0
                for row in items:
                    lengths = [_seconds(c) for c in row["target_audio"]]
                    if row["scenario"] == "S1" and split == "test":
                        durations[variant] += lengths
                    seconds += sum(lengths) + _seconds(row["reference_audio"])
                lines.append(
                    f"| {variant} | {split} | {source} | {len({r['dialogue_id'] for r in items})} | {len(items)} | {disc[source]} "
                    f"| {len({r['target_speaker'] for r in items})} | {np.mean([len(r['turns']) for r in items]):.1f} "
                    f"| {sum(len(r['target_audio']) for r in items)} | {seconds / 60:.1f} |"
                )
    return "\n".join(lines), durations


def vc_mix(root: Path) -> str:
    """Share of each backend among the test split's converted clips, per variant."""
    lines = ["| variant | generation method | share of inconsistent clips |", "|---|---|---|"]
    for variant in ssd.VARIANTS:
        models = Counter(r["vc_model"] for r in _rows(root, "discrimination", variant, ["vc_model"]))
        total = sum(models.values())
        for model, n in sorted(models.items()):
            lines.append(f"| {variant} | {model} | {100 * n / total:.1f} % ({n}) |")
    return "\n".join(lines)


def similarity(root: Path, banks: dict) -> str:
    """Cosine of each substitute's and the target's mean embeddings (S2 and S3), per encoder of
    ``banks`` (table label -> the pool's ``SpeakerBank`` under that encoder) and variant."""
    lines = [
        "| encoder | variant | scenario | dialogues | mean | min | median | max | S3 > S2 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    columns = ["dialogue_id", "scenario", "source_dataset", "target_speaker", "substitute_speaker"]
    for label, bank in banks.items():
        for variant in ssd.VARIANTS:
            by_dialogue = defaultdict(dict)
            for row in _rows(root, "detection", variant, columns):
                if row["scenario"] != "S1":
                    target = pool_name(row["source_dataset"], row["target_speaker"])
                    by_dialogue[row["dialogue_id"]][row["scenario"]] = bank.cosine(
                        target, row_pool_name(row["substitute_speaker"], row["source_dataset"])
                    )
            if not by_dialogue:
                continue
            both = [d for d in by_dialogue.values() if len(d) == 2]  # a round's dialogue has one of them
            ordered = sum(d["S3"] > d["S2"] for d in both)
            for scenario in ("S2", "S3"):
                values = np.array([d[scenario] for d in by_dialogue.values() if scenario in d])
                if not values.size:
                    continue
                lines.append(
                    f"| {label} | {variant} | {scenario} | {values.size} | {values.mean():.3f} | {values.min():.3f} "
                    f"| {np.median(values):.3f} | {values.max():.3f} | {ordered} of {len(both)} |"
                )
    return "\n".join(lines)


def cross_engine(root: Path) -> str:
    """How many substitutes of bank-voiced targets another TTS engine voices, per variant and scenario
    (test split); empty when no target is voiced by the bank."""
    counts = defaultdict(Counter)
    columns = ["scenario", "source_dataset", "target_speaker", "substitute_speaker"]
    for variant in ssd.VARIANTS:
        for row in _rows(root, "detection", variant, columns):
            target = voice_engine(pool_name(row["source_dataset"], row["target_speaker"]))
            if row["scenario"] != "S1" and target:
                substitute = voice_engine(row_pool_name(row["substitute_speaker"], row["source_dataset"]))
                counts[variant][(row["scenario"], substitute != target)] += 1
    return "; ".join(
        f"{variant}: S2 {c[('S2', True)]} of {c[('S2', True)] + c[('S2', False)]}, "
        f"S3 {c[('S3', True)]} of {c[('S3', True)] + c[('S3', False)]}"
        for variant, c in counts.items()
    )


def speaker_pool(banks: dict) -> str:
    """Who the pool holds and how distinct its speakers are, per encoder of ``banks``: the EER of
    clip-pair trials among the pool's speakers and each speaker's most similar other speaker."""
    lines = [
        "| encoder | speakers | female | male | EER among speakers | nearest other: min / median / max | closest pair |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, bank in banks.items():
        genders = Counter(bank.gender(name) for name in bank.names)
        head = f"| {label} | {len(bank)} | {genders['female']} | {genders['male']} |"
        try:
            stats = bank.verification_stats()
        except ValueError as err:  # a corpus speaker with a single clip: no same-speaker trial
            lines.append(f"{head} n/a ({err}) | | |")
            continue
        cosines = np.array([cosine for _, cosine in stats.nearest.values()])
        speaker, (other, cosine) = max(stats.nearest.items(), key=lambda item: item[1][1])
        lines.append(
            f"{head} {stats.eer:.2f} % ({stats.same_trials} same-, {stats.different_trials} different-speaker pairs) "
            f"| {cosines.min():.3f} / {np.median(cosines):.3f} / {cosines.max():.3f} | {speaker} ~ {other} ({cosine:.3f}) |"
        )
    return "\n".join(lines)


def histogram(durations: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.2), dpi=120)
    upper = max((max(v) for v in durations.values() if v), default=1.0)
    bins = np.linspace(0, upper, 30)
    for variant, values in durations.items():
        ax.hist(values, bins=bins, alpha=0.55, label=f"{variant} ({len(values)} clips)")
    ax.set_xlabel("target-turn duration (s)")
    ax.set_ylabel("clips")
    ax.set_title("Target-turn durations (S1 instances)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _counts_table(verification: dict) -> str:
    lines = ["| stage | reason | dialogues |", "|---|---|---|"]
    for stage, counts in verification.items():
        if not counts:
            lines.append(f"| {stage} | (none) | 0 |")
        for reason, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            lines.append(f"| {stage} | {reason} | {n} |")
    return "\n".join(lines)


def licenses(sources: dict) -> tuple[str | list[str], str]:
    """The card's ``license:`` (the Hub identifier of the sources' license, or the list of them
    when they differ) and the markdown that says which source's rows carry which terms."""
    ids = sorted({s.hub_license for s in sources.values()})
    lines = [f"- **{s.name}** ({s.homepage}): `{s.hub_license}`; {s.license}." for s in sources.values()]
    if len(ids) > 1:
        lines.insert(
            0,
            "Each row keeps the license of its source (its `source_dataset`), so the card's `license:` "
            f"lists them all ({', '.join(ids)}):\n",
        )
    return ids[0] if len(ids) == 1 else ids, "\n".join(lines)


def write_dataset_card(
    root: Path, *, sources: dict, audit: BuildAudit, verification: dict, options, banks: dict
) -> Path:
    """Fill the template from the written shards; ``banks`` (table label -> the pool's bank under
    that encoder) give the substitutes' similarity under every encoder."""
    root = Path(root)
    stats, durations = statistics(root)
    histogram(durations, root / HISTOGRAM)
    license, source_lines = licenses(sources)
    citations = "\n\n".join(f"```bibtex\n{s.citation.strip()}\n```" for s in sources.values() if s.citation)
    audit_tables = f"{feature_lists()}\n\n{audit.tables()}\n\n" + "\n\n".join(
        f"**{variant}**, {ARTIFACTS_CAPTION}\n\n{part.artifacts.table()}"
        for variant, part in audit.non_speaker.items()
    )
    body = TEMPLATE.read_text(encoding="utf-8").format(
        statistics=stats,
        data_fields=ssd.data_fields_section(entry["config_name"] for entry in ssd.card_yaml(root)["configs"]),
        histogram=HISTOGRAM,
        vc_mix=vc_mix(root),
        similarity=similarity(root, banks),
        cross_engine=cross_engine(root) or "none (no target voiced by the TTS bank)",
        speaker_pool=speaker_pool(banks),
        encoders=", ".join(banks),
        verification=_counts_table(verification),
        shortcut_audit=audit_tables,
        sources=source_lines,
        source_citations=citations,
        citation=ssd.CITATION,
        seed=options.seed,
        vc=options.vc,
        vc_4vc=", ".join(options.vc_4vc),
        encoder=options.encoder,
        text_filter=options.text_filter,
        round_note=ROUND_NOTE if options.round else "",
    )
    return ssd.write_card(root, body, license=license, build_seed=options.seed)  # blind refuses a guessable seed
