"""The SpeakerSleuth leaderboard Space (Gradio): leaderboard, submission, viewer, results store.

Nothing outside this package imports it; it depends on ``metrics`` and ``speakersleuth_dataset``.
"""

from speakersleuth.speech.extras import launch


def main() -> int:
    """The console script ``speakersleuth-space`` (``python -m speakersleuth.space.app``); without the ``space``
    extra, one line saying to install it."""
    return launch("speakersleuth.space.app:main", "space", "speakersleuth-space")


def seed_main() -> int:
    """The console script ``speakersleuth-space-seed`` (``python -m speakersleuth.space.seed``); without the
    ``space`` extra, one line saying to install it."""
    return launch("speakersleuth.space.seed:main", "space", "speakersleuth-space-seed")
