"""SpeakerSleuth metrics and scoring.

- ``metrics/<name>/<name>.py``: ``evaluate`` metric modules (``balanced_accuracy``, ``balanced_f1``,
  ``ndcg``, ``exact_match``); each folder stands alone (a Hub metric repo), so
  ``evaluate.load("<path>/metrics/<name>")`` works from any directory and from a copy of the folder.
- ``metrics.core``: the metric math (numpy only), used by the scorer; each metric folder holds a byte
  copy of it as ``core.py`` (the tests check the copies).
- ``metrics.submission``: reading and validating a predictions JSONL (``load_gold``,
  ``parse_submission``, ``SubmissionError``).
- ``metrics.score``: the scores of a submission with bootstrap confidence intervals, as data
  (``score_submission``, and ``leaderboard_row``: the flat Table-2 row).
- ``metrics.report``: the scorer's text report and command line
  ``python -m metrics.score predictions.jsonl --dataset <folder> --variant main``.

Importing this package imports nothing heavy; ``evaluate`` is needed only by the metric modules.
"""
