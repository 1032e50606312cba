"""The SpeakerSleuth leaderboard Space (Gradio): leaderboard, submission, viewer, results store.

Nothing outside this package imports it; it depends on ``metrics`` and ``speakersleuth_dataset``.
"""

from speech.extras import launch


def main() -> int:
    """The console script ``speakersleuth-space`` (``python -m space.app``); without the ``space``
    extra, one line saying to install it."""
    return launch("space.app:main", "space", "speakersleuth-space")


def seed_main() -> int:
    """The console script ``speakersleuth-space-seed`` (``python -m space.seed``); without the
    ``space`` extra, one line saying to install it."""
    return launch("space.seed:main", "space", "speakersleuth-space-seed")
