"""Check your own dialogue: the benchmark's embedding judges on dialogue audio as people have it.

Per speaker, how consistent each turn's voice is, which turns slipped (flagged at a calibrated τ)
and which regeneration of a turn to keep (its candidates ranked), from a folder of turn files with
a manifest or one recording with an RTTM file. The scoring is the embedding judges' own
(``judges.embedding``), through the same content-keyed cache (``judges.cache``); the default
encoder, method and τ are those that did best on the benchmark's validation split
(``calibration.json``, made by ``judges.check.make_calibration``). That calibration comes from
TTS voices whose inconsistent turns are re-spoken or DSP-converted, so on other speech its τ is a
starting point; ``recalibrate_on`` (``--calibrate``) picks τ on labelled turns of your own.

The parts, one purpose each: ``errors`` (``CheckInputError``), ``audio`` (decoding any format,
rate and channel count to 16 kHz mono), ``dialogue`` (``Clip``, ``Turn``, ``Dialogue`` and their
checks), ``inputs`` (manifest and RTTM), ``calibration`` (the shipped τ, recalibration), ``checker``
(``check``, ``check_dialogues``), ``results`` (``CheckReport``), ``report`` (table, JSON, picture),
``benchmark`` (a built dataset's rows through ``check_dialogues``, as predictions), ``cli``
(``python -m speakersleuth.judges check``) and ``make_calibration`` (``calibration.json`` from a build).

>>> from speakersleuth.judges.check import check
>>> report = check("dialogue/manifest.csv")  # doctest: +SKIP
>>> print(format_table(report))  # doctest: +SKIP
"""

from speakersleuth.judges.check.calibration import Calibration, Recalibration, load_calibration, resolve_settings
from speakersleuth.judges.check.checker import check, check_dialogues, read_dialogues, recalibrate_on
from speakersleuth.judges.check.dialogue import MIN_TURN_SECONDS, Clip, Dialogue, Turn, validate
from speakersleuth.judges.check.errors import CheckInputError
from speakersleuth.judges.check.inputs import read_manifest, read_rttm
from speakersleuth.judges.check.report import format_table, plot_report, report_figure, write_json
from speakersleuth.judges.check.results import CandidateResult, CheckReport, SpeakerResult, TurnResult

__all__ = [
    "MIN_TURN_SECONDS",
    "Calibration",
    "CandidateResult",
    "CheckInputError",
    "CheckReport",
    "Clip",
    "Dialogue",
    "Recalibration",
    "SpeakerResult",
    "Turn",
    "TurnResult",
    "check",
    "check_dialogues",
    "format_table",
    "load_calibration",
    "plot_report",
    "read_dialogues",
    "read_manifest",
    "read_rttm",
    "recalibrate_on",
    "report_figure",
    "resolve_settings",
    "validate",
    "write_json",
]
