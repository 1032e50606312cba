"""The parts of the SpeakerSleuth dataset format, one purpose a module, behind ``speakersleuth_dataset``
(the public face and the command line, which re-exports their names):

- ``schema``: tasks, splits, variants, every config's ``datasets.Features`` (``CONFIGS``);
- ``audio``: decoding any audio value to 16 kHz mono and encoding it as verified FLAC;
- ``writer``: ``DatasetWriter``, the parquet shards of a config and split;
- ``card``: the dataset card (its ``configs:``, digests, ``dataset_info``, data-fields tables);
- ``readers``: ``load``, ``collate``, ``local_folder`` and the pyarrow readers (``read_gold``);
- ``blind``: the blind copy (``write_blind``);
- ``validate``: the validator (``validate_folder``).

Each imports only the ones above it. Nothing here imports torch, scipy or sklearn at module level.
"""
