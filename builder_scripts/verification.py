"""Verification: text coherence (pluggable), audio checks, and the human-review round trip.

Every check returns ``None`` when the instance passes or a short reason, which the build counts
and logs; a segment that fails any check is dropped with all its scenarios (S1, S2 and S3 of a
dialogue stay together, so paired metrics stay defined).
"""

from __future__ import annotations

import csv
import json
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

import speakersleuth.speakersleuth_dataset as ssd

#: Median F0 (Hz) that separates the typical male and female ranges; S2's converted turn must
#: land on the substitute's side of it.
GENDER_F0_BOUNDARY = 155.0
CLIP_LEVEL = 0.999
MAX_CLIPPED_SHARE = 0.001
SILENCE_DBFS = -50.0


# ----------------------------------------------------------------------------- text coherence


#: Why a window with a word of the word list is dropped (the card counts it under this name).
PROFANITY = "text: profanity or slur (glin-profanity English list)"


@lru_cache(maxsize=1)
def _word_list():
    """glin-profanity's filter over its English list: whole words, case-insensitive, accents and
    masking folded (``fück``, ``f*ck``); no fuzzy matching, so ``Scunthorpe`` passes."""
    from glin_profanity import Filter

    return Filter({"languages": ["english"], "detect_leetspeak": True, "normalize_unicode": True})


def profane_words(text: str) -> list[str]:
    """The words of ``text`` on glin-profanity's English list of profanity and slurs.

    >>> profane_words("Shut up, you bitch!"), profane_words("What the fück"), profane_words("I moved to Scunthorpe.")
    (['bitch'], ['fuck'], [])
    """
    return list(_word_list().check_profanity(text)["profane_words"])


class TextFilter(ABC):
    """Judges whether a segment's text may be published: no profanity or slur in any turn (a
    maintained word list, whatever the filter), and one coherent stretch of conversation."""

    name: str

    def check(self, turns: Sequence[dict]) -> str | None:
        """``turns``: the window's ``{"speaker", "text", "is_target"}``; ``None`` when it passes,
        else why not."""
        if any(profane_words(t["text"]) for t in turns):
            return PROFANITY
        return self.coherence(turns)

    @abstractmethod
    def coherence(self, turns: Sequence[dict]) -> str | None:
        """``None`` when the window reads as one coherent conversation, else why not."""


class HeuristicTextFilter(TextFilter):
    """The offline default: rejects windows that are not a conversation a listener could follow.

    A window fails when one speaker says everything, when a turn repeats the previous one
    verbatim, when a target turn has fewer than ``min_target_words`` words, or when fewer than
    ``min_alpha_share`` of its tokens are words.
    """

    name = "heuristic"

    def __init__(self, min_target_words: int = 2, min_alpha_share: float = 0.7):
        self.min_target_words = min_target_words
        self.min_alpha_share = min_alpha_share

    def coherence(self, turns: Sequence[dict]) -> str | None:
        if len({t["speaker"] for t in turns}) < 2:
            return "text: a single speaker"
        for a, b in zip(turns, turns[1:]):
            if a["text"].strip().lower() == b["text"].strip().lower():
                return "text: a turn repeats the previous one"
        if any(len(t["text"].split()) < self.min_target_words for t in turns if t["is_target"]):
            return "text: a target turn is too short"
        tokens = [w for t in turns for w in t["text"].split()]
        if not tokens or sum(bool(re.search(r"[A-Za-z]", w)) for w in tokens) / len(tokens) < self.min_alpha_share:
            return "text: mostly non-words"
        return None


COHERENCE_PROMPT = """You check dialogue excerpts for a speech benchmark.
Below is a contiguous excerpt of a conversation, one turn per line as "SPEAKER: text".
Answer whether it reads as one coherent conversation that a listener could follow: turns respond
to each other, nothing is garbled, cut off mid-word, duplicated or in another language.
Reply with JSON only: {"coherent": true|false, "reason": "<at most 12 words>"}

Excerpt:
{excerpt}"""


class LLMTextFilter(TextFilter):
    """An LLM behind any OpenAI-compatible ``/chat/completions`` endpoint (vLLM, the OpenAI API).

    It talks through the pinned ``openai`` client, which retries (up to ``retries`` times, with
    jittered backoff, honouring ``Retry-After``) a timeout, a lost connection, 408, 409, 429 and 5xx,
    each attempt bounded by ``timeout`` seconds; what still fails raises ``RuntimeError``. The key
    comes from the environment variable ``api_key_env`` (the placeholder ``EMPTY`` when it is unset,
    vLLM's convention for a server without keys); decoding is deterministic (temperature 0). An
    answer that is not the requested JSON counts as a rejection with reason
    ``text: unparseable LLM answer`` — nothing passes unchecked.
    """

    def __init__(
        self, base_url: str, model: str, api_key_env: str = "OPENAI_API_KEY", timeout: float = 60.0, retries: int = 3
    ):
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = timeout
        self.retries = retries
        self.name = f"llm:{model}"
        self._client = None

    def client(self):
        """The ``openai`` client (made on first use: importing ``openai`` takes a while)."""
        if self._client is None:
            from openai import OpenAI

            key = os.environ.get(self.api_key_env) or "EMPTY"
            self._client = OpenAI(api_key=key, base_url=self.base_url, timeout=self.timeout, max_retries=self.retries)
        return self._client

    def request_body(self, turns: Sequence[dict]) -> dict:
        excerpt = "\n".join(f"{t['speaker']}: {t['text']}" for t in turns)
        return {
            "model": self.model,
            "temperature": 0,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": COHERENCE_PROMPT.replace("{excerpt}", excerpt)}],
        }

    def coherence(self, turns: Sequence[dict]) -> str | None:
        import openai

        try:
            response = self.client().chat.completions.create(**self.request_body(turns))
        except openai.APIStatusError as err:
            raise RuntimeError(f"{self.name}: HTTP {err.status_code} from {self.base_url}") from None
        except openai.APIConnectionError as err:  # timeouts too, once the client's retries are spent
            raise RuntimeError(f"{self.name}: no answer from {self.base_url}: {err}") from None
        answer = (response.choices[0].message.content if response.choices else None) or ""
        match = re.search(r"\{.*\}", answer, re.S)
        try:
            verdict = json.loads(match.group(0)) if match else None
        except json.JSONDecodeError:
            verdict = None
        if not isinstance(verdict, dict) or not isinstance(verdict.get("coherent"), bool):
            return "text: unparseable LLM answer"
        return None if verdict["coherent"] else "text: judged incoherent by LLM"


def get_text_filter(spec: str) -> TextFilter:
    """``heuristic`` or ``openai-compatible:<base_url>:<model>`` (e.g. a local vLLM server). The
    base URL may hold colons (scheme, port); the model is what follows the last one, so a model
    name cannot hold a colon (``openai-compatible:http://localhost:8000/v1:Qwen/Qwen2.5-7B-Instruct``)."""
    if spec == "heuristic":
        return HeuristicTextFilter()
    if spec.startswith("openai-compatible:"):
        rest = spec[len("openai-compatible:") :]
        base_url, sep, model = rest.rpartition(":")
        if not sep or not base_url or not model:
            raise ValueError(f"text filter {spec!r}: expected openai-compatible:<base_url>:<model>")
        return LLMTextFilter(base_url, model)
    raise ValueError(f"unknown text filter {spec!r}; use 'heuristic' or 'openai-compatible:<base_url>:<model>'")


# ------------------------------------------------------------------------------- audio checks


def median_f0(clip: np.ndarray) -> float:
    """Median F0 (Hz) of the voiced frames, by Praat's autocorrelation pitch tracker."""
    import parselmouth

    pitch = parselmouth.Sound(clip.astype(np.float64), sampling_frequency=ssd.SAMPLING_RATE).to_pitch(
        time_step=0.01, pitch_floor=60.0, pitch_ceiling=500.0
    )
    f0 = pitch.selected_array["frequency"]
    voiced = f0[f0 > 0]
    return float(np.median(voiced)) if voiced.size else 0.0


def clip_problem(clip: np.ndarray, what: str) -> str | None:
    if np.mean(np.abs(clip) >= CLIP_LEVEL) > MAX_CLIPPED_SHARE:
        return f"audio: {what} clips"
    level = float(np.sqrt(np.mean(np.square(clip, dtype=np.float64))))
    if level == 0.0 or 20 * np.log10(level) < SILENCE_DBFS:
        return f"audio: {what} is silent"
    return None


def audio_checks(unit) -> tuple[str | None, dict]:
    """Checks of one converted unit; returns (first failure or None, the measured values)."""
    s2_f0 = median_f0(unit.converted["S2"])
    measured = {
        "s2_median_f0": round(s2_f0, 1),
        "target_median_f0": round(median_f0(unit.targets[unit.converted_turn - 1]), 1),
        "s2_similarity": unit.s2.similarity,
        "s3_similarity": unit.s3.similarity,
    }
    if unit.s2.gender == "female" and s2_f0 < GENDER_F0_BOUNDARY:
        return "audio: S2 turn not in the female F0 range", measured
    if unit.s2.gender == "male" and not 0 < s2_f0 < GENDER_F0_BOUNDARY:
        return "audio: S2 turn not in the male F0 range", measured
    if not unit.s3.similarity > unit.s2.similarity:
        return "audio: S3 substitute not more similar to the target than S2's", measured
    clips = [("a target turn", c) for c in unit.targets] + [("the reference", unit.reference)]
    clips += [(f"the {s} turn", c) for s, c in unit.converted.items()]
    for what, clip in clips:
        problem = clip_problem(clip, what)
        if problem:
            return problem, measured
    return None, measured


# ------------------------------------------------------------------------------- human review


def export_review(dataset: str | Path, out_dir: str | Path) -> Path:
    """Write ``review.csv`` + ``review.html`` + the audio of every dialogue of every variant.

    One row per (variant, dialogue): the reviewer listens to the target turns of S1, the S2 and
    S3 versions of the converted turn and the reference, then fills ``decision`` with ``accept``
    or ``reject`` (and a ``reason``).
    """
    import html

    import soundfile as sf

    variants = [v for v in ssd.VARIANTS if ssd.shard_paths(dataset, ssd.config_name("discrimination", v))]
    if not variants:
        raise ValueError(f"{dataset}: no discrimination test shards to review: not a built SpeakerSleuth folder")
    out = Path(out_dir)
    (out / "audio").mkdir(parents=True, exist_ok=True)
    rows, page = [], ["<!doctype html><meta charset=utf-8><title>SpeakerSleuth review</title><h1>Review sheet</h1>"]
    for variant in variants:
        table = ssd.read_rows(dataset, ssd.config_name("discrimination", variant))
        for row in table.to_pylist():
            stem = f"{variant}-{row['dialogue_id'].replace('/', '_')}"
            files = []
            clips = [("reference", row["reference_audio"])] + [
                (f"context{i + 1}", c) for i, c in enumerate(row["context_audio"])
            ]
            clips += [(s, c) for s, c in zip(row["candidate_scenarios"], row["candidates"])]
            for label, clip in clips:
                path = out / "audio" / f"{stem}-{label}.wav"
                sf.write(path, ssd.load_waveform(clip["bytes"]), ssd.SAMPLING_RATE)
                files.append(path.relative_to(out).as_posix())
            text = " | ".join(f"{'*' if t['is_target'] else ''}{t['speaker']}: {t['text']}" for t in row["turns"])
            rows.append(
                {
                    "dialogue_id": row["dialogue_id"],
                    "variant": variant,
                    "converted_turn": row["masked_position"],
                    "vc_model": row["vc_model"],
                    "text": text,
                    "audio_files": ";".join(files),
                    "decision": "",
                    "reason": "",
                }
            )
            page.append(
                f"<h2>{html.escape(variant)} {html.escape(row['dialogue_id'])} (turn {row['masked_position']})</h2><p>{html.escape(text)}</p>"
            )
            page += [f"<div>{html.escape(f)} <audio controls src='{html.escape(f)}'></audio></div>" for f in files]
    with open(out / "review.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, ssd.REVIEW_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    (out / "review.html").write_text("\n".join(page), encoding="utf-8")
    return out / "review.csv"


def read_review_decisions(path: str | Path) -> dict[tuple[str, str], str]:
    """``{(variant, dialogue_id): reason}`` of every rejected dialogue in a filled review sheet.

    Rows left undecided are accepted; any decision other than accept/reject is an error naming
    its line, so a typo never silently keeps or drops an instance.
    """
    rejected, errors = {}, []
    with open(path, newline="", encoding="utf-8") as f:
        for line, row in enumerate(csv.DictReader(f), start=2):
            decision = (row.get("decision") or "").strip().lower()
            if decision in ("", "accept"):
                continue
            if decision != "reject":
                errors.append(f"{path}:{line}: decision must be accept or reject, got {row.get('decision')!r}")
                continue
            if row.get("variant") not in ssd.VARIANTS or not row.get("dialogue_id"):
                errors.append(f"{path}:{line}: row lacks a known variant or a dialogue_id")
                continue
            rejected[(row["variant"], row["dialogue_id"])] = f"review: {(row.get('reason') or 'rejected').strip()}"
    if errors:
        raise ValueError("review decisions:\n" + "\n".join(errors))
    return rejected
