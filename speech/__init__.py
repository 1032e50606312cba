"""The speech layer shared by the dataset builder and the judges: the sampling rate, resampling and
waveform checks (``speech.audio``), atomic file writes (``speech.files``), local model folders
(``speech.model_dirs``) and the speaker encoders behind one ``encode`` API (``speech.encoders``).

It imports neither ``builder_scripts`` nor ``judges``.
"""
