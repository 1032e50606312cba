"""The final audio stage: every published clip leaves the pipeline through ``finish``.

Converted, resynthesised and reference clips alike, of every variant and source, pass through the
same steps with the same constants just before the dataset writer (``publish``), so that nothing
the earlier stages left in the non-speaker features (``builder_scripts/shortcuts.py``) tells a
converted clip from an original one:

1. **DC and drift:** the clip's mean removed (the high-pass alone would leave 1e-3 of it), then a linear-phase FIR
   high-pass (Kaiser window designed for ``HIGH_STOP_DB`` down below ``HIGH_STOP_HZ``, 57 dB at
   worst, and flat within 0.01 dB from ``HIGH_PASS_HZ``, under the lowest voices' F0). Praat's
   PSOLA leaves a slow drift under some converted turns, which held the gate open in the pauses,
   so the noise-floor feature told them: on the 4vc demo, 11 of its 37 S2 conversions had their
   quietest tenth of frames above -63 dBFS (the floor is at -66), against 9 of 185 original turns,
   8 of the 11 with 63-100 % of the quietest frames' energy below 60 Hz; with the high-pass, 1
   of 37. Before the gate, the mean of what it keeps is removed again: gating keeps only the
   speech, whose own mean (the waveform's asymmetry, which a resynthesis changes) would otherwise
   be left as an offset, and the pauses stay exactly silent.
2. **Band edge:** a linear-phase FIR low-pass (Kaiser window, ``LOW_PASS``, passband to
   ``PASS_HZ``, about ``STOP_DB`` down from ``STOP_HZ``), applied forwards without delay. The DSP
   backends cut at 6.4 kHz with a Butterworth whose edge a conversion softens (the level drop from
   6.0-6.4 to 6.4-6.8 kHz was 1-2 dB shallower on converted turns); the stage cuts 800 Hz below it,
   so whatever any backend left at or above 5.6 kHz is about ``STOP_DB`` under the noise floor.
3. **Gate:** 10 ms frames more than ``GATE_DB`` below the clip's RMS (pauses, breaths, whatever
   residue a backend leaves between words), and the frames around them beyond a ``HOLD_FRAMES``
   hang-over, are faded out (linear 10 ms ramps), so what lies under the speech is the floor alone.
4. **Level:** RMS to ``scenarios.TARGET_RMS_DBFS`` (the low-pass and the gate change it by a clip's
   own amount), peak capped as there.
5. **Noise floor:** white Gaussian noise at ``NOISE_DBFS`` RMS over the whole clip, seeded from the
   clip itself: above the cut-off, in pauses and in the quietest frames every clip is this floor.
6. **Quantisation:** 16 bits with TPDF dither (seeded likewise), on the grid the writer stores
   (``speakersleuth_dataset.pcm16``: x 32768), so the writer's rounding is exact.

The length is kept (a converted turn has its original's duration), and so is the timing of the
speech: the gate removes only what is far below it. Speech from 60 Hz to 5.2 kHz, which carries nearly
all of what the speaker encoders use, passes unchanged but for the floor 40 dB under its level.
The same input gives the same bytes (the generators are seeded from its samples, no global RNG).
"""

from __future__ import annotations

import hashlib
import operator
from dataclasses import replace

import numpy as np

from .scenarios import TARGET_RMS_DBFS, Unit, normalise_loudness

SR = 16000
HIGH_STOP_HZ = 20.0
HIGH_PASS_HZ = 60.0
HIGH_STOP_DB = 60.0
PASS_HZ = 5200.0
STOP_HZ = 5600.0
STOP_DB = 100.0
GATE_DB = 30.0
HOLD_FRAMES = 2
NOISE_DBFS = TARGET_RMS_DBFS - 40.0
FRAME = SR // 100


def _kaiser(stop_db: float, pass_hz: float, stop_hz: float) -> np.ndarray:
    """Linear-phase FIR taps (odd: a whole-sample delay, removed exactly) passing ``pass_hz``'s
    side of the edge and designed for ``stop_db`` down from ``stop_hz`` on the other (Kaiser's
    estimate: the high-pass reaches 57 dB, the low-pass 99.9)."""
    from scipy.signal import firwin, kaiserord

    taps, beta = kaiserord(stop_db, abs(stop_hz - pass_hz) / (SR / 2))
    taps += 1 - taps % 2
    return firwin(taps, (pass_hz + stop_hz) / 2, window=("kaiser", beta), fs=SR, pass_zero=pass_hz < stop_hz)


HIGH_PASS = _kaiser(HIGH_STOP_DB, HIGH_PASS_HZ, HIGH_STOP_HZ)
LOW_PASS = _kaiser(STOP_DB, PASS_HZ, STOP_HZ)


def _filtered(x: np.ndarray, taps: np.ndarray) -> np.ndarray:
    """``x`` through ``taps`` without their delay, same length; the ends continued by odd
    reflection (as ``scipy.signal.filtfilt`` pads), so that a clip's ends are no step for the
    filter (a drift that does not start at zero would ring through its first 45 ms)."""
    from scipy.signal import oaconvolve

    half = taps.size // 2
    padded = np.pad(x, half, mode="reflect", reflect_type="odd")
    return oaconvolve(padded, taps, mode="valid")


def _rng(clip: np.ndarray, draw: int) -> np.random.Generator:
    if not 0 <= draw < 2**64:
        raise ValueError(f"draw {draw}: give a draw from 0 (the published one) to 2**64 - 1")
    digest = hashlib.sha256(
        np.ascontiguousarray(clip, dtype=np.float32).tobytes() + (draw.to_bytes(8, "big") if draw else b"")
    ).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def _gate(x: np.ndarray) -> np.ndarray:
    """Per-sample gain: 1 on frames within ``GATE_DB`` of the clip's RMS (and ``HOLD_FRAMES`` around them), else 0, ramped."""
    n = -(-x.size // FRAME)
    frames = np.pad(x, (0, n * FRAME - x.size)).reshape(n, FRAME)
    level = np.mean(frames**2, axis=1)
    mean = float(np.mean(x**2))
    open_ = level > mean * 10 ** (-GATE_DB / 10)
    held = np.convolve(np.pad(open_.astype(float), HOLD_FRAMES), np.ones(2 * HOLD_FRAMES + 1), mode="valid") > 0
    centres = (np.arange(n) + 0.5) * FRAME
    return np.interp(np.arange(x.size), centres, held.astype(float))


def finish(clip: np.ndarray, draw: int = 0) -> np.ndarray:
    """The published version of ``clip`` (16 kHz mono float): same length, float32 on the 16-bit grid.
    ``draw`` > 0 gives another draw of the noise floor and the dither (the same clip otherwise):
    how far an audit moves when nothing but that draw changes (``benchmarks/bench_shortcuts.py``)."""
    clip = np.asarray(clip, dtype=np.float32).reshape(-1)
    rng = _rng(clip, operator.index(draw))
    x = _filtered(clip.astype(np.float64) - np.mean(clip, dtype=np.float64), HIGH_PASS)
    gate = _gate(x)
    x = (
        (x - np.sum(x * gate) / np.sum(gate)) * gate if gate.any() else x
    )  # the speech's own mean, then the pauses to zero
    x = _filtered(x, LOW_PASS)
    x = normalise_loudness(x, TARGET_RMS_DBFS).astype(np.float64)
    x += rng.standard_normal(x.size) * 10 ** (NOISE_DBFS / 20)
    dither = rng.uniform(-0.5, 0.5, x.size) + rng.uniform(-0.5, 0.5, x.size)
    pcm = np.clip(np.rint(x * 32768 + dither), -32768, 32767)
    return (pcm / 32768).astype(np.float32)


def finished(unit: Unit) -> Unit:
    """``unit`` with every clip it publishes (target turns, reference, converted turns) through ``finish``."""
    return replace(
        unit,
        targets=[finish(c) for c in unit.targets],
        reference=finish(unit.reference),
        converted={s: finish(c) for s, c in unit.converted.items()},
    )
