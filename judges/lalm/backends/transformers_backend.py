"""Local LALMs through transformers (5.x), text output only, greedy decoding, batch size 1.

Supported checkpoints (``model_type`` in the folder's ``config.json``):

- ``qwen2_5_omni`` (Qwen2.5-Omni-3B/7B): loaded as ``Qwen2_5OmniForConditionalGeneration`` with
  ``enable_audio_output=False`` (the talker and token2wav are never built), and text is generated
  by its thinker (``model.thinker.generate``): in transformers 5.x the full model's ``generate``
  needs the talker even for text.
- ``qwen2_5_omni_thinker``: a thinker-only checkpoint, ``Qwen2_5OmniThinkerForConditionalGeneration``.
- ``qwen2_audio`` (Qwen2-Audio-7B-Instruct): ``Qwen2AudioForConditionalGeneration``.

All go through the same path: chat messages whose user content interleaves ``{"type": "text"}``
and ``{"type": "audio"}`` parts -> ``processor.apply_chat_template(tokenize=False)`` (the
checkpoint's own template) -> ``processor(text=[...], audio=[clips], sampling_rate=16000)``, which
expands each audio placeholder to the clip's number of audio tokens -> ``generate(do_sample=False)``
-> the new tokens decoded. For a yes/no question (``Prompt.answers``) the backend also reports
``meta["p_inconsistent"]``: one more forward pass over the prompt and the two answers' common start
(e.g. ``{"answer": "``) gives the next-token logits, and the probability of the "inconsistent"
answer's next token is taken against the other's (the P("Yes") of a yes/no prompt), whatever text
greedy decoding produced. Models load from a local folder only (``local_files_only=True``).
The processor pads or cuts every clip to the feature extractor's window (30 s for Whisper
features), so a longer clip is refused rather than silently cut.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from speakersleuth.judges.lalm.backends.base import Audio, Backend, FatalBackendError, Prompt

#: model_type -> (model class name, whether text comes from ``model.thinker``, extra load kwargs)
FAMILIES: dict[str, tuple[str, bool, dict[str, Any]]] = {
    "qwen2_5_omni": ("Qwen2_5OmniForConditionalGeneration", True, {"enable_audio_output": False}),
    "qwen2_5_omni_thinker": ("Qwen2_5OmniThinkerForConditionalGeneration", False, {}),
    "qwen2_audio": ("Qwen2AudioForConditionalGeneration", False, {}),
}


class TransformersBackend(Backend):
    kind = "transformers"

    def __init__(
        self,
        model_path: str,
        *,
        device: str | None = None,
        dtype: str = "auto",
        max_new_tokens: int = 128,
        attn_implementation: str | None = None,
    ) -> None:
        import torch
        import transformers
        from transformers import AutoConfig, AutoProcessor

        super().__init__(str(model_path))
        path = Path(model_path)
        if not (path / "config.json").is_file():
            raise FatalBackendError(
                f"{self.spec}: not a local model folder (no config.json); download the checkpoint first"
            )
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        if config.model_type not in FAMILIES:
            raise FatalBackendError(
                f"{self.spec}: model_type {config.model_type!r} is not supported; supported: {', '.join(FAMILIES)}"
            )
        class_name, use_thinker, load_kwargs = FAMILIES[config.model_type]
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if dtype == "auto":
            dtype = "bfloat16" if self.device.startswith("cuda") else "float32"
        self.dtype = getattr(torch, dtype)
        self.max_new_tokens = max_new_tokens
        self.model_type = config.model_type
        self.processor = AutoProcessor.from_pretrained(path, local_files_only=True)
        extra = {"attn_implementation": attn_implementation} if attn_implementation else {}
        model = getattr(transformers, class_name).from_pretrained(
            path, local_files_only=True, dtype=self.dtype, **load_kwargs, **extra
        )
        self.lm = model.to(self.device).eval()
        self.generator = self.lm.thinker if use_thinker else self.lm
        extractor = self.processor.feature_extractor
        self.max_samples = getattr(extractor, "n_samples", None)
        self.sampling_rate = extractor.sampling_rate

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.kind,
            "model": self.model,
            "model_type": self.model_type,
            "device": self.device,
            "dtype": str(self.dtype).removeprefix("torch."),
            "decoding": "greedy",
            "max_new_tokens": self.max_new_tokens,
        }

    def messages(self, prompt: Prompt) -> list[dict[str, Any]]:
        content = [
            {"type": "audio", "audio": part.name} if isinstance(part, Audio) else {"type": "text", "text": part.text}
            for part in prompt.parts
        ]
        return [{"role": "system", "content": prompt.system}, {"role": "user", "content": content}]

    def inputs(self, prompt: Prompt):
        """The processor's tensors for one prompt (on the model's device and dtype)."""
        clips = prompt.clips
        if self.sampling_rate != 16_000:
            raise FatalBackendError(
                f"{self.spec}: the processor expects {self.sampling_rate} Hz audio; clips are 16 kHz"
            )
        for clip in clips:
            if self.max_samples and len(clip.samples) > self.max_samples:
                raise ValueError(
                    f"{self.spec}: clip {clip.name!r} lasts {clip.seconds:.1f} s, longer than the "
                    f"processor's {self.max_samples / 16_000:.0f} s window"
                )
        text = self.processor.apply_chat_template(self.messages(prompt), tokenize=False, add_generation_prompt=True)
        batch = self.processor(
            text=[text], audio=[c.samples for c in clips], sampling_rate=16_000, return_tensors="pt", padding=True
        )
        return batch.to(self.device, dtype=self.dtype)

    def _send(self, prompt: Prompt) -> tuple[str, dict[str, Any]]:
        import torch

        batch = self.inputs(prompt)
        start = time.perf_counter()
        with torch.inference_mode():
            output = self.generator.generate(**batch, do_sample=False, max_new_tokens=self.max_new_tokens)
        new = output[:, batch["input_ids"].shape[1] :]
        text = self.processor.batch_decode(new, skip_special_tokens=True)[0]
        meta = {
            "input_tokens": int(batch["input_ids"].shape[1]),
            "new_tokens": int(new.shape[1]),
            "generate_s": round(time.perf_counter() - start, 3),
        }
        if prompt.answers:
            meta["p_inconsistent"] = self.first_answer_probability(batch, prompt.answers)
        return text, meta

    def first_answer_probability(self, batch, answers: tuple[str, str]) -> float:
        """P(``answers[0]``) against ``answers[1]`` after the prompt in ``batch``: the softmax over
        the logits of their first differing tokens, after the tokens they share."""
        import torch

        first, second = (self.processor.tokenizer(a, add_special_tokens=False)["input_ids"] for a in answers)
        shared = next((i for i, (a, b) in enumerate(zip(first, second)) if a != b), None)
        if shared is None:
            raise ValueError(f"{self.spec}: answers {answers} do not differ in a token where both go on")
        prefix = torch.tensor([first[:shared]], dtype=batch["input_ids"].dtype, device=batch["input_ids"].device)
        inputs = {
            **batch,
            "input_ids": torch.cat([batch["input_ids"], prefix], dim=1),
            "attention_mask": torch.cat([batch["attention_mask"], torch.ones_like(prefix)], dim=1),
        }
        with torch.inference_mode():
            logits = self.generator(**inputs).logits[0, -1].float()
        return float(torch.softmax(logits[[first[shared], second[shared]]], dim=0)[0])

    def close(self) -> None:
        del self.generator, self.lm
