"""pytest settings for the metrics package."""

#: scenarios.py and rankings.py stand in two metric folders each (the same file in both;
#: tests/metrics/test_metrics.py checks): their doctests run once, in the first folder.
collect_ignore_glob = ["balanced_f1/scenarios.py", "exact_match/rankings.py"]
