"""SpeakerSleuth metrics and scoring.

- ``metrics/<name>/<name>.py``: ``evaluate`` metric modules (``balanced_accuracy``, ``balanced_f1``,
  ``ndcg``, ``exact_match``); each folder stands alone (a Hub metric repo), so
  ``evaluate.load("<path>/metrics/<name>")`` works from any directory and from a copy of the folder.
- ``metrics.core``: the metric math (numpy only) for the scorer: it imports each metric's math from
  the pure modules of its folder (where it exists once) and adds the bootstrap.
- ``metrics.submission``: reading and validating a predictions JSONL (``load_gold``,
  ``parse_submission``, ``SubmissionError``).
- ``metrics.score``: the scores of a submission with bootstrap confidence intervals, as data
  (``score_submission``, and ``leaderboard_row``: the flat Table-2 row).
- ``metrics.report``: the scorer's text report and command line
  ``python -m speakersleuth.metrics.score --predictions predictions.jsonl --dataset <folder or Hub id>`` (``metrics.score``
  hands its ``__main__`` over to ``metrics.report`` and imports nothing of it: no import cycle).

Importing this package imports nothing heavy; ``evaluate`` is needed only by the metric modules.
"""
