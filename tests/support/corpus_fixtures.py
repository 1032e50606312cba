"""Small copies of the recorded corpora in their real on-disk formats, written by the tests.

Each writer takes plain Python descriptions of the dialogues and writes tone audio (one pitch per
speaker, so spans are checkable), or with ``voices`` speech-like audio in each speaker's synthetic
voice (``tests.support.vc_fixtures``; 16 kHz), which a whole build can convert and verify, plus the
corpus's own metadata files.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import soundfile as sf

from tests.support.vc_fixtures import SAMPLING_RATE, Voice, speech_like


def tone(seconds: float, sr: int, freq: float = 220.0, channels: int = 1) -> np.ndarray:
    """A quiet sine; with ``channels`` > 1 channel c is at ``freq * (c + 1)``."""
    t = np.arange(int(round(seconds * sr))) / sr
    cols = [0.1 * np.sin(2 * np.pi * freq * (c + 1) * t) for c in range(channels)]
    return np.stack(cols, axis=1).astype(np.float32) if channels > 1 else cols[0].astype(np.float32)


def spoken(spans: list[tuple[float, float, Voice]], seconds: float, sr: int, seed: int = 0) -> np.ndarray:
    """A ``seconds`` track holding each ``(start, end, voice)`` span in that voice (span i drawn with
    seed ``seed + i``, so no two spans sound the same), silence elsewhere."""
    if sr != SAMPLING_RATE:
        raise ValueError(f"speech-like audio is {SAMPLING_RATE} Hz, not {sr}")
    out = np.zeros(int(round(seconds * sr)), dtype=np.float32)
    for i, (start, end, voice) in enumerate(spans):
        first = int(round(start * sr))
        clip = speech_like(voice, end - start, seed=seed + i)[: out.size - first]
        out[first : first + clip.size] += clip
    return out


# --- DailyTalk ---------------------------------------------------------------------------------


def write_dailytalk(
    root: Path,
    dialogues: dict[int, list[tuple[int, str, float]]],
    sr: int = 22050,
    voices: dict[int, Voice] | None = None,
) -> Path:
    """``dialogues``: {dialogue index: [(speaker 0|1, text, seconds), ...]} in utterance order;
    ``voices``: {speaker: voice} for speech-like audio.

    Writes ``metadata.json`` (keys in reverse order, as strings) and
    ``data/<d>/<u>_<spk>_d<d>.wav`` + ``.txt``.
    """
    meta, index = {}, 0
    for d, utts in sorted(dialogues.items(), reverse=True):
        entries = {}
        for u, (spk, text, seconds) in enumerate(utts):
            stem = root / "data" / str(d) / f"{u}_{spk}_d{d}"
            stem.parent.mkdir(parents=True, exist_ok=True)
            audio = (
                spoken([(0.0, seconds, voices[spk])], seconds, sr, seed=index)
                if voices
                else tone(seconds, sr, 200.0 + 100 * spk)
            )
            sf.write(stem.with_suffix(".wav"), audio, sr)
            stem.with_suffix(".txt").write_text(text + "\n")
            entries[str(u)] = {
                "speaker": spk,
                "text": text,
                "index": index,
                "turn": u,
                "topic": "ordinary_life",
                "emotion": "no emotion",
                "act": "inform",
            }
            index += 1
        meta[str(d)] = dict(reversed(entries.items()))
    root.mkdir(parents=True, exist_ok=True)
    (root / "metadata.json").write_text(json.dumps(meta, indent=1))
    return root


# --- AMI ---------------------------------------------------------------------------------------

NITE = "http://nite.sourceforge.net/"


def _xml(root_tag: str, nite_id: str, body: str) -> str:
    return (
        f'<?xml version="1.0" encoding="ISO-8859-1" standalone="yes"?>\n'
        f'<{root_tag} nite:id="{nite_id}" xmlns:nite="{NITE}">\n{body}</{root_tag}>\n'
    )


def write_ami(
    data_dir: Path,
    meetings: dict,
    seconds: float = 8.0,
    sr: int = 16000,
    annotations: str = "zip",
    voices: dict[str, Voice] | None = None,
) -> Path:
    """Write AMI audio (``amicorpus/<M>/audio/<M>.Headset-<ch>.wav`` and ``<M>.Mix-Headset.wav``) and
    the NXT manual annotations (``corpusResources/meetings.xml``, ``words/``, ``segments/``), either
    as ``ami_public_manual_1.6.2.zip`` in ``data_dir`` (``annotations="zip"``) or as the folder
    ``data_dir/annotations`` (returned).

    ``meetings``: {meeting: {agent: {"global_name", "channel", "segments": [(seg_start, seg_end,
    [word, ...])]}}} where a word is ``(start, end, text)`` plus optional flags ``"punc"``/``"trunc"``,
    or ``("vocalsound"|"disfmarker", start, end)`` for a non-word element. ``voices``: {global name:
    voice} for speech-like audio over each segment.
    """
    files: dict[str, str] = {}
    meeting_xml = []
    for meeting, agents in meetings.items():
        speakers = "".join(
            f'  <speaker nite:id="{meeting}.speaker.{agent}" nxt_agent="{agent}" channel="{a["channel"]}" '
            f'global_name="{a["global_name"]}" role="PM" camera="closeup{a["channel"] + 1}"/>\n'
            for agent, a in agents.items()
        )
        meeting_xml.append(
            f'<meeting nite:id="{meeting}.meeting" observation="{meeting}" type="scenario" '
            f'visibility="public" seen_type="test">\n{speakers}</meeting>\n'
        )
        mix = np.zeros(int(seconds * sr), dtype=np.float32)
        for agent, a in agents.items():
            words, segs, n = [], [], 0
            for seg_start, seg_end, seg_words in a["segments"]:
                first = n
                for w in seg_words:
                    wid = f'nite:id="{meeting}.{agent}.words{n}"'
                    if w[0] in ("vocalsound", "disfmarker"):
                        words.append(f'  <{w[0]} {wid} starttime="{w[1]}" endtime="{w[2]}"/>\n')
                    else:
                        flags = "".join(f' {f}="true"' for f in w[3:])
                        words.append(f'  <w {wid} starttime="{w[0]}" endtime="{w[1]}"{flags}>{w[2]}</w>\n')
                    n += 1
                segs.append(
                    f'  <segment nite:id="{meeting}.sync.{len(segs)}" transcriber_start="{seg_start}" '
                    f'transcriber_end="{seg_end}" channel="{a["channel"]}">\n'
                    f'    <nite:child href="{meeting}.{agent}.words.xml#id({meeting}.{agent}.words{first})'
                    f'..id({meeting}.{agent}.words{n - 1})"/>\n  </segment>\n'
                )
            files[f"words/{meeting}.{agent}.words.xml"] = _xml("nite:root", f"{meeting}.{agent}.words", "".join(words))
            files[f"segments/{meeting}.{agent}.segments.xml"] = _xml(
                "nite:root", f"{meeting}.{agent}.segs", "".join(segs)
            )
            if voices:
                audio = spoken([(a0, b0, voices[a["global_name"]]) for a0, b0, _ in a["segments"]], seconds, sr)
            else:
                audio = tone(seconds, sr, 150.0 + 50 * a["channel"])
            mix += audio
            wav = data_dir / "amicorpus" / meeting / "audio" / f"{meeting}.Headset-{a['channel']}.wav"
            wav.parent.mkdir(parents=True, exist_ok=True)
            sf.write(wav, audio, sr)
        sf.write(data_dir / "amicorpus" / meeting / "audio" / f"{meeting}.Mix-Headset.wav", mix / len(agents), sr)
    files["corpusResources/meetings.xml"] = _xml("meetings", "meetings", "".join(meeting_xml))
    if annotations == "zip":
        with zipfile.ZipFile(data_dir / "ami_public_manual_1.6.2.zip", "w") as z:
            for name, text in files.items():
                z.writestr(name, text)
        return data_dir / "ami_public_manual_1.6.2.zip"
    root = data_dir / "annotations"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="ISO-8859-1")
    return root


# --- Behavior-SD -------------------------------------------------------------------------------


def behavior_sd_record(
    soda_index: int,
    utterances: list[tuple[int, str, float, float]],
    genders: list[str],
    speaker_ids: list[str],
    sr: int = 22050,
    channels: int = 1,
    audio_seconds: float | None = None,
    audio_format: str = "FLAC",
    voices: dict[str, Voice] | None = None,
) -> dict:
    """One Behavior-SD record as documented on its card, plus an ``audio`` {bytes, path} column.

    ``utterances``: [(speaker_idx, tts_text, start_time, end_time)]; ``voices``: {speaker id: voice}
    for mono speech-like audio.
    """
    seconds = audio_seconds if audio_seconds is not None else max(u[3] for u in utterances) + 0.2
    buf = io.BytesIO()
    if voices:
        audio = spoken([(a, b, voices[speaker_ids[s]]) for s, _, a, b in utterances], seconds, sr)
    else:
        audio = tone(seconds, sr, 180.0, channels)
    sf.write(buf, audio, sr, format=audio_format)
    names = ["Cornell", "Dontrell"]
    return {
        "soda_split": "test",
        "soda_index": soda_index,
        "narrative": "Two friends plan a trip.",
        "speakers": names,
        "num_turns": len(utterances),
        "behaviors": [{"utterance_length": 0, "filler_words": 0, "backchannels": 0, "interruptions": 0}] * 2,
        "utterances": [
            {
                "uttr_idx": i,
                "uttr_type": None,
                "speaker_idx": s,
                "speaker": names[s],
                "tts_text": text,
                "dur_samples": int(round((end - start) * sr)),
                "start_time": start,
                "end_time": end,
            }
            for i, (s, text, start, end) in enumerate(utterances)
        ],
        "tts_speaker_ids": speaker_ids,
        "tts_genders": genders,
        "audio": {"bytes": buf.getvalue(), "path": f"{soda_index}.flac"},
    }


def write_table(path: Path, records: list[dict], drop: tuple[str, ...] = ()) -> Path:
    """Write records as parquet (``.parquet``) or as a ``datasets``-style Arrow stream (``.arrow``)."""
    table = pa.Table.from_pylist([{k: v for k, v in r.items() if k not in drop} for r in records])
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    else:
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
    return path


# --- Bazinga -----------------------------------------------------------------------------------


def write_bazinga(
    root: Path,
    episodes: dict[str, list[tuple[str, float, float, str]]],
    genders: dict[str, str],
    seconds: float = 6.0,
    sr: int = 16000,
    voices: dict[str, Voice] | None = None,
) -> Path:
    """The local Bazinga layout ``builder_scripts.sources.bazinga`` accepts.

    ``episodes``: {identifier: [(speaker, start, end, text)]}, written in the given row order;
    ``voices``: {speaker: voice} for speech-like audio.
    """
    (root / "transcripts").mkdir(parents=True, exist_ok=True)
    (root / "audio").mkdir(exist_ok=True)
    for ident, rows in episodes.items():
        lines = ["speaker,start,end,text"] + [f'{s},{a},{b},"{t}"' for s, a, b, t in rows]
        (root / "transcripts" / f"{ident}.csv").write_text("\n".join(lines) + "\n")
        audio = spoken([(a, b, voices[s]) for s, a, b, _ in rows], seconds, sr) if voices else tone(seconds, sr)
        sf.write(root / "audio" / f"{ident}.flac", audio, sr)
    (root / "speakers.csv").write_text("speaker,gender\n" + "".join(f"{s},{g}\n" for s, g in genders.items()))
    return root
