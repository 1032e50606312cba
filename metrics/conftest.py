"""pytest settings for the metrics package."""

#: The folders' core.py are byte copies of metrics/core.py (tests/test_metrics.py checks it):
#: their doctests run once, on the original.
collect_ignore_glob = ["*/core.py"]
