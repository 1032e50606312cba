"""Where the check's τ comes from: the calibration shipped with the package, or the user's labels.

``calibration.json`` (package data beside this module, written by ``judges.check.make_calibration``
from a build, never by hand) holds, for every method of every wheel encoder, τ calibrated on the
validation split of the benchmark's demo build and the figures it reached there, and names the
default: the encoder and method with the best validation detection balanced accuracy. Those
voices are TTS voices and the changes re-spoken or DSP-converted turns, so on other speech the
shipped τ is a starting point: ``recalibrate`` picks τ on the user's own labelled turns.

>>> calibration = load_calibration()
>>> settings = resolve_settings(calibration=calibration)
>>> (settings.encoder, settings.method) == (calibration.default["encoder"], calibration.default["method"])
True
>>> resolve_settings(method="pairwise", threshold=0.5, calibration=calibration).source
'given (--threshold)'
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

from speakersleuth.judges.check.errors import CheckInputError
from speakersleuth.judges.embedding import DEFAULT_THRESHOLDS, flagged_turns
from speakersleuth.judges.names import METHODS
from speakersleuth.judges.sweep import pick_threshold

#: The τ grid of a recalibration on the user's labels: 0.01, 0.02, ..., 0.99.
RECALIBRATION_GRID = tuple(round(0.01 * k, 2) for k in range(1, 100))
#: Fewer labelled turns than this in either class make a recalibration a rough one (a warning).
FEW_LABELS = 10
LABELS = {"consistent": False, "0": False, "inconsistent": True, "1": True}
CAVEAT = (
    "τ was calibrated on the SpeakerSleuth benchmark's TTS voices, where the inconsistent turns are "
    "re-spoken by another voice or DSP-converted, and (but for the reference method) on dialogues of "
    "real recordings and two other synthesisers with a planted turn; on other speech it is a starting point "
    "(--calibrate FILE picks τ on your own labelled turns)"
)


@dataclass(frozen=True)
class Calibration:
    """The shipped calibration file, read (``load_calibration``)."""

    data: dict
    path: str

    @property
    def default(self) -> dict:
        """``{"encoder", "method", "threshold"}`` of the best judge on validation."""
        return self.data["default"]

    def entry(self, encoder: str, method: str) -> dict | None:
        """The file's entry of ``method`` on ``encoder`` (its τ and figures), None when absent."""
        return next((j for j in self.data["judges"] if (j["encoder"], j["method"]) == (encoder, method)), None)

    def best_method(self, encoder: str) -> str | None:
        """The method with the best validation detection Bal acc on ``encoder`` (None: not calibrated)."""
        entries = [j for j in self.data["judges"] if j["encoder"] == encoder]
        return max(entries, key=_rank)["method"] if entries else None

    def describe(self, entry: dict | None = None) -> str:
        """One line: where the shipped τ of ``entry`` (default: the benchmark's) comes from."""
        if entry is not None and entry.get("calibrated_on", "").startswith("labelled"):
            sources = self.data["labelled_sources"]
            build = " and the benchmark's validation split" if entry["calibrated_on"].endswith("validation") else ""
            return (
                f"calibrated on labelled dialogues of speech we did not make ({', '.join(sources)}: "
                f"{sum(s['dialogues'] for s in sources.values())} dialogues){build} ({self.path})"
            )
        source = self.data["source"]
        return (
            f"calibrated on the validation split of {source['dataset_name']}, variants "
            f"{', '.join(source['variants'])} ({self.path}, commit {source['commit'][:12]})"
        )


def _rank(entry: dict) -> tuple:
    """A judge's order, as ``make_calibration`` chose the default: validation detection Bal acc,
    then validation AUROC."""
    validation = entry.get("validation", {})  # a judge calibrated on labelled dialogues alone has none
    return (validation.get("det_bal_acc", 0.0), validation.get("auroc") or 0.0)


def load_calibration(path: str | os.PathLike | None = None) -> Calibration:
    """The calibration file: ``path``, or the one shipped in the package (default)."""
    if path is None:
        return _shipped_calibration()
    try:
        return Calibration(json.loads(Path(path).read_text(encoding="utf-8")), str(path))
    except (OSError, json.JSONDecodeError) as err:
        raise CheckInputError(f"{path}: not a calibration file ({err})") from None


@lru_cache(maxsize=1)
def _shipped_calibration() -> Calibration:
    """The file shipped in the package, read once per process (the command, its parser and the check all ask)."""
    text = resources.files("speakersleuth.judges.check").joinpath("calibration.json").read_text(encoding="utf-8")
    return Calibration(json.loads(text), "judges/check/calibration.json")


@dataclass(frozen=True)
class JudgeSettings:
    """The encoder spec, method and τ a check runs with, where τ comes from, and the τ of the
    reference method on that encoder (for a one-turn speaker that has a reference clip)."""

    encoder: str
    method: str
    threshold: float
    source: str
    reference_threshold: float


def resolve_settings(
    encoder: str | None = None,
    method: str | None = None,
    threshold: float | None = None,
    calibration: Calibration | None = None,
) -> JudgeSettings:
    """The check's settings: what is given, the rest from the calibration file.

    Arguments
    ---------
    encoder : str, optional
        An encoder spec (``speech.encoders.get_encoder``); default: the calibration's default.
    method : str, optional
        ``core``, ``pairwise``, ``centroid`` or ``reference``; default: the calibration's default
        method where ``encoder`` has it calibrated, else the best calibrated method of ``encoder``
        (else ``centroid``).
    threshold : float, optional
        τ; default: the calibrated τ of (encoder, method), else the paper's τ for the method.
    calibration : Calibration, optional
        Default: the shipped file (``load_calibration()``).

    Returns
    -------
    JudgeSettings
        The encoder, method, τ, where τ comes from (``source``) and the reference method's τ.

    Example
    -------
    >>> resolve_settings("ecapa:/models/ecapa", "centroid").source
    "the paper's τ for centroid (ecapa:/models/ecapa is not in the calibration file)"
    """
    calibration = calibration or load_calibration()
    encoder = encoder or calibration.default["encoder"]
    if method is None:
        calibrated = calibration.entry(encoder, calibration.default["method"]) is not None
        method = calibration.default["method"] if calibrated else (calibration.best_method(encoder) or "centroid")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; known: {', '.join(METHODS)}")
    tau, source = _threshold(calibration, encoder, method, threshold)
    reference = calibration.entry(encoder, "reference")
    return JudgeSettings(
        encoder,
        method,
        tau,
        source,
        reference["threshold"] if reference else DEFAULT_THRESHOLDS["reference"],
    )


def _threshold(calibration: Calibration, encoder: str, method: str, given: float | None) -> tuple[float, str]:
    if given is not None:
        return float(given), "given (--threshold)"
    entry = calibration.entry(encoder, method)
    if entry is None:
        return DEFAULT_THRESHOLDS[method], f"the paper's τ for {method} ({encoder} is not in the calibration file)"
    return float(entry["threshold"]), calibration.describe(entry)


def parse_label(value, where: str) -> bool | None:
    """A turn's label: True (inconsistent), False (consistent) or None (unlabelled: empty)."""
    text = str(value).strip().lower() if value is not None else ""
    if not text:
        return None
    if text not in LABELS:
        raise CheckInputError(f"{where}: label {value!r}; use consistent or inconsistent (or 0 / 1)")
    return LABELS[text]


@dataclass(frozen=True)
class Recalibration:
    """τ picked on labelled turns: ``threshold``, its ``balanced_accuracy`` (percent) on them, that
    of the τ it replaces (``previous_balanced_accuracy``), the counts and any ``warning``."""

    method: str
    threshold: float
    balanced_accuracy: float
    previous_threshold: float
    previous_balanced_accuracy: float
    consistent: int
    inconsistent: int
    source: str
    warning: str | None


def balanced_accuracy(method: str, scores: np.ndarray, inconsistent: np.ndarray, threshold: float) -> float:
    """Per-turn balanced accuracy (percent) of flagging at τ: the mean of the shares of
    inconsistent turns flagged and consistent turns not flagged."""
    flagged = np.zeros(len(scores), dtype=bool)
    flagged[np.asarray(flagged_turns(method, np.asarray(scores), threshold), dtype=int) - 1] = True
    hit = flagged[inconsistent].mean()
    correct_rejection = (~flagged[~inconsistent]).mean()
    return float(50.0 * (hit + correct_rejection))


def recalibrate(
    method: str, scores, labels, *, previous: float, source: str, grid=RECALIBRATION_GRID
) -> Recalibration:
    """τ with the best per-turn balanced accuracy on labelled turns (ties: closest to ``previous``,
    then the smaller), as the sweep calibrates on the benchmark's validation split.

    Arguments
    ---------
    method : str
        The method the scores come from.
    scores : sequence of float
        The labelled turns' scores (``judges.embedding.turn_scores``).
    labels : sequence of bool
        True where the turn is inconsistent.
    previous : float
        The τ in use, compared and preferred on ties.
    source : str
        The labelled file, for messages.
    grid : sequence of float
        The τ values tried (default 0.01 to 0.99).

    Returns
    -------
    Recalibration

    Example
    -------
    >>> r = recalibrate("pairwise", [0.9, 0.8, 0.85, 0.3], [False, False, False, True], previous=0.4, source="x")
    >>> r.threshold, r.balanced_accuracy, r.warning is not None
    (0.4, 100.0, True)
    """
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    n_bad, n_good = int(labels.sum()), int((~labels).sum())
    if not n_bad or not n_good:
        missing = "inconsistent" if not n_bad else "consistent"
        raise CheckInputError(f"{source}: no turn is labelled {missing}; calibration needs turns of both kinds")
    rows = [{"threshold": t, "det_bal_acc": balanced_accuracy(method, scores, labels, t)} for t in grid]
    tau = pick_threshold(rows, previous)
    warning = None
    if min(n_bad, n_good) < FEW_LABELS:
        warning = (
            f"τ rests on {n_good} consistent and {n_bad} inconsistent labelled turns: a rough value "
            f"(label at least {FEW_LABELS} of each for a steadier one)"
        )
    return Recalibration(
        method,
        tau,
        next(r["det_bal_acc"] for r in rows if r["threshold"] == tau),
        previous,
        balanced_accuracy(method, scores, labels, previous),
        n_good,
        n_bad,
        source,
        warning,
    )
