"""Voice-conversion backends behind one interface (``base.VoiceConverter``); one module each.

Offline (no weights): ``respeak`` (the turn said again by the substitute's own TTS bank voice: no
conversion; for sources voiced by the bank), ``world`` (pyworld), ``praat`` (praat-parselmouth). Weight-based adapters,
loading only from local folders (``--model-dir NAME=DIR``, else under ``$SPEAKERSLEUTH_VC_DIR``;
see each module for its layout):
``freevc``, ``yourtts``, ``openvoice`` (coqui-tts) and ``cosyvoice3`` (a CosyVoice checkout).
Backend modules are imported only when asked for, so listing what is available is cheap.

>>> sorted(CONVERTERS)
['cosyvoice3', 'freevc', 'openvoice', 'praat', 'respeak', 'world', 'yourtts']
>>> get_converter("world").offline
True
>>> get_converter("sovits")
Traceback (most recent call last):
...
ValueError: unknown voice-conversion backend 'sovits'; known: cosyvoice3, freevc, openvoice, praat, respeak, world, yourtts
"""

from __future__ import annotations

from importlib import import_module

from .base import MODEL_DIRS, SAMPLING_RATE, VC_DIR_ENV, VoiceConverter, vc_dir

#: registry name -> (module, class)
CONVERTERS = {
    "respeak": ("respeak", "Respeaker"),
    "world": ("world", "WorldConverter"),
    "praat": ("praat", "PraatConverter"),
    "freevc": ("freevc", "FreeVCConverter"),
    "yourtts": ("yourtts", "YourTTSConverter"),
    "openvoice": ("openvoice", "OpenVoiceConverter"),
    "cosyvoice3": ("cosyvoice", "CosyVoiceConverter"),
}

#: The paper's backend shares in the 4vc variant (FreeVC 23 %, CosyVoice3 44 %, OpenVoice 24 %,
#: YourTTS 9 %), by registry name.
PAPER_4VC_SHARES = {"freevc": 0.23, "cosyvoice3": 0.44, "openvoice": 0.24, "yourtts": 0.09}


def converter_class(name: str) -> type[VoiceConverter]:
    if name not in CONVERTERS:
        raise ValueError(f"unknown voice-conversion backend {name!r}; known: {', '.join(sorted(CONVERTERS))}")
    module, cls = CONVERTERS[name]
    return getattr(import_module(f"{__name__}.{module}"), cls)


def get_converter(name: str, **kwargs) -> VoiceConverter:
    """Build backend ``name``; ``kwargs`` go to its constructor (e.g. ``model_dir=...``)."""
    return converter_class(name)(**kwargs)


def available_converters() -> list[str]:
    """Backends whose files are all present at their default locations (DSP ones always are)."""
    return [name for name in CONVERTERS if not converter_class(name).missing_files()]


__all__ = [
    "CONVERTERS",
    "MODEL_DIRS",
    "PAPER_4VC_SHARES",
    "SAMPLING_RATE",
    "VC_DIR_ENV",
    "VoiceConverter",
    "available_converters",
    "converter_class",
    "get_converter",
    "vc_dir",
]
