"""Text the Space sends or draws, whatever a submitter typed or uploaded."""

from __future__ import annotations


def encodable(text: str) -> str:
    """``text`` with what UTF-8 cannot carry (unpaired surrogates, e.g. from a JSON escape such as
    ``"\\ud800"``) written as its escape, so that a message or a name quoting it can always be sent.

    >>> encodable("model-\\ud800-x")
    'model-\\\\ud800-x'
    >>> encodable("ok ✓")
    'ok ✓'
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
