"""Publishing a release on the Hugging Face Hub: the dataset (and a blind copy's private gold), the
four metric Spaces and the leaderboard Space, each as the repository tree the Hub runs.

``python -m publishing --org <org> --dataset <folder> [--gold <gold_dir>] --metrics --space
[--trees-out <dir>]``; the trees are made by ``publishing.trees``, the release planned, written and
pushed by ``publishing.release``.
"""
