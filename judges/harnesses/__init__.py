"""SpeakerSleuth in the harnesses where audio-language models are already evaluated.

- ``inspect_tasks``: the Inspect tasks ``speakersleuth/detection``, ``/localization``, ``/discrimination``
  (registered through Inspect's ``inspect_ai`` entry point; the ``inspect`` extra).
- ``lmms_tasks/``: an lmms-eval task folder (``--include_path``; the ``lmms-eval`` extra).
- ``convert``: an Inspect log or an lmms-eval samples file -> our predictions JSONL, checked by the scorer.
- ``samples``: what both share with ``judges run``: the rows, the jobs (prompts), the prediction
  line (parsing) and its per-instance scores (the scorer's math).
"""
