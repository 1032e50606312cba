"""The Submit form's metadata checked: the model's name, organisation, type, weights, link, date
and setting, each length-limited and refused with every reason at once (``FormError``) when it
cannot be stored or shown safely."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from speakersleuth.metrics.analysis import SETTINGS
from speakersleuth.space.store import Metadata

MODEL_TYPES = ("LALM", "embedding", "other")
ACCESS = ("open", "proprietary")
MAX_NAME_CHARS = 100
MAX_LINK_CHARS = 300


class FormError(ValueError):
    """Metadata that cannot be accepted; ``errors`` names every field at fault."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        super().__init__("; ".join(errors))


def clean_text(value: Any, field_name: str, max_chars: int, errors: list[str], *, required: bool = False) -> str:
    """``value`` as stripped text; what is wrong with it (missing when ``required``, too long, control
    or invisible characters, unpaired surrogates) is appended to ``errors``."""
    text = "" if value is None else str(value).strip()
    if required and not text:
        errors.append(f"{field_name} is required")
    if len(text) > max_chars:
        errors.append(f"{field_name} is longer than {max_chars} characters")
    if any(unicodedata.category(ch) in ("Cc", "Cf") and not _joins_emoji(text, i) for i, ch in enumerate(text)):
        errors.append(f"{field_name} contains control or invisible formatting characters")
    if any(unicodedata.category(ch) == "Cs" for ch in text):
        errors.append(f"{field_name} contains an unpaired surrogate (e.g. a lone \\ud800 escape), which is not text")
    return text


def _joins_emoji(text: str, i: int) -> bool:
    """Whether ``text[i]`` is the zero-width joiner of an emoji sequence (e.g. 👩‍💻, 🏳️‍🌈, 👨🏽‍🚀): a
    pictograph, optionally with its presentation selector or skin tone, before it and one after.

    >>> _joins_emoji("👩\u200d💻", 1), _joins_emoji("a\u200db", 1)
    (True, False)
    """
    if text[i] != "\u200d" or i + 1 >= len(text) or unicodedata.category(text[i + 1]) != "So":
        return False
    before = text[:i].rstrip("\ufe0f\U0001f3fb\U0001f3fc\U0001f3fd\U0001f3fe\U0001f3ff")
    return bool(before) and unicodedata.category(before[-1]) == "So"


def clean_metadata(
    model_name: Any,
    organisation: Any = "",
    model_type: Any = "other",
    access: Any = "open",
    link: Any = "",
    model_date: Any = "",
    setting: Any = "",
) -> Metadata:
    """Validate the form; returns ``Metadata`` or raises ``FormError`` listing every problem.

    >>> clean_metadata(" m ", "org", "LALM", "open", "https://example.org/m", "2025-01").model_name
    'm'
    >>> clean_metadata("", link="javascript:alert(1)")
    Traceback (most recent call last):
    ...
    speakersleuth.space.submission_form.FormError: model name is required; link must be an http(s) URL without spaces, quotes, brackets or parentheses
    """
    errors: list[str] = []
    texts = {
        "model_name": clean_text(model_name, "model name", MAX_NAME_CHARS, errors, required=True),
        "organisation": clean_text(organisation, "organisation", MAX_NAME_CHARS, errors),
        "link": clean_text(link, "link", MAX_LINK_CHARS, errors),
        "model_date": clean_text(model_date, "model date", 10, errors),
    }
    url, date = texts["link"], texts["model_date"]
    if model_type not in MODEL_TYPES:
        errors.append(f"model type must be one of {', '.join(MODEL_TYPES)}")
    if access not in ACCESS:
        errors.append(f"access must be one of {', '.join(ACCESS)}")
    if url:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or re.search(r"[\s<>\"'`\\()\[\]]", url):
            errors.append("link must be an http(s) URL without spaces, quotes, brackets or parentheses")
    if date and not _is_date(date):
        errors.append("model date must be YYYY-MM-DD or YYYY-MM")
    setting = "" if setting is None else setting
    if setting not in ("", *SETTINGS):
        errors.append(f"setting must be one of {', '.join(SETTINGS)}, or empty (not tagged)")
    if errors:
        raise FormError(errors)
    return Metadata(**texts, model_type=model_type, access=access, setting=setting)


def _is_date(text: str) -> bool:
    try:
        dt.date.fromisoformat(text if len(text) == 10 else f"{text}-01")
    except ValueError:
        return False
    return bool(re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", text))
