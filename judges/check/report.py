"""A check's findings for people and programs: a table (stdout), JSON (``--json``,
``--report-out``) and a picture (``--plot-out``: per speaker, a strip of per-turn scores with τ
drawn and the flagged turns marked).

>>> from speakersleuth.judges.check.results import CheckReport, SpeakerResult, TurnResult
>>> turns = [
...     TurnResult("1", "A", 1, 0.82, False, "a1.wav", seconds=2.4, speech_seconds=2.1, relative=0.255),
...     TurnResult("2", "A", None, None, False, "a2.wav", seconds=1.1, speech_seconds=0.4, status="too short to judge"),
...     TurnResult("3", "A", 2, 0.31, True, "a3.wav", seconds=3.0, speech_seconds=2.7, relative=-0.255),
... ]
>>> report = CheckReport("campplus", "pairwise", 0.5, "given (--threshold)", [SpeakerResult("d", "A", "pairwise", 0.5, turns, 0.69)])
>>> print(format_table(report))  # doctest: +NORMALIZE_WHITESPACE
Speaker consistency: encoder campplus, method pairwise, τ = 0.5
τ: given (--threshold)
score: mean cosine similarity to the speaker's other turns; a turn is flagged when score < 0.5
<BLANKLINE>
speaker  turn  seconds  speech  score  vs typical  flagged             audio
A        1     2.40     2.10    0.820  +0.255                          a1.wav
A        2     1.10     0.40    -      -           too short to judge  a2.wav
A        3     3.00     2.70    0.310  -0.255      FLAGGED             a3.wav
<BLANKLINE>
A: 1 of 2 turns flagged (3); 1 too short to judge
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from speakersleuth.judges.check.results import SCORE_NAMES, CheckReport, SpeakerResult, flag_rule
from speakersleuth.judges.embedding import HIGHER_IS_CONSISTENT
from speakersleuth.speech.files import write_text_atomic

TEXT_WIDTH = 32


def format_table(report: CheckReport) -> str:
    """The report as a readable table: a header saying what the score is and where τ comes from,
    one line per turn, a verdict per speaker, the candidates ranked, then the notes."""
    many = len({s.dialogue for s in report.speakers}) > 1
    lines = [
        f"Speaker consistency: encoder {report.encoder}, method {report.method}, τ = {report.threshold:g}",
        f"τ: {report.threshold_source}",
        f"score: {SCORE_NAMES[report.method]}; a turn is flagged when {flag_rule(report.method, report.threshold)}",
    ]
    for other in sorted({(s.method, s.threshold) for s in report.speakers} - {(report.method, report.threshold)}):
        lines.append(
            f"(speakers with one turn: method {other[0]}, {SCORE_NAMES[other[0]]}, flagged when {flag_rule(*other)})"
        )
    measured = any(t.speech_seconds is not None for s in report.speakers for t in s.turns)
    header = (["dialogue"] if many else []) + ["speaker", "turn", "seconds"] + (["speech"] if measured else [])
    header += ["score", "vs typical", "flagged", "audio"]
    with_text = any(t.text for s in report.speakers for t in s.turns)
    header += ["text"] if with_text else []
    rows = [_row(s, t, many, measured, with_text) for s in report.speakers for t in s.turns]
    lines += ["", *_columns([header, *rows]), ""]
    lines += [_verdict(s, many) for s in report.speakers]
    choices = [(s, t) for s in report.speakers for t in s.turns if t.candidates]
    if choices:
        lines += ["", "Candidates, best first:"]
        for speaker, turn in choices:
            ranked = ", ".join(f"{c.label}{' (current)' if c.current else ''} {c.score:.3f}" for c in turn.candidates)
            lines.append(f"  turn {turn.turn} ({speaker.speaker}): {ranked} -> keep {turn.candidates[0].label}")
    if report.recalibration:
        lines += ["", recalibration_line(report.recalibration)]
    lines += [f"note: {note}" for note in report.notes]
    return "\n".join(lines).rstrip() + "\n"


def _row(speaker: SpeakerResult, turn, many: bool, measured: bool, with_text: bool) -> list[str]:
    row = ([speaker.dialogue] if many else []) + [speaker.speaker, turn.turn, _number(turn.seconds, ".2f")]
    row += [_number(turn.speech_seconds, ".2f")] if measured else []
    row += [
        _number(turn.score, ".3f"),
        _number(turn.relative, "+.3f"),
        "FLAGGED" if turn.flagged else turn.status,
        turn.audio or "(candidates only)",
    ]
    if with_text:
        text = turn.text if len(turn.text) <= TEXT_WIDTH else turn.text[: TEXT_WIDTH - 1] + "…"
        row.append(text)
    return row


def _number(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _columns(rows: list[list[str]]) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]


def _verdict(speaker: SpeakerResult, many: bool) -> str:
    name = f"{speaker.dialogue}/{speaker.speaker}" if many else speaker.speaker
    scored = [t for t in speaker.turns if t.score is not None]
    flagged = speaker.flagged
    which = f" ({', '.join(t.turn for t in flagged)})" if flagged else ""
    against = f", against the reference {speaker.reference}" if speaker.reference else ""
    short = sum(t.status == "too short to judge" for t in speaker.turns)
    unjudged = f"; {short} too short to judge" if short else ""
    return f"{name}: {len(flagged)} of {len(scored)} turns flagged{which}{against}{unjudged}"


def recalibration_line(recalibration: dict) -> str:
    """One line: the τ picked on the user's labels and how well it does there."""
    r = recalibration
    line = (
        f"recalibrated on {r['source']}: τ = {r['threshold']:g}, balanced accuracy {r['balanced_accuracy']:.1f} % "
        f"on {r['consistent']} consistent and {r['inconsistent']} inconsistent turns "
        f"(τ = {r['previous_threshold']:g} had {r['previous_balanced_accuracy']:.1f} %)"
    )
    return line + (f"; warning: {r['warning']}" if r.get("warning") else "")


def write_json(report: CheckReport, path: str | os.PathLike) -> Path:
    """``report.to_dict()`` written as JSON (atomically)."""
    return write_text_atomic(path, json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n")


def plot_report(report: CheckReport, path: str | os.PathLike) -> Path:
    """Draw ``report_figure(report)`` into an image file (PNG by its suffix; matplotlib decides).

    Arguments
    ---------
    report : CheckReport
        What a check found.
    path : str or os.PathLike
        The image to write.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    report_figure(report).savefig(path, dpi=110)
    return Path(path)


def report_figure(report: CheckReport):
    """A picture of the check as a matplotlib ``Figure`` (for ``gr.Plot`` or a notebook): one
    panel per speaker, the per-turn scores in dialogue order as a strip, τ as a dashed line, the
    flagged turns in red with a cross, and a turn's candidates as hollow markers (labelled).
    Made without pyplot (no GUI backend, no global state: safe in a server's threads). Needs
    matplotlib (the ``check`` or ``builder`` extra)."""
    from matplotlib.figure import Figure

    speakers = report.speakers
    fig = Figure(figsize=(9, 1.9 + 1.5 * len(speakers)))
    axes = fig.subplots(len(speakers), 1, squeeze=False)
    for ax, speaker in zip(axes[:, 0], speakers):
        _strip(ax, speaker, len({s.dialogue for s in speakers}) > 1)
    axes[-1, 0].set_xlabel("turn (the speaker's turns in dialogue order)")
    fig.suptitle(
        f"Speaker consistency: {report.encoder}, {report.method}, τ = {report.threshold:g}"
        f"  (flagged turns: {len(report.flagged)})",
        fontsize=11,
    )
    fig.tight_layout()
    return fig


def _strip(ax, speaker: SpeakerResult, many: bool) -> None:
    """One speaker's panel."""
    turns = speaker.turns
    x = list(range(len(turns)))
    scored = [(i, t) for i, t in zip(x, turns) if t.score is not None]
    ax.plot([i for i, _ in scored], [t.score for _, t in scored], color="0.6", linewidth=1, zorder=1)
    for i, turn in scored:
        color, marker = ("tab:red", "X") if turn.flagged else ("tab:blue", "o")
        ax.scatter([i], [turn.score], color=color, marker=marker, s=70 if turn.flagged else 36, zorder=3)
    for i, turn in zip(x, turns):
        for c in turn.candidates:
            if not c.current:
                ax.scatter([i], [c.score], facecolors="none", edgecolors="tab:green", s=50, zorder=2)
                ax.annotate(c.label, (i, c.score), fontsize=7, xytext=(4, 2), textcoords="offset points")
    ax.axhline(speaker.threshold, color="tab:red", linestyle="--", linewidth=1)
    side = "below" if HIGHER_IS_CONSISTENT[speaker.method] else "above"
    ax.text(
        1.0,
        speaker.threshold,
        f" τ {speaker.threshold:g} (flag {side})",
        transform=ax.get_yaxis_transform(),
        color="tab:red",
        fontsize=8,
        va="center",
    )
    ax.set_xticks(x, [t.turn for t in turns], fontsize=8)
    values = [t.score for _, t in scored] + [c.score for t in turns for c in t.candidates] + [speaker.threshold]
    pad = 0.05 + 0.1 * (max(values) - min(values))
    ax.set_ylim(min(values) - pad, max(values) + pad)
    name = f"{speaker.dialogue}/{speaker.speaker}" if many else speaker.speaker
    ax.set_title(f"{name}: {len(speaker.flagged)} of {len(scored)} turns flagged", fontsize=9, loc="left")
    ax.set_ylabel(
        f"{speaker.method}: {'similarity' if HIGHER_IS_CONSISTENT[speaker.method] else 'distance'}", fontsize=8
    )
    ax.grid(alpha=0.3)
