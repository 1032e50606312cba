"""The schema of a SpeakerSleuth dataset: tasks, splits, scenarios and labels, the variants
(``VariantSpec``), every config's ``datasets.Features`` (``CONFIGS``, ``ConfigSpec``), what each
column means (``COLUMN_DESCRIPTIONS``) and the paper's citation. Every other part of the format
builds on this module; it imports none of them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from datasets import Audio, Features, List, Value

from speakersleuth.speech.audio import SAMPLING_RATE

TASKS = ("detection", "localization", "discrimination")
SPLITS = ("test", "validation")
SCENARIOS = ("S1", "S2", "S3")
LABELS = ("consistent", "inconsistent")
GENDERS = ("female", "male")
CANDIDATE_LABELS = ("A", "B", "C")
#: Gold order of the discrimination candidates: original, similar speaker, gender switch.
GOLD_SCENARIO_ORDER = ("S1", "S3", "S2")
MAX_SEGMENT_TURNS = 20

#: The paper's page and BibTeX entry: the one citation of the project. The dataset card, the
#: scorer and the Space use it from here; each metric folder (which must load alone) carries a
#: copy that ``tests/metrics/test_metrics.py`` checks equal to it, as do the metric cards.
PAPER_URL = "https://aclanthology.org/2026.acl-long.944/"
CITATION = """\
@inproceedings{lee2026speakersleuth,
  title         = {SpeakerSleuth: Can Large Audio-Language Models Judge Speaker Consistency across Multi-turn Dialogues?},
  author        = {Lee, Jonggeun and Pyo, Junseong and Seo, Gyuhyeon and Jo, Yohan},
  booktitle     = {Proceedings of the 64th Annual Meeting of the Association for Computational Linguistics (Volume 1: Long Papers)},
  year          = {2026},
  pages         = {20612--20636},
  url           = {https://aclanthology.org/2026.acl-long.944/},
  eprint        = {2601.04029},
  archivePrefix = {arXiv}
}
"""


@dataclass(frozen=True)
class VariantSpec:
    """What makes a variant of the benchmark.

    A segment holds ``target_turns`` turns of the target speaker among at most
    ``max_window_turns`` turns; variants with the same ``target_turns`` are built on the same
    segments (main and 4vc). The converted turn of every dialogue is made by the build's one
    backend, or, with ``draws_backend``, by a backend drawn per dialogue among several (4vc).
    """

    name: str
    target_turns: int
    draws_backend: bool = False
    max_window_turns: int = MAX_SEGMENT_TURNS


VARIANT_SPECS = {
    s.name: s for s in (VariantSpec("main", 5), VariantSpec("4vc", 5, draws_backend=True), VariantSpec("10turn", 10))
}
VARIANTS = tuple(VARIANT_SPECS)
#: The columns of a human-review sheet (``review.csv``): the builder exports and reads it
#: (``--review-decisions``), the Space's Review tab writes it. The builder reads variant,
#: dialogue_id, decision and reason.
REVIEW_FIELDS = ("dialogue_id", "variant", "converted_turn", "vc_model", "text", "audio_files", "decision", "reason")


def segment_sharing(variant: str) -> tuple[str, ...]:
    """The variants built on the same segments as ``variant`` (itself included), in schema order."""
    n = VARIANT_SPECS[variant].target_turns
    return tuple(v for v, spec in VARIANT_SPECS.items() if spec.target_turns == n)


MAX_SHARD_BYTES = 500 * 1000**2
AUDIO_FORMAT = "FLAC"

_TURN = {"speaker": Value("string"), "text": Value("string"), "is_target": Value("bool")}
_AUDIO = Audio(sampling_rate=SAMPLING_RATE)

_COMMON = {
    "id": Value("string"),
    "dialogue_id": Value("string"),
    "source_dataset": Value("string"),
    "variant": Value("string"),
    "target_speaker": Value("string"),
    "target_gender": Value("string"),
    "turns": List(_TURN),
    "target_turn_positions": List(Value("int32")),
    "reference_audio": _AUDIO,
    "vc_model": Value("string"),
}

#: Detection and localization share their instances (same ids, same columns); a task reads its gold
#: column (``label`` or ``inconsistent_turns``).
TURN_FEATURES = Features(
    {
        **_COMMON,
        "scenario": Value("string"),
        "target_audio": List(_AUDIO),
        "label": Value("string"),
        "inconsistent_turns": List(Value("int32")),
        "converted_turn": Value("int32"),
        "substitute_speaker": Value("string"),
        "substitute_gender": Value("string"),
        "substitute_similarity": Value("float32"),
    }
)

DISCRIMINATION_FEATURES = Features(
    {
        **_COMMON,
        "context_audio": List(_AUDIO),
        "masked_position": Value("int32"),
        "candidates": List(_AUDIO),
        "candidate_labels": List(Value("string")),
        "candidate_scenarios": List(Value("string")),
        "candidate_substitute_speakers": List(Value("string")),
        "candidate_similarities": List(Value("float32")),
        "answer": Value("string"),
        "gold_ranking": List(Value("string")),
    }
)


#: What each column means, for the card's data-fields section (``data_fields_section``); every
#: column of ``TURN_FEATURES`` and ``DISCRIMINATION_FEATURES`` has one (a test checks both ways).
#: Positions: ``target_turn_positions`` index ``turns`` from 0; the target turns k = 1..N
#: (``inconsistent_turns``, ``converted_turn``, ``masked_position``, localization answers) from 1.
COLUMN_DESCRIPTIONS = {
    "id": "Opaque instance id, the key of a prediction line; a detection row and its localization row share it.",
    "dialogue_id": "`<source>/<dialogue>` of the corpus; S1, S2 and S3 of a dialogue (and its discrimination row) share it.",
    "source_dataset": "The corpus the dialogue comes from (the card's sources list its license).",
    "variant": "`main`, `4vc` or `10turn`: the config's variant.",
    "target_speaker": "The corpus's id of the speaker whose turns are judged.",
    "target_gender": "`female` or `male`.",
    "turns": "The dialogue window as text, every speaker's turns in order: `speaker`, `text`, and `is_target` "
    "(a turn of the target speaker).",
    "target_turn_positions": "Where the target turns are in `turns` (0-based): the k-th target turn (k = 1..N) is "
    "`turns[target_turn_positions[k - 1]]`.",
    "reference_audio": "One clip of the target speaker from outside the window (at least 3 s).",
    "vc_model": "The voice-conversion backend of the converted clip(s) (null for the S1 rows of the turn tasks).",
    "scenario": "Gold: `S1` (consistent), `S2` (turn k converted to the other gender) or `S3` (to the most similar speaker).",
    "target_audio": "The N target turns' clips in dialogue order (list of clips; N = 5, or 10 for `-10turn`).",
    "label": "Gold (detection): `consistent` (S1) or `inconsistent` (S2, S3).",
    "inconsistent_turns": "Gold (localization): the 1-based target turns that were converted: `[k]` for S2/S3, `[]` for S1.",
    "converted_turn": "Provenance: k, the 1-based target turn converted in S2/S3 (null for S1).",
    "substitute_speaker": "Provenance: whose voice turn k was converted to (`<source>/<speaker>` when from another "
    "corpus; null for S1).",
    "substitute_gender": "Provenance: the substitute's gender (null for S1).",
    "substitute_similarity": "Provenance: cosine of the substitute's and the target's mean speaker embeddings (null for S1).",
    "context_audio": "The N - 1 target turns other than the masked one, in dialogue order (list of clips).",
    "masked_position": "k, the 1-based target turn that is masked and that the candidates would fill.",
    "candidates": "Three clips of turn k, one per scenario (S1 original, S2, S3), in the order of `candidate_labels`.",
    "candidate_labels": "`A`, `B`, `C`: the names a prediction uses for the candidates.",
    "candidate_scenarios": "Gold: each candidate's scenario.",
    "candidate_substitute_speakers": "Provenance: each candidate's substitute speaker (null for the original).",
    "candidate_similarities": "Provenance: each candidate's speaker similarity to the target (1.0 for the original).",
    "answer": "Gold (discrimination): the label of the original candidate.",
    "gold_ranking": "Gold (ranking): the labels best first, original > similar speaker (S3) > gender switch (S2).",
}


@dataclass(frozen=True)
class ConfigSpec:
    """One config of the benchmark: a task on a variant."""

    name: str
    task: str
    variant: str

    @property
    def features(self) -> Features:
        return DISCRIMINATION_FEATURES if self.task == "discrimination" else TURN_FEATURES

    @property
    def num_target_turns(self) -> int:
        return VARIANT_SPECS[self.variant].target_turns

    @property
    def data_dir(self) -> str:
        """Folder of the config's shards, relative to the dataset root."""
        return f"{self.variant}/{self.task}"

    @property
    def audio_columns(self) -> tuple[str, ...]:
        return tuple(n for n, f in self.features.items() if _is_audio(f))


def config_name(task: str, variant: str) -> str:
    """``detection`` for the main variant, ``detection-4vc`` otherwise."""
    return task if variant == "main" else f"{task}-{variant}"


CONFIGS: dict[str, ConfigSpec] = {
    config_name(t, v): ConfigSpec(config_name(t, v), t, v) for v in VARIANTS for t in TASKS
}
DEFAULT_CONFIG = "detection"


def get_config(name: str) -> ConfigSpec:
    try:
        return CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown config {name!r}; known: {', '.join(CONFIGS)}") from None


def _is_audio(feature: Any) -> bool:
    return isinstance(feature, Audio) or (isinstance(feature, List) and isinstance(feature.feature, Audio))
