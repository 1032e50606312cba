"""The Viewer tab: browse one instance at a time and listen to it.

``InstanceIndex`` reads, once per config, only the light columns (id, source dataset, scenario)
to fill the pickers; a click then reads exactly one instance with ``read_rows(ids=[...])`` (a
parquet filter), so no click decodes the dataset. Every string from the dataset is HTML-escaped.

The Viewer reads the served dataset folder only, never the private gold folder: on a blind copy
(``speakersleuth_dataset.write_blind``) a test instance has no gold or provenance column, so it
shows its dialogue, clips and public facts, and no scenario, label, converted turn or answer.
"""

from __future__ import annotations

import html
import io
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import pyarrow.parquet as pq
import soundfile as sf

import speakersleuth.speakersleuth_dataset as ssd

TURN_SLOTS = max(s.target_turns for s in ssd.VARIANT_SPECS.values())
CANDIDATE_SLOTS = len(ssd.CANDIDATE_LABELS)
ANY = "(any)"


@dataclass(frozen=True)
class InstanceRef:
    id: str
    source_dataset: str
    scenario: str | None


class InstanceIndex:
    """The instances of a dataset folder, per config, without their audio."""

    def __init__(self, root: str | Path, split: str = "test") -> None:
        self.root = Path(root)
        self.split = split
        self._refs: dict[str, list[InstanceRef]] = {}
        self._lock = threading.Lock()

    def configs(self) -> list[str]:
        """The configs that have shards for the split, in the schema's order."""
        return [name for name in ssd.CONFIGS if ssd.shard_paths(self.root, name, self.split)]

    def refs(self, config: str) -> list[InstanceRef]:
        with self._lock:
            if config not in self._refs:
                present = set(pq.read_schema(ssd.shard_paths(self.root, config, self.split)[0]).names)
                columns = [c for c in ("id", "source_dataset", "scenario") if c in present]  # no scenario when blind
                rows = ssd.read_rows(self.root, config, self.split, columns=columns).to_pylist()
                self._refs[config] = [InstanceRef(r["id"], r["source_dataset"], r.get("scenario")) for r in rows]
            return self._refs[config]

    def sources(self, config: str) -> list[str]:
        return sorted({r.source_dataset for r in self.refs(config)})

    def ids(self, config: str, source: str | None = None, scenario: str | None = None) -> list[str]:
        return [
            r.id
            for r in self.refs(config)
            if (source in (None, ANY) or r.source_dataset == source)
            and (scenario in (None, ANY) or r.scenario == scenario)
        ]

    def locate(self, instance_id: str, prefer: str | None = None) -> str | None:
        """The config holding ``instance_id`` (``prefer`` first), or ``None``."""
        order = ([prefer] if prefer in self.configs() else []) + self.configs()
        return next((c for c in order if any(r.id == instance_id for r in self.refs(c))), None)

    def load(self, config: str, instance_id: str) -> dict[str, Any]:
        """One instance with its audio (still encoded); ``KeyError`` when the id is not there
        (checked against the index first: an id is untrusted text, e.g. a lone surrogate)."""
        if not any(r.id == instance_id for r in self.refs(config)):
            raise KeyError(instance_id)
        rows = ssd.read_rows(self.root, config, self.split, ids=[instance_id]).to_pylist()
        if not rows:
            raise KeyError(instance_id)
        return rows[0]


def wav_bytes(audio: dict[str, Any] | None) -> bytes | None:
    """A stored clip as 16-bit WAV bytes (lossless from the stored FLAC; plays in every browser)."""
    if not audio or not audio.get("bytes"):
        return None
    data, sr = sf.read(io.BytesIO(audio["bytes"]), dtype="int16")
    out = io.BytesIO()
    sf.write(out, data, sr, format="WAV", subtype="PCM_16")
    return out.getvalue()


# ----------------------------------------------------------------------------------- rendering

_e = html.escape


def _fmt_similarity(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def dialogue_html(row: dict[str, Any], task: str) -> str:
    """The dialogue text with the target's turns marked (and the masked or converted turn)."""
    positions = list(row["target_turn_positions"] or [])
    special = row.get("converted_turn") if task != "discrimination" else row.get("masked_position")
    special_label = "converted" if task != "discrimination" else "masked (candidates below)"
    lines = []
    for i, turn in enumerate(row["turns"] or []):
        marks, classes = [], ["ss-turn"]
        if turn["is_target"]:
            k = positions.index(i) + 1
            classes.append("ss-target")
            marks.append(f"target turn {k}")
            if special == k:
                classes.append("ss-special")
                marks.append(special_label)
        badge = f'<span class="ss-badge">{_e(", ".join(marks))}</span>' if marks else ""
        lines.append(
            f'<li class="{" ".join(classes)}"><b>{_e(str(turn["speaker"]))}</b>: {_e(str(turn["text"]))} {badge}</li>'
        )
    return f'<ol class="ss-dialogue" start="1">{"".join(lines)}</ol>'


def facts_html(row: dict[str, Any], task: str) -> str:
    """Gold labels and provenance as a small definition table (a blind row has neither)."""
    facts: list[tuple[str, Any]] = [
        ("id", row["id"]),
        ("dialogue", row.get("dialogue_id")),
        ("source dataset", row["source_dataset"]),
        ("variant", row["variant"]),
        ("target speaker", f"{row['target_speaker']} ({row['target_gender']})"),
    ]
    if task == "discrimination":
        facts.append(("masked target turn", row["masked_position"]))
    if "answer" in row or "label" in row:
        facts += _gold_facts(row, task)
    body = "".join(f"<tr><th>{_e(str(k))}</th><td>{_e(str(v))}</td></tr>" for k, v in facts if v is not None)
    return f'<table class="ss-facts">{body}</table>'


def _gold_facts(row: dict[str, Any], task: str) -> list[tuple[str, Any]]:
    """The gold labels and provenance of a labelled row."""
    facts: list[tuple[str, Any]] = []
    if task == "discrimination":
        scen = dict(zip(row["candidate_labels"], row["candidate_scenarios"]))
        facts += [
            ("gold answer (original)", row["answer"]),
            ("gold ranking", " > ".join(row["gold_ranking"])),
            ("candidate scenarios", ", ".join(f"{k}={v}" for k, v in scen.items())),
            ("VC model", row["vc_model"]),
        ]
        for label, speaker, sim in zip(
            row["candidate_labels"], row["candidate_substitute_speakers"], row["candidate_similarities"]
        ):
            facts.append(
                (
                    f"candidate {label} speaker",
                    f"{speaker or row['target_speaker']} (similarity {_fmt_similarity(sim)})",
                )
            )
    else:
        facts += [
            ("scenario", row["scenario"]),
            ("gold label (detection)", row["label"]),
            ("gold inconsistent turns (localization)", ", ".join(map(str, row["inconsistent_turns"] or [])) or "none"),
        ]
        if row["scenario"] != "S1":
            facts += [
                ("converted target turn", row["converted_turn"]),
                ("VC model", row["vc_model"]),
                ("substitute speaker", f"{row['substitute_speaker']} ({row['substitute_gender']})"),
                ("substitute similarity to target", _fmt_similarity(row["substitute_similarity"])),
            ]
    return facts


def instance_view(
    row: dict[str, Any], config: str
) -> tuple[str, str, list[tuple[str, bytes | None]], list[tuple[str, bytes | None]], bytes | None]:
    """Everything the tab shows for one instance: dialogue HTML, facts HTML, the turn players
    ``[(label, wav)]``, the candidate players ``[(label, wav)]`` and the reference clip."""
    task = ssd.get_config(config).task
    if task == "discrimination":
        masked = row["masked_position"]
        context_positions = [k for k in range(1, len(row["target_turn_positions"]) + 1) if k != masked]
        turns = [(f"Context: target turn {k}", wav_bytes(a)) for k, a in zip(context_positions, row["context_audio"])]
        scenarios = row.get("candidate_scenarios") or [None] * len(row["candidate_labels"])
        candidates = [
            (f"Candidate {label} for masked turn {masked}" + (f" ({s})" if s else ""), wav_bytes(a))
            for label, s, a in zip(row["candidate_labels"], scenarios, row["candidates"])
        ]
    else:
        bad = set(row.get("inconsistent_turns") or [])
        turns = [
            (f"Target turn {k}" + (" (converted)" if k in bad else ""), wav_bytes(a))
            for k, a in enumerate(row["target_audio"], start=1)
        ]
        candidates = []
    return dialogue_html(row, task), facts_html(row, task), turns, candidates, wav_bytes(row["reference_audio"])


# -------------------------------------------------------------------------------------------- UI

VIEWER_CSS = """
.ss-dialogue { line-height: 1.6; }
.ss-turn { color: var(--body-text-color-subdued); }
.ss-target { color: var(--body-text-color); font-weight: 500; }
.ss-special { background: var(--color-accent-soft); }
.ss-badge { font-size: 0.8em; border: 1px solid var(--border-color-primary); border-radius: 4px; padding: 0 4px; margin-left: 4px; }
.ss-facts th { text-align: left; padding-right: 1em; font-weight: 600; }
"""


def empty_view(message: str) -> list:
    """The viewer's outputs with ``message`` and nothing shown."""
    hidden = gr.update(value=None, visible=False)
    return [message, "", "", hidden] + [hidden] * (TURN_SLOTS + CANDIDATE_SLOTS)


def players(items: list[tuple[str, bytes | None]], slots: int) -> list:
    """``slots`` audio updates: one labelled player per item, the rest hidden."""
    return [
        gr.update(value=items[i][1], label=items[i][0], visible=True)
        if i < len(items)
        else gr.update(value=None, visible=False)
        for i in range(slots)
    ]


class ViewerEvents:
    """The Viewer tab's event handlers over one index (bound methods, so each event's API name is
    the method's name)."""

    def __init__(self, index: InstanceIndex) -> None:
        self.index = index

    def show(self, config: str | None, instance_id: str | None) -> list:
        if not config or not instance_id:
            return empty_view("<p>Pick an instance.</p>")
        try:
            row = self.index.load(config, instance_id)
        except KeyError:
            return empty_view(f"<p>No instance {_e(repr(instance_id))} in config {_e(config)}.</p>")
        dialogue_value, facts_value, turns, candidates, ref = instance_view(row, config)
        return [
            f"<p>{_e(config)} / {_e(instance_id)}</p>",
            dialogue_value,
            facts_value,
            gr.update(value=ref, visible=ref is not None),
            *players(turns, TURN_SLOTS),
            *players(candidates, CANDIDATE_SLOTS),
        ]

    def refilter(self, config, source, scenario):
        ids = self.index.ids(config, source, scenario) if config else []
        return gr.update(choices=ids, value=ids[0] if ids else None)

    def on_config(self, config):
        sources = [ANY] + (self.index.sources(config) if config else [])
        ids = self.index.ids(config) if config else []
        return (
            gr.update(choices=sources, value=ANY),
            gr.update(value=ANY),
            gr.update(choices=ids, value=ids[0] if ids else None),
        )

    def on_paste(self, text, config):
        instance_id = (text or "").strip()
        found = self.index.locate(instance_id, prefer=config) if instance_id else None
        if found is None:
            return [
                gr.update(),
                gr.update(),
                *empty_view(f"<p>Unknown instance id {_e(repr(instance_id[:200]))}.</p>"),
            ]
        ids = self.index.ids(found)
        return [gr.update(value=found), gr.update(choices=ids, value=instance_id), *self.show(found, instance_id)]


def instance_panel(message_id: str | None = None) -> list:
    """The components an instance is shown in, in ``instance_view``'s output order: a message,
    the dialogue, its facts, the reference clip, the target turns' and the candidates' players."""
    message = gr.HTML(elem_id=message_id)
    with gr.Row():
        with gr.Column(scale=3):
            dialogue = gr.HTML(label="Dialogue")
        with gr.Column(scale=2):
            facts = gr.HTML(label="Gold labels and provenance")
    reference = gr.Audio(
        label="Reference clip of the target speaker", interactive=False, visible=False, buttons=["download"]
    )
    with gr.Row():
        turn_players = [
            gr.Audio(interactive=False, visible=False, min_width=220, buttons=["download"]) for _ in range(TURN_SLOTS)
        ]
    with gr.Row():
        candidate_players = [
            gr.Audio(interactive=False, visible=False, min_width=220, buttons=["download"])
            for _ in range(CANDIDATE_SLOTS)
        ]
    return [message, dialogue, facts, reference, *turn_players, *candidate_players]


def build_viewer_tab(index: InstanceIndex):
    """The Viewer tab's components and events (call inside ``gr.Blocks`` / ``gr.Tab``); returns
    ``show(config, id)`` with its inputs and outputs, so the app can show an instance on load."""
    configs = index.configs()
    first = configs[0] if configs else None
    with gr.Row():
        config_dd = gr.Dropdown(configs, value=first, label="Config")
        source_dd = gr.Dropdown([ANY] + (index.sources(first) if first else []), value=ANY, label="Source dataset")
        scenario_dd = gr.Dropdown(
            [ANY, *ssd.SCENARIOS],
            value=ANY,
            label="Scenario (detection/localization)",
            visible=not ssd.is_blind(index.root, index.split),
        )  # a blind copy has no scenario to filter by
        first_ids = index.ids(first) if first else []
        id_dd = gr.Dropdown(
            first_ids, value=first_ids[0] if first_ids else None, label="Instance", allow_custom_value=True
        )  # any config's id (the API); show() checks it
    with gr.Row():
        pasted = gr.Textbox(label="Or paste an instance id", max_lines=1, max_length=200, scale=4)
        go = gr.Button("Show", scale=1)
    outputs = instance_panel()

    events = ViewerEvents(index)
    config_dd.input(events.on_config, config_dd, [source_dd, scenario_dd, id_dd]).then(
        events.show, [config_dd, id_dd], outputs
    )
    for dd in (source_dd, scenario_dd):
        dd.input(events.refilter, [config_dd, source_dd, scenario_dd], id_dd).then(
            events.show, [config_dd, id_dd], outputs
        )
    id_dd.input(events.show, [config_dd, id_dd], outputs, api_name="view_instance")
    for trigger in (go.click, pasted.submit):
        trigger(events.on_paste, [pasted, config_dd], [config_dd, id_dd, *outputs], api_name=False)
    return events.show, (config_dd, id_dd), outputs
