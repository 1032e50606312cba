"""English text -> IPA phonemes with espeak-ng (the library and data ship in ``espeakng-loader``)."""

from __future__ import annotations

from functools import lru_cache

#: espeak-ng's voice for the American English the voices speak.
LANGUAGE = "en-us"


@lru_cache(maxsize=2)
def _backend(tie: bool):
    import espeakng_loader
    from phonemizer.backend import EspeakBackend
    from phonemizer.backend.espeak.wrapper import EspeakWrapper

    EspeakWrapper.set_library(espeakng_loader.get_library_path())
    EspeakWrapper.set_data_path(espeakng_loader.get_data_path())
    return EspeakBackend(
        LANGUAGE,
        preserve_punctuation=True,
        with_stress=True,
        tie="^" if tie else False,
        language_switch="remove-flags",
    )


def phonemize(text: str, tie: bool = False) -> str:
    """IPA with stress marks and the text's punctuation; ``tie`` joins affricates/diphthongs with '^'.

    >>> phonemize("Hi there!")
    'hˈaɪ ðˈɛɹ!'
    """
    return _backend(tie).phonemize([text], strip=True, njobs=1)[0]
