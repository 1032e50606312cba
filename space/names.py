"""Model and organisation names compared as a reader sees them, and who may use which.

Two names are *confusable* when they read alike: after Unicode NFKC, case folding and the
confusable (homoglyph) mapping of Unicode TR39, computed as ICU's skeleton (which also drops
invisible default-ignorable characters such as U+3164 HANGUL FILLER), with any run of spaces,
punctuation and symbols that draw as blank (U+2800 BRAILLE PATTERN BLANK) counted as one separator. So "pairwise-resemblyzer", "Pairwise_Resemblyzer", "ｐａｉｒｗｉｓｅ resemblyzer" and
"раirwise‐resemblyzer" (Cyrillic р and а, a Unicode hyphen) are one name; "pairwise-ecapa",
"model v1.5" and "model v15" are not.

Who may use a (model name, organisation), ``name_conflicts``:

- the built-in baselines (stored by ``space.seed`` under ``BASELINE_SUBMITTER``, the verified
  rows) own their model names, whatever the organisation, and any organisation that reads as
  beginning with "SpeakerSleuth"; their own seeding is never refused;
- no name may carry a check mark (✓ ✔ ☑ ✅ 🗸 🗹 √), the look of the verified mark;
- any other pair belongs to the identity that stored it first: that identity may use it again
  (another file, another variant), no other may.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from functools import lru_cache

import icu

from speakersleuth.space.store import BASELINE_SUBMITTER, Metadata, StoredResult

#: The organisation of the built-in baselines (``space.seed``); reserved for them.
BASELINE_ORGANISATION = "SpeakerSleuth baselines"

_SPOOF_CHECKER = icu.SpoofChecker()  # its skeleton is safe to compute from many threads at once
#: Characters that draw as blank space: White_Space and symbols that look like it (Braille blank,
#: a null notehead); invisible default-ignorable ones (ZWSP, U+3164) the skeleton drops.
_BLANK = icu.UnicodeSet(r"[[:White_Space:]\u2800\U0001D159]")
CHECK_MARKS = frozenset("\u2713\u2714\u2611\u2705\U0001f5f8\U0001f5f9\u221a")


def _skeleton(text: str) -> str:
    return _SPOOF_CHECKER.getSkeleton(0, text)


def _separators_as_one(text: str) -> str:
    """Every run of blanks, spaces and punctuation as one space, none at the ends; a name of
    punctuation only is kept as it is, one of blanks only becomes empty."""
    spaced = "".join(" " if _BLANK.contains(ch) else ch for ch in text)
    words = "".join(" " if unicodedata.category(ch)[0] in "PZ" else ch for ch in spaced).split()
    return " ".join(words) or spaced.strip()


@lru_cache(maxsize=8192)
def fold(text: str) -> frozenset[str]:
    """The forms ``text`` is compared by; two names are confusable when they share one. Two forms
    because a capital can read as another letter than its lower case ("I" as "l", "Institute" as
    "lnstitute") while case alone must not tell names apart ("Institute", "institute").

    >>> sorted(fold("SpeakerSIeuth  Baselines"))
    ['speakersieuth baselines', 'speakersleuth baselines']
    >>> fold("Pairwise_Resemblyzer") == fold("\u0440\u0430irwise\u2010resemblyzer")
    True
    """
    compatible = _separators_as_one(unicodedata.normalize("NFKC", text))  # first too: TR39 maps "—" to a letter, "ー"
    forms = (_skeleton(compatible.casefold()), _skeleton(_skeleton(compatible).casefold()))
    return frozenset(_separators_as_one(form) for form in forms)


def confusable(a: str, b: str) -> bool:
    """Whether names ``a`` and ``b`` read alike (see the module docstring).

    >>> confusable("pairwise-resemblyzer", "PAIRWISE resemblyzer"), confusable("judge A", "judge B")
    (True, False)
    """
    return not fold(a).isdisjoint(fold(b))


def name_conflicts(metadata: Metadata, user: str, entries: Iterable[StoredResult]) -> list[str]:
    """Why ``user`` may not submit under ``metadata``'s model name and organisation, one message per
    field at fault, naming the stored entry it reads like; empty when it may. ``entries`` are the
    stored submissions of every variant."""
    if user == BASELINE_SUBMITTER:
        return []
    name, organisation = metadata.model_name, metadata.organisation
    fields = (("model name", name), ("organisation", organisation))
    unusable = [f"{field} shows no visible character" for field, text in fields if text and fold(text) == {""}]
    unusable += [
        f"{field} contains a check mark ({' '.join(sorted(CHECK_MARKS & set(text)))}), which looks like the "
        "leaderboard's mark of a verified baseline"
        for field, text in fields
        if CHECK_MARKS & set(text)
    ]
    if unusable:
        return unusable
    entries = list(entries)
    errors = []
    baseline = next(
        (e.metadata.model_name for e in entries if e.verified and confusable(name, e.metadata.model_name)), None
    )
    if baseline is not None:
        errors.append(
            f"model name \u201c{name}\u201d reads as the built-in baseline \u201c{baseline}\u201d; "
            "the baselines' names are reserved"
        )
    if organisation and any(
        form.replace(" ", "").startswith(_RESERVED_ORGANISATION_START) for form in fold(organisation)
    ):
        errors.append(
            f"organisation \u201c{organisation}\u201d reads as beginning with \u201cSpeakerSleuth\u201d, "
            f"which is reserved for the built-in baselines (\u201c{BASELINE_ORGANISATION}\u201d)"
        )
    owner = min(
        (
            e
            for e in entries
            if not e.verified
            and confusable(name, e.metadata.model_name)
            and confusable(organisation, e.metadata.organisation)
        ),
        key=lambda e: e.created_at,
        default=None,
    )
    if owner is not None and owner.submitter != user:
        errors.append(
            f"model name and organisation \u201c{name}\u201d ({_shown(organisation)}) read as "
            f"\u201c{owner.metadata.model_name}\u201d ({_shown(owner.metadata.organisation)}), which another submitter "
            "used first; choose another model name or organisation"
        )
    return errors


_RESERVED_ORGANISATION_START = next(iter(fold("SpeakerSleuth")))


def _shown(organisation: str) -> str:
    return f"\u201c{organisation}\u201d" if organisation else "no organisation"
