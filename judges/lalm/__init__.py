"""LALM judges: prompts (``prompts``), answer parsing (``parsing``), backends (``backends``: OpenAI
and OpenAI-compatible servers such as vLLM, Gemini, local transformers models) and the resumable
harness that writes predictions in the submission format (``harness``).

    from speakersleuth.judges.lalm import make_lalm_judge
    judge = make_lalm_judge("vllm:http://127.0.0.1:8000/v1:Qwen/Qwen2.5-Omni-7B", setting="main")
    summary = judge.run("speakersleuth", "main", "detection,localization,discrimination", "preds.jsonl")

Names resolve on first use, so importing a backend module does not load the dataset stack.
"""

import importlib

_EXPORTS = {
    "LALMJudge": "speakersleuth.judges.lalm.harness",
    "make_lalm_judge": "speakersleuth.judges.lalm.harness",
    "SETTINGS": "speakersleuth.judges.lalm.prompts",
    "make_backend": "speakersleuth.judges.lalm.backends",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'speakersleuth.judges.lalm' has no attribute {name!r}")
