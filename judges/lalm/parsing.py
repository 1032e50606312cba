"""Turning free-form LALM answers into predictions, or into a recorded failure. No guessing.

For every query kind (``detection``, ``localization``, ``choice``, ``ranking``, ``same_speaker``):

1. ``strip_reasoning``: keep only what follows the last ``</think>`` (``<thinking>``,
   ``<reasoning>`` too; an unclosed tag means the answer never came), and drop sections headed
   ``Reasoning:``, ``Explanation:``, ``Analysis:``... unless nothing else is left.
2. JSON: every object or array in the text, fenced or not, read leniently (single quotes, Python
   literals, trailing commas). The last one that carries a key for the kind decides; if its value
   is invalid the answer is unparseable (the prose is not consulted for a second opinion).
3. Answer line: the text after the last ``Answer:`` / ``Final answer:`` / ``the answer is`` /
   ``Verdict:`` / ``Ranking:``..., read with the prose rules, first mention wins.
4. Prose: the whole text, last mention wins. Sentences that hedge or refuse ("I cannot tell
   whether ..."), questions, and option lists ("consistent or inconsistent", "A, B or C") are
   masked first; for turns and candidates, a clause that calls them consistent / not the speaker
   does not count as naming them.

Validation: turn numbers must lie in 1..N (duplicates collapse); a ranking must be a permutation of
the candidate labels. Refusals, garbage and invalid values give ``Parsed(None, reason)``; the
harness records the raw text, writes no prediction line (the scorer counts the instance wrong)
and reports the parse-failure rate.

>>> parse_answer("detection", 'Sure. ```json\\n{"answer": "inconsistent"}\\n```').value
'inconsistent'
>>> parse_answer("localization", "Reasoning: turn 2 is close.\\nAnswer: turns 3 and 5", num_turns=5).value
[3, 5]
>>> parse_answer("ranking", "B > C > A").value
['B', 'C', 'A']
>>> parse_answer("choice", "I'm sorry, I can't determine which candidate it is.").how
'refusal'
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

KINDS = ("detection", "localization", "choice", "ranking", "same_speaker")
LABELS = ("A", "B", "C")


@dataclass(frozen=True)
class Parsed:
    """``value`` is the prediction (``None`` when unparseable); ``how`` is ``json``, ``answer`` or
    ``prose`` on success and the reason otherwise."""

    value: Any
    how: str

    @property
    def ok(self) -> bool:
        return self.value is not None


class _Invalid(Exception):
    """A located answer whose value breaks validation (reason in the message)."""


# -------------------------------------------------------------------------------- preprocessing

_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_HEAD = r"[ \t]*[*#_>-]*[ \t]*(?:{words})[ \t]*[*_]*[ \t]*:"
_REASONING_WORDS = r"reasoning|explanation|analysis|rationale|thoughts?|thinking|justification|step[- ]by[- ]step"
_ANSWER_WORDS = (
    r"final[ \t]+answer|answer|verdict|conclusion|final[ \t]+ranking|ranking|choice|decision|prediction|result"
)
_SECTION_SPLIT = re.compile(r"(?im)^(?=" + _HEAD.format(words=f"{_REASONING_WORDS}|{_ANSWER_WORDS}") + ")")
_REASONING_HEAD = re.compile(_HEAD.format(words=_REASONING_WORDS), re.I)
_ANSWER_MARK = re.compile(r"(?i)\b(?:" + _ANSWER_WORDS + r")\b[*_]*\s*(?:would\s+be|is|:|=|-)\s*[*_]*\s*")


def strip_reasoning(text: str | None) -> str:
    """Drop think blocks and reasoning sections (see the module doc)."""
    text = text or ""
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    else:
        opened = _THINK_OPEN.search(text)
        if opened:
            text = text[: opened.start()]
    sections = _SECTION_SPLIT.split(text)
    kept = "".join(s for s in sections if not _REASONING_HEAD.match(s)).strip()
    return kept or text.strip()


def _answer_segment(text: str) -> str | None:
    marks = list(_ANSWER_MARK.finditer(text))
    if not marks:
        return None
    return text[marks[-1].end() :].strip() or None


# ------------------------------------------------------------------------------------------ JSON


def _matching(text: str, start: int) -> int | None:
    """Index of the bracket closing the one at ``start`` (double-quoted strings respected)."""
    stack, i, in_string = [], start, False
    pairs = {"{": "}", "[": "]"}
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in pairs:
            stack.append(pairs[ch])
        elif ch in "}]":
            if not stack or ch != stack.pop():
                return None
            if not stack:
                return i
        i += 1
    return None


_FAIL = object()


def _loads(snippet: str) -> Any:
    try:
        return json.loads(snippet)
    except ValueError:
        pass
    fixed = re.sub(r"\bTrue\b", "true", snippet)
    fixed = re.sub(r"\bFalse\b", "false", fixed)
    fixed = re.sub(r"\bNone\b", "null", fixed)
    fixed = re.sub(r",\s*([}\]])", r"\1", fixed)
    if "'" in fixed and '"' not in fixed:
        fixed = fixed.replace("'", '"')
    try:
        return json.loads(fixed)
    except ValueError:
        return _FAIL


def json_values(text: str) -> list[Any]:
    """Every top-level JSON object or array found in ``text``, in order."""
    values, i = [], 0
    while i < len(text):
        if text[i] in "{[":
            end = _matching(text, i)
            if end is not None:
                value = _loads(text[i : end + 1])
                if value is not _FAIL:
                    values.append(value)
                    i = end + 1
                    continue
        i += 1
    return values


def _norm_key(key: Any) -> str:
    return re.sub(r"[\s-]+", "_", str(key).strip().lower())


JSON_KEYS = {
    "detection": (
        "answer",
        "verdict",
        "label",
        "prediction",
        "result",
        "decision",
        "consistency",
        "detection",
        "consistent",
        "is_consistent",
        "all_same_speaker",
    ),
    "localization": (
        "inconsistent_turns",
        "turns",
        "inconsistent",
        "positions",
        "turn_numbers",
        "different_turns",
        "localization",
        "answer",
        "prediction",
    ),
    "choice": ("answer", "choice", "candidate", "prediction", "label", "selected", "original"),
    "ranking": ("ranking", "rank", "order", "ranked", "answer", "prediction"),
    "same_speaker": ("same_speaker", "same_person", "is_same_speaker", "same", "match", "answer", "verdict"),
}


def _json_field(kind: str, value: Any) -> tuple[bool, Any]:
    """(found, raw value) for the last relevant key of a JSON value."""
    if isinstance(value, dict):
        keys = {_norm_key(k): v for k, v in value.items()}
        for key in JSON_KEYS[kind]:
            if key in keys:
                return True, keys[key]
        return False, None
    if isinstance(value, list) and kind in ("localization", "ranking") and value:
        return True, value
    return False, None


# ---------------------------------------------------------------------------------------- prose

_REFUSAL = re.compile(
    r"(?i)\b(?:sorry|as an ai|language model|can(?:no|')t|can\s+not|unable|not\s+able|impossible|"
    r"do(?:es)?\s*(?:not|n't)\s+have\s+(?:the\s+)?(?:ability|access)|no\s+audio|not\s+possible)\b"
)
_HEDGE = re.compile(
    r"(?i)\b(?:can(?:no|')t|can\s+not|unable\s+to|not\s+able\s+to|(?:im)?possible\s+to|hard\s+to|difficult\s+to)\b"
    r"[^.!?\n]*\b(?:determine|tell|judge|say|decide|identify|assess|verify|know|distinguish|be\s+sure)\b|\bwhether\b"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_CLAUSE_SPLIT = re.compile(
    r";|\s[-–—]\s|,?\s*\b(?:while|whereas|but|however|although|except(?:\s+for)?|unlike)\b", re.I
)

_VERDICT = re.compile(
    r"(?i)\b(?:"
    r"(?P<conneg>no\s+inconsisten\w*|not\s+inconsistent|without\s+(?:any\s+)?inconsisten\w*|"
    r"no\s+(?:speaker\s+)?(?:change|switch|difference)s?)"
    r"|(?P<inc>inconsistent|not\s+consistent|(?:is|are)n't\s+consistent|"
    r"not\s+(?:all\s+)?(?:from\s+|by\s+|spoken\s+by\s+)?(?:the\s+)?same(?:\s+(?:speaker|person|voice))?|"
    r"(?:is|are|was|were)n't\s+(?:from\s+|by\s+)?(?:the\s+)?same|"
    r"not\s+similar|different|differs?|mismatch(?:es|ed)?|(?:does|do|did)\s*(?:not|n't)\s+(?:match|sound\s+like)|"
    r"someone\s+else|another\s+(?:speaker|person)|stands?\s+out|odd\s+one\s+out|"
    r"(?:speaker|voice)\s+(?:change|switch)(?:es|ed)?|changes?|switch(?:es|ed)?)"
    r"|(?P<con>consistent|same|similar|match(?:es|ed)?|identical))\b"
)
_OPTION_VERDICTS = re.compile(r"(?i)\b(?:in)?consistent\s*(?:,|/|\bor\b|\band\b)\s*(?:in)?consistent\b")
_YES_NO = re.compile(r"(?i)^\W*(yes|no)\b")


def _kept_sentences(text: str) -> list[str]:
    """Sentences minus questions and hedges, option lists masked."""
    text = _OPTION_VERDICTS.sub(" ", text)
    out = []
    for sentence in _SENTENCE_SPLIT.split(text):
        s = sentence.strip()
        if not s or s.endswith("?") or _HEDGE.search(s):
            continue
        out.append(s)
    return out


def _clauses(text: str) -> list[str]:
    return [c.strip() for s in _kept_sentences(text) for c in _CLAUSE_SPLIT.split(s) if c and c.strip()]


def _polarity(text: str) -> str | None:
    """``inc``, ``con`` or None: the last verdict word of ``text``."""
    last = None
    for m in _VERDICT.finditer(text):
        last = "con" if m.group("con") or m.group("conneg") else "inc"
    return last


def _pick(values: list, first: bool):
    return (values[0] if first else values[-1]) if values else None


def _prose_detection(text: str, first: bool) -> str | None:
    verdicts = [_polarity(c) for c in _clauses(text)]
    found = _pick([v for v in verdicts if v], first)
    if found:
        return "consistent" if found == "con" else "inconsistent"
    yes_no = _YES_NO.match(text)
    if yes_no:
        return "consistent" if yes_no.group(1).lower() == "yes" else "inconsistent"
    return None


def _prose_same_speaker(text: str, first: bool) -> bool | None:
    yes_no = _YES_NO.match(text)
    if yes_no:
        return yes_no.group(1).lower() == "yes"
    verdict = _prose_detection(text, first)
    return None if verdict is None else verdict == "consistent"


_RANGE = r"\d+(?:\s*(?:-|–|to|through)\s*\d+)?"
_TURNS = re.compile(
    r"(?i)\bturns?\s*(?:#|no\.?|number)?\s*("
    + _RANGE
    + r"(?:\s*(?:,|\band\b|&|/|\+|\bor\b)\s*(?:turns?\s*)?#?\s*"
    + _RANGE
    + r")*)"
)
_NUMBERS_ONLY = re.compile(r"^\W*\d+(?:\s*(?:,|\band\b|&|\s)\s*\d+)*\W*$")
_NONE = re.compile(
    r"(?i)\b(?:none|nothing|no\s+(?:such\s+)?(?:turns?|inconsistent\s+turns?|inconsistenc(?:y|ies)|changes?|differences?)|"
    r"(?:all|every)\s+(?:of\s+the\s+|the\s+)?(?:\w+\s+)?turns?\s+(?:are|is|sounds?|were)\s+(?:\w+\s+)?"
    r"(?:consistent|the\s+same|(?:spoken\s+)?(?:by|from)\s+the\s+same)|empty\s+list)\b|\[\s*\]"
)


def _numbers(span: str) -> list[int]:
    out: list[int] = []
    for m in re.finditer(r"(\d+)(?:\s*(?:-|–|to|through)\s*(\d+))?", span):
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        out += list(range(lo, hi + 1)) if hi >= lo and hi - lo < 50 else [lo, hi]
    return out


def _prose_turns(text: str, first: bool) -> list[int] | None:
    if _NUMBERS_ONLY.match(text):
        return _numbers(text)
    candidates: list[list[int]] = []
    for clause in _clauses(text):
        found = [n for m in _TURNS.finditer(clause) for n in _numbers(m.group(1))]
        if found:
            if _polarity(clause) != "con":
                candidates.append(found)
        elif _NONE.search(clause):
            candidates.append([])
    return _pick(candidates, first)


_LABEL_WORDS = r"(?i:candidate|option|clip|recording|audio|choice|answer|letter)"
_CHOICE_PATTERNS = (
    re.compile(r"\(\s*([A-C])\s*\)"),
    re.compile(r"\b" + _LABEL_WORDS + r"\s*(?:(?i:is)|:|=|-)?\s*\(?\s*([A-C])\b(?![a-z'])"),
    re.compile(r"(?<![\w'])([A-C])(?=\s+(?i:is|sounds|seems|matches|fits|has|was)\b)"),
)
_ONLY_LABEL = re.compile(r"^\W{0,4}(?:" + _LABEL_WORDS + r"\s*)?([A-C])\W{0,4}$")
#: An answer segment that starts with a label not followed by a lower-case word ("B, not A").
_LEADING_LABEL = re.compile(r"^\W{0,4}(?:" + _LABEL_WORDS + r"\s*)?\(?([A-C])\)?(?![\w'])(?!\s+[a-z])")
_OPTION_LABELS = re.compile(r"\b[A-C](?:\s*,\s*[A-C])*\s*,?\s*(?:or|and)\s+[A-C]\b")
_NEGATIVE = re.compile(r"(?i)\b(?:not|n't|least|unlikely|worst|different|differs?|no)\b|n't\b")


def _prose_choice(text: str, first: bool) -> str | None:
    only = (_LEADING_LABEL if first else _ONLY_LABEL).match(text)
    if only:
        return only.group(1)
    mentions = []
    for sentence in _kept_sentences(_OPTION_LABELS.sub(" ", text)):
        for clause in re.split(r",|;|\s[-–—]\s|\b(?:while|whereas|but|however|although)\b", sentence):
            if _NEGATIVE.search(clause):
                continue
            hits = sorted((m.start(), m.group(1)) for p in _CHOICE_PATTERNS for m in p.finditer(clause))
            mentions += [label for _, label in hits]
    return _pick(mentions, first)


_SEP = r"(?:(?:\s*(?:>{1,2}|≻|→|->|=>|,|;|\bthen\b|\bfollowed\s+by\b|\band\b)\s*){1,3}|\s+)"
_ITEM = r"(?i:candidate\s+|option\s+)?\(?([A-C])\)?"
_RANK_SEQ = re.compile(r"(?<![\w'])" + _ITEM + _SEP + _ITEM + _SEP + _ITEM + r"(?![\w'])")
_ORDINAL = r"(?:1st|first|1[.):]|#1|2nd|second|2[.):]|#2|3rd|third|3[.):]|#3)"
_RANK_ORDINALS = re.compile(
    r"(?is)(?:1st|first|1[.):]|#1)\W*"
    + _ITEM
    + r".*?(?:2nd|second|2[.):]|#2)\W*"
    + _ITEM
    + r".*?(?:3rd|third|3[.):]|#3)\W*"
    + _ITEM
    + r"(?![\w'])"
)
_LISTING = re.compile(
    r"(?i)\b(?:candidates?|options?|clips?|among|between|of)\s+[A-C]\s*,\s*[A-C]\s*,?\s*(?:and|or)\s+[A-C]\b"
)


def _prose_ranking(text: str, first: bool) -> list[str] | None:
    text = _LISTING.sub(" ", text)
    for pattern in (_RANK_SEQ, _RANK_ORDINALS):
        found = [list(m.groups()) for m in pattern.finditer(text)]
        if found:
            return _pick(found, first)
    return None


# ----------------------------------------------------------------------------------- validation


def _as_label(value: Any, labels: tuple[str, ...]) -> str:
    if isinstance(value, str):
        text = re.sub(r"(?i)\b(?:candidate|option)\b|[()\[\]\"'.*\s]", "", value).upper()
        if text in labels:
            return text
    raise _Invalid(f"{value!r} is not one of the labels {', '.join(labels)}")


# Every validator takes (value, num_turns, labels) and returns the prediction or raises _Invalid.


def _valid_detection(value: Any, num_turns: int | None, labels: tuple[str, ...]) -> str:
    if isinstance(value, bool):
        return "consistent" if value else "inconsistent"
    word = re.sub(r"[^a-z ]", "", str(value).lower()).strip()
    if word in ("consistent", "inconsistent"):
        return word
    if word in ("not consistent",):
        return "inconsistent"
    raise _Invalid(f"{value!r} is neither consistent nor inconsistent")


def _valid_same_speaker(value: Any, num_turns: int | None, labels: tuple[str, ...]) -> bool:
    if isinstance(value, bool):
        return value
    word = re.sub(r"[^a-z ]", "", str(value).lower()).strip()
    if word in ("yes", "true", "same", "same speaker", "same person"):
        return True
    if word in ("no", "false", "different", "different speaker", "different person", "not same"):
        return False
    raise _Invalid(f"{value!r} is not a yes/no answer")


def _turn_number(item: Any) -> int:
    if isinstance(item, bool):
        raise _Invalid(f"{item!r} is not a turn number")
    if isinstance(item, str):
        nums = _numbers(item)
        if len(nums) != 1:
            raise _Invalid(f"{item!r} is not a turn number")
        item = nums[0]
    if not isinstance(item, (int, float)) or int(item) != item:
        raise _Invalid(f"{item!r} is not a turn number")
    return int(item)


def _valid_localization(value: Any, num_turns: int | None, labels: tuple[str, ...]) -> list[int]:
    if isinstance(value, str):
        parsed = _prose_turns(value, first=True)
        if parsed is None and value.strip().lower() not in ("", "none", "[]"):
            raise _Invalid(f"{value!r} names no turn numbers")
        value = parsed or []
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list):
        raise _Invalid(f"{value!r} is not a list of turn numbers")
    turns = [_turn_number(item) for item in value]
    bad = [t for t in turns if t < 1 or (num_turns is not None and t > num_turns)]
    if bad:
        raise _Invalid(f"turn(s) {bad} outside 1..{num_turns or 'N'}")
    return sorted(set(turns))


def _valid_choice(value: Any, num_turns: int | None, labels: tuple[str, ...]) -> str:
    return _as_label(value, labels)


def _valid_ranking(value: Any, num_turns: int | None, labels: tuple[str, ...]) -> list[str]:
    if isinstance(value, str):
        parsed = _prose_ranking(value, first=True)
        if parsed is None:
            raise _Invalid(f"{value!r} is not a ranking")
        value = parsed
    if not isinstance(value, list):
        raise _Invalid(f"{value!r} is not a ranking")
    ranking = [_as_label(v, labels) for v in value]
    if sorted(ranking) != sorted(labels):
        raise _Invalid(f"ranking {ranking} is not a permutation of {list(labels)}")
    return ranking


_VALIDATE = {
    "detection": _valid_detection,
    "same_speaker": _valid_same_speaker,
    "localization": _valid_localization,
    "choice": _valid_choice,
    "ranking": _valid_ranking,
}


_PROSE = {
    "detection": _prose_detection,
    "same_speaker": _prose_same_speaker,
    "localization": _prose_turns,
    "choice": _prose_choice,
    "ranking": _prose_ranking,
}


def parse_answer(
    kind: str, text: str | None, *, num_turns: int | None = None, labels: tuple[str, ...] = LABELS
) -> Parsed:
    """Parse one raw answer of ``kind``; localization turns count from 1, up to ``num_turns`` when given."""
    if kind not in _PROSE:
        raise ValueError(f"unknown answer kind {kind!r}; known: {', '.join(KINDS)}")
    body = strip_reasoning(text)
    if not body:
        return Parsed(None, "empty answer")
    try:
        for value in reversed(json_values(body)):
            found, raw = _json_field(kind, value)
            if found:
                return Parsed(_VALIDATE[kind](raw, num_turns, labels), "json")
        segment = _answer_segment(body)
        if segment:
            raw = _PROSE[kind](segment, True)
            if raw is not None:
                return Parsed(_VALIDATE[kind](raw, num_turns, labels), "answer")
        raw = _PROSE[kind](body, False)
        if raw is not None:
            return Parsed(_VALIDATE[kind](raw, num_turns, labels), "prose")
    except _Invalid as err:
        return Parsed(None, f"invalid: {err}")
    return Parsed(None, "refusal" if _REFUSAL.search(body) else "no answer found")
