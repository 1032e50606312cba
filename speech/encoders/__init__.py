"""Speaker encoders behind one API: ``get_encoder(spec).encode(clips) -> (n, dim)`` float32,
L2-normalised, from 16 kHz mono clips (other rates are resampled).

Each module of this package holds one encoder and registers it under its spec name with
``register_encoder``; the package imports every module, so adding an encoder is adding a file:

- ``resemblyzer``: the GE2E LSTM whose weights ship inside the ``Resemblyzer`` wheel (the
  default; needs nothing staged); ``resemblyzer:<weights.pt>`` loads other weights.
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
speech.model_dirs.ModelFolderError: encoder 'ecapa' needs a local model folder: 'ecapa:<folder>' or --model-dir ecapa=<folder>. Copy hyperparams.yaml, embedding_model.ckpt, mean_var_norm_emb.ckpt, classifier.ckpt and label_encoder.txt of speechbrain/spkrec-ecapa-voxceleb into it. Nothing is downloaded at run time.
>>> available_encoders()
['ecapa', 'resemblyzer', 'wavlm']
"""

from __future__ import annotations

from importlib import import_module
from pkgutil import iter_modules

from .base import SpeakerEncoder, available_encoders, check_encoder, folder_encoders, get_encoder, register_encoder

__all__ = ["SpeakerEncoder", "available_encoders", "check_encoder", "folder_encoders", "get_encoder", "register_encoder"]

for _module in iter_modules(__path__):
    import_module(f"{__name__}.{_module.name}")
