"""Source corpora, one module each, all behind ``DialogueSource`` (see ``base.py``)."""

from __future__ import annotations

from importlib import import_module

from .base import AudioSpan, CorpusLayoutError, Dialogue, DialogueSource, Turn

#: registry name -> "module:Class"; modules are imported on use, so a corpus's heavy imports
#: (lhotse, the TTS runtime) load only when that corpus is built.
SOURCES = {
    "chitchat_tts": "chitchat_tts:ChitchatTTS",
    "dailytalk": "dailytalk:DailyTalk",
    "ami": "ami:AMI",
    "behavior_sd": "behavior_sd:BehaviorSD",
    "bazinga": "bazinga:Bazinga",
}


def get_source_class(name: str) -> type[DialogueSource]:
    try:
        module, cls = SOURCES[name].split(":")
    except KeyError:
        raise ValueError(f"unknown source {name!r}; known: {', '.join(SOURCES)}") from None
    return getattr(import_module(f"{__name__}.{module}"), cls)


__all__ = ["AudioSpan", "CorpusLayoutError", "Dialogue", "DialogueSource", "Turn", "SOURCES", "get_source_class"]
