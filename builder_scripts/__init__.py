"""The offline dataset builder (``python -m speakersleuth.builder_scripts``; the stages are in ``pipeline``)."""

from speakersleuth.speech.extras import launch


def main() -> int:
    """The console script ``speakersleuth-build``: the builder's command line, or on an install
    without the ``builder`` extra one line saying to install it."""
    return launch("speakersleuth.builder_scripts.__main__:main", "builder", "speakersleuth-build")
