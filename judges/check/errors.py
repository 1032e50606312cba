"""The one exception of ``judges.check``: an input it cannot judge, said in one line.

Every message names the file (a manifest, an RTTM, an audio file) and what is wrong with it, so the
command line prints it as it is, without a traceback.

>>> raise CheckInputError("dialogue/manifest.csv: no column 'speaker' (columns: turn, path)")
Traceback (most recent call last):
...
speakersleuth.judges.check.errors.CheckInputError: dialogue/manifest.csv: no column 'speaker' (columns: turn, path)
"""

from __future__ import annotations


class CheckInputError(ValueError):
    """A dialogue the check refuses: a missing or unreadable file, a turn too short, a speaker
    with a single turn and no reference clip, an RTTM that does not fit its recording, a manifest
    without a needed column. A ``ValueError``, so callers that catch those catch it too."""
