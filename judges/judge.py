"""What every judge is: a name, and ``run``, which judges one variant of a dataset folder and writes
its predictions JSONL (the submission format of ``metrics``). The embedding judges
(``judges.embedding.EmbeddingJudge``) and the LALM judges (``judges.lalm.harness.LALMJudge``) are
judges; ``judges.run.run_judge`` runs either."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Sequence


class Judge(ABC):
    """A judge of speaker consistency; each kind says how it writes its file and what its summary holds."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The judge's name (the grammar of ``judges.names``)."""

    @abstractmethod
    def run(
        self,
        dataset_folder: str | os.PathLike,
        variant: str,
        tasks: str | Sequence[str],
        out_path: str | os.PathLike,
        *,
        split: str = "test",
        limit: int | None = None,
    ) -> dict:
        """Judge ``tasks`` of one variant and write the predictions file.

        Arguments
        ---------
        dataset_folder : str or os.PathLike
            A built dataset folder, or the public folder of a blind copy (a Hub id must be made a
            local folder first: ``speakersleuth_dataset.local_folder``).
        variant : str
            ``main``, ``4vc`` or ``10turn``.
        tasks : str or sequence of str
            The tasks to judge: ``"detection,localization,discrimination"`` or a list of them.
        out_path : str or os.PathLike
            The predictions file (JSON Lines).
        split : str
            ``"test"`` (default) or ``"validation"``.
        limit : int, optional
            Judge only the first ``limit`` instances of each task (default None: all).

        Returns
        -------
        dict
            The run's summary, with ``counts`` (the lines per task) and ``seconds``.
        """
