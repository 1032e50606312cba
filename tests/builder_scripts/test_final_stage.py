"""The final audio stage: a converted-like clip and a reference-like clip of the same speech, which
differ in every non-speaker feature before it (band edge, noise floor, quantisation, DC, level),
come out alike after it. Each feature is measured here by an independent implementation
(scipy.signal.welch, other frame lengths, zlib), not by the audit's code."""

from __future__ import annotations

import zlib

import numpy as np
import pytest
from scipy.signal import butter, sosfiltfilt, welch

from speakersleuth.builder_scripts.final_stage import finish, finished
from speakersleuth.builder_scripts.scenarios import TARGET_RMS_DBFS
from tests.support.unit_fixtures import make_unit

SR = 16000


def speech(seed: int = 0) -> np.ndarray:
    """2 s of a voiced sound (140 Hz harmonics to 8 kHz, 1/f) in two bursts with pauses around them."""
    rng = np.random.default_rng(seed)
    t = np.arange(2 * SR) / SR
    voice = sum(np.sin(2 * np.pi * 140 * h * t + rng.uniform(0, 2 * np.pi)) / h for h in range(1, 57))
    voice += 0.05 * rng.standard_normal(t.size)
    envelope = ((t > 0.3) & (t < 0.9)) | ((t > 1.1) & (t < 1.7))
    ramp = np.convolve(envelope.astype(float), np.hanning(321) / np.hanning(321).sum(), mode="same")
    return voice * ramp


def processed(clip, *, order: int, floor_dbfs: float, dbfs: float, dc: float, step: int, seed: int) -> np.ndarray:
    """A backend's output: low-passed at 6.4 kHz (Butterworth of ``order``: a steep or soft edge),
    noise in the pauses, a level, a DC offset, and 16-bit values on a grid of ``step`` LSBs."""
    x = sosfiltfilt(butter(order, 6400, fs=SR, output="sos"), clip)
    x = x * 10 ** (dbfs / 20) / np.sqrt(np.mean(x**2))
    x = x + np.random.default_rng(seed).standard_normal(x.size) * 10 ** (floor_dbfs / 20) + dc
    return (np.round(x * 32768 / step) * step / 32768).astype(np.float32)


@pytest.fixture(scope="module")
def pair():
    base = speech()
    reference = processed(base, order=16, floor_dbfs=-90, dbfs=-26, dc=0.0, step=1, seed=1)
    converted = processed(base, order=3, floor_dbfs=-58, dbfs=-23, dc=0.003, step=6, seed=2)
    return reference, converted


def band_db(clip, lo, hi):
    f, p = welch(clip.astype(np.float64), fs=SR, nperseg=1024)
    return 10 * np.log10(p[(f >= lo) & (f < hi)].sum() / p.sum())


def floor_db(clip):
    frames = clip[: clip.size // 480 * 480].astype(np.float64).reshape(-1, 480)  # 30 ms
    return 10 * np.log10(np.percentile(np.mean(frames**2, axis=1), 10) + 1e-20)


def active(clip):
    frames = clip[: clip.size // 400 * 400].astype(np.float64).reshape(-1, 400)  # 25 ms
    level = 10 * np.log10(np.mean(frames**2, axis=1) + 1e-20)
    return np.mean(level > level.max() - 40)


def measures(clip) -> dict[str, float]:
    pcm = np.round(clip.astype(np.float64) * 32768).astype(np.int16)
    return {
        **{
            f"band {lo}-{hi} Hz (dB)": band_db(clip, lo, hi)
            for lo, hi in ((5600, 6000), (6000, 6400), (6400, 6800), (6800, 8000))
        },
        "edge drop at 6.4 kHz (dB)": band_db(clip, 6000, 6400) - band_db(clip, 6400, 6800),
        "noise floor (dB)": floor_db(clip),
        "level (dB)": 20 * np.log10(np.std(clip.astype(np.float64))),
        "DC / RMS": abs(np.mean(clip, dtype=np.float64)) / np.std(clip.astype(np.float64)),
        "distinct values": float(np.unique(pcm).size),
        "zlib bytes": float(len(zlib.compress(pcm.tobytes(), 9))),
        "active fraction": active(clip),
    }


#: how far the two finished clips may differ on each measure (dB, ratios or shares); a band of
#: white noise measured on 2 s varies by about 0.3 dB from one draw to another
TOLERANCE = {
    "band 5600-6000 Hz (dB)": 0.7,
    "band 6000-6400 Hz (dB)": 0.7,
    "band 6400-6800 Hz (dB)": 0.7,
    "band 6800-8000 Hz (dB)": 0.7,
    "edge drop at 6.4 kHz (dB)": 1.0,
    "noise floor (dB)": 1.0,
    "level (dB)": 0.02,
    "DC / RMS": 1e-3,
    "distinct values": 0.03,
    "zlib bytes": 0.02,
    "active fraction": 0.02,
}
RELATIVE = ("distinct values", "zlib bytes")


def differs(a: dict, b: dict) -> dict[str, tuple[float, float]]:
    out = {}
    for name, tolerance in TOLERANCE.items():
        gap = abs(a[name] - b[name]) / (max(abs(a[name]), abs(b[name])) if name in RELATIVE else 1.0)
        if gap > tolerance:
            out[name] = (round(a[name], 4), round(b[name], 4))
    return out


def test_the_two_clips_differ_on_every_feature_before_the_stage(pair):
    """The fixture is a real test: before the stage every measure tells the clips apart."""
    reference, converted = pair
    assert set(differs(measures(reference), measures(converted))) == set(TOLERANCE)


def test_after_the_stage_no_feature_tells_the_converted_like_clip(pair):
    reference, converted = (finish(c) for c in pair)
    assert reference.size == converted.size == pair[0].size
    assert differs(measures(reference), measures(converted)) == {}


def test_the_speech_band_passes_and_the_band_above_is_the_floor_alone(pair):
    reference = pair[0]
    out = finish(reference)
    f, before = welch(reference.astype(np.float64), fs=SR, nperseg=1024)
    _, after = welch(out.astype(np.float64), fs=SR, nperseg=1024)
    speech_band = (f > 100) & (f < 5000) & (before > before.max() * 1e-4)
    gain_db = 10 * np.log10(after[speech_band] / before[speech_band])
    assert np.abs(gain_db - np.median(gain_db)).max() < 0.5  # unchanged up to one level change
    floor = after[(f >= 5600) & (f < SR / 2)]  # the Nyquist bin has half a bin's power
    assert 10 * np.log10(floor.max() / floor.min()) < 3.0  # white: residue would stand out
    noise_only = finish(np.zeros(SR, dtype=np.float32))
    assert (
        10
        * np.log10(
            np.mean(after[f >= 5600])
            / np.mean(welch(noise_only.astype(np.float64), fs=SR, nperseg=1024)[1][f >= 5600])
        )
        < 1.0
    )


def test_same_clip_same_bytes_and_on_the_writers_16_bit_grid(pair):
    reference, converted = pair
    once, again = finish(reference), finish(reference.copy())
    assert once.tobytes() == again.tobytes()
    assert not np.array_equal(finish(converted)[: SR // 4], once[: SR // 4])  # the floor is not one fixed pattern
    scaled = once.astype(np.float64) * 32768
    assert np.array_equal(scaled, np.round(scaled)) and np.abs(scaled).max() <= 32768


def test_speech_with_a_mean_of_its_own_leaves_no_offset():
    """A waveform that is asymmetric only while it speaks (as a resynthesis can make it): the clip's
    mean removed first leaves the pauses below zero, the gate then keeps the speech's own mean. The
    finished clip's mean is at the noise floor's, as for a symmetric clip."""
    base = speech()
    asymmetric = base + 0.03 * np.abs(base)  # slightly louder positive half-waves; the pauses stay silent
    dc = [abs(np.mean(c, dtype=np.float64)) / np.std(c.astype(np.float64)) for c in (finish(base), finish(asymmetric))]
    before = abs(np.mean(asymmetric)) / np.std(
        asymmetric
    )  # ~1.9 %: after the first removal the pauses sit ~35 dB down, gated
    assert before > 0.01 and max(dc) < 1e-3, (before, dc)
    t = np.arange(base.size) / SR
    pauses = (t < 0.2) | (t > 1.8)  # well outside the gate's hang-over: the noise floor alone
    floors = [
        10 * np.log10(np.mean(c[pauses].astype(np.float64) ** 2) / np.mean(c.astype(np.float64) ** 2))
        for c in (finish(base), finish(asymmetric))
    ]
    assert abs(floors[0] - floors[1]) < 0.3, floors  # no offset moved into the pauses


def test_the_gate_keeps_speech_less_the_mean_of_what_it_keeps_not_the_whole_clips(monkeypatch):
    """What goes on to the low-pass after the gate is ``(x - m) * gate`` with ``m`` the gate-weighted
    mean of the kept speech, so it sums to zero (a whole-clip mean, about 0 after the high-pass,
    would leave the speech's own mean as an offset), and the pauses are exactly zero. Asymmetric
    bursts of 20 ms every 250 ms keep a mean of their own through the high-pass."""
    from speakersleuth.builder_scripts import final_stage

    t = np.arange(2 * SR) / SR
    voice = speech()
    bursts = (voice + 0.8 * np.abs(voice)) * (((t % 0.25) < 0.02) & (t > 0.3) & (t < 1.7))
    gated = []
    filtered = final_stage._filtered

    def spy(x, taps):
        if taps is final_stage.LOW_PASS:
            gated.append(x.copy())
        return filtered(x, taps)

    monkeypatch.setattr(final_stage, "_filtered", spy)
    finish(0.1 * bursts)
    (kept,) = gated
    assert abs(kept.sum()) < 1e-9 * np.abs(kept).sum(), kept.sum() / np.abs(kept).sum()
    assert np.all(kept[(t < 0.2) | (t > 1.8)] == 0.0)  # the pauses, beyond the hang-over: nothing kept


def amplitude(clip, hz: float) -> float:
    """The amplitude of ``hz`` in ``clip``'s middle (a least-squares sine and cosine, 0.2 s kept off each end)."""
    x = clip[SR // 5 : -SR // 5].astype(np.float64)
    t = np.arange(x.size) / SR
    basis = np.stack([np.sin(2 * np.pi * hz * t), np.cos(2 * np.pi * hz * t)], axis=1)
    return float(np.hypot(*np.linalg.lstsq(basis, x, rcond=None)[0]))


def test_a_slow_drift_under_the_voice_does_not_hold_the_pauses_open():
    """Praat's PSOLA leaves a slow drift (mostly below 60 Hz) under some converted turns, loud enough
    in the pauses to keep the gate open there: after the stage their pauses are the floor alone, as
    the driftless clip's are."""
    base = speech()
    walk = np.random.default_rng(3).standard_normal(base.size).cumsum()
    drift = sosfiltfilt(butter(4, 10, fs=SR, output="sos"), walk - walk.mean())
    drifting = base + drift * 0.1 * np.std(base) / np.std(drift)  # 20 dB under the speech
    t = np.arange(base.size) / SR
    pauses = (t < 0.2) | (t > 1.8)

    def pause_db(c):
        return 10 * np.log10(np.mean(c[pauses].astype(np.float64) ** 2) / np.mean(c.astype(np.float64) ** 2) + 1e-30)

    assert pause_db(drifting) > -30 > pause_db(base)  # the drift is above the gate's threshold in the pauses
    assert abs(pause_db(finish(drifting)) - pause_db(finish(base))) < 0.3
    assert abs(floor_db(finish(drifting)) - floor_db(finish(base))) < 1.0


def test_the_lowest_voices_pass_and_what_lies_under_them_does_not():
    """An 80 Hz fundamental (a low male voice) keeps its level against 1 kHz; 15 Hz goes under the floor."""
    t = np.arange(2 * SR) / SR
    tones = {hz: np.sin(2 * np.pi * hz * t) for hz in (15, 80, 1000)}
    out = finish((0.1 * sum(tones.values())).astype(np.float32))
    assert abs(20 * np.log10(amplitude(out, 80) / amplitude(out, 1000))) < 0.05
    assert 20 * np.log10(amplitude(out, 15) / amplitude(out, 1000)) < -50


@pytest.mark.parametrize("samples", [1, 30, 400, 480])
def test_a_clip_shorter_than_the_gates_hang_over_keeps_its_length(samples):
    clip = 0.1 * np.sin(np.arange(samples) / 3.0).astype(np.float32)
    out = finish(clip)
    assert out.shape == (samples,) and np.isfinite(out).all()


def test_another_draw_changes_the_floor_and_the_dither_only(pair):
    """``finish(clip, draw)``: draw 0 is the published clip; another draw differs from it by a fresh
    floor and dither alone (their difference is two independent floors: 3 dB above one)."""
    import hashlib

    from speakersleuth.builder_scripts.final_stage import NOISE_DBFS, _rng

    reference = pair[0]
    published, other = finish(reference), finish(reference, 1)
    seed = int.from_bytes(
        hashlib.sha256(reference.astype(np.float32).tobytes()).digest()[:8], "big"
    )  # as every build seeds the floor
    assert _rng(reference, 0).bytes(64) == np.random.default_rng(seed).bytes(64)
    assert finish(reference, np.int64(1)).tobytes() == other.tobytes()
    with pytest.raises(ValueError, match="draw -1"):
        finish(reference, -1)
    difference_db = 20 * np.log10(np.std(other.astype(np.float64) - published))
    floor_db_alone = 10 * np.log10(
        10 ** (NOISE_DBFS / 10) + (1 / 32768) ** 2 / 4
    )  # the noise, TPDF dither and rounding (1/4 LSB^2)
    assert abs(difference_db - (floor_db_alone + 10 * np.log10(2))) < 0.5, (difference_db, floor_db_alone)
    assert finish(reference, 2).tobytes() != other.tobytes()


def test_the_gate_fades_frames_30_db_under_the_clips_level_and_keeps_those_above():
    """Three seconds: a loud 1 kHz second, then a 500 Hz second 22 dB under the clip's RMS (within
    ``GATE_DB`` = 30: kept, at its level relative to the loud one), then a 700 Hz second 38 dB under
    it (faded: only the floor is left there)."""
    t = np.arange(SR) / SR
    clip_power = 0.5 / 3  # a unit sine's power over one second of three (the quieter seconds add < 1 %)
    amplitudes = {
        1000: 1.0,
        500: np.sqrt(2 * clip_power * 10 ** (-22 / 10)),
        700: np.sqrt(2 * clip_power * 10 ** (-38 / 10)),
    }
    out = finish(
        0.1 * np.concatenate([a * np.sin(2 * np.pi * hz * t) for hz, a in amplitudes.items()]).astype(np.float32)
    )

    def level_db(second: int, hz: float) -> float:  # the tone's amplitude in that second, against the loud one's
        return 20 * np.log10(amplitude(out[SR * second : SR * (second + 1)], hz) / amplitude(out[:SR], 1000))

    assert abs(level_db(1, 500) - 20 * np.log10(amplitudes[500])) < 0.2, level_db(1, 500)  # kept as it was
    assert level_db(2, 700) < 20 * np.log10(amplitudes[700]) - 30, level_db(2, 700)  # faded to the floor


def test_the_clips_mean_is_removed_before_the_high_pass():
    """Quiet speech (-40 dBFS) riding on a large offset (0.6) with a residue 36 dB under it in the
    pauses: the high-pass alone passes 1e-3 of the offset, 24 dB under the speech, enough to hold
    the gate open in the pauses. With the mean removed first, the pauses are the floor alone, as
    for the same clip without the offset."""
    base = speech()
    base = 0.01 * base / np.sqrt(np.mean(base**2)) + 0.01 * 10 ** (-36 / 20) * np.random.default_rng(
        5
    ).standard_normal(base.size)
    t = np.arange(base.size) / SR
    pauses = (t < 0.2) | (t > 1.8)

    def pause_db(c):
        return 10 * np.log10(np.mean(c[pauses].astype(np.float64) ** 2) / np.mean(c.astype(np.float64) ** 2))

    plain, offset = finish(base.astype(np.float32)), finish((base + 0.6).astype(np.float32))
    assert abs(pause_db(offset) - pause_db(plain)) < 0.5, (pause_db(offset), pause_db(plain))
    assert abs(np.mean(offset, dtype=np.float64)) / np.std(offset.astype(np.float64)) < 1e-3


def test_every_clip_a_unit_publishes_goes_through_the_stage_the_reference_too():
    """``finished(unit)``: the target turns, the reference and both converted turns each come out as
    ``finish`` makes them: at the published level, on the 16-bit grid."""
    unit = make_unit(num_targets=2, seconds=0.5)
    out = finished(unit)
    pairs = [
        *zip(unit.targets, out.targets),
        (unit.reference, out.reference),
        *((unit.converted[s], out.converted[s]) for s in ("S2", "S3")),
    ]
    for given, published in pairs:
        level = 20 * np.log10(np.std(published.astype(np.float64)))
        assert (
            abs(20 * np.log10(np.std(given.astype(np.float64))) - TARGET_RMS_DBFS) > 5
        )  # the fixture's own level differs
        assert abs(level - TARGET_RMS_DBFS) < 0.1, level
        scaled = published.astype(np.float64) * 32768
        assert np.array_equal(scaled, np.round(scaled))
        assert published.tobytes() == finish(given).tobytes()
