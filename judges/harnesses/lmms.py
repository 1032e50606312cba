"""The lmms-eval task folder shipped with the package (``lmms_tasks/``) and copies of it for another dataset.

    lmms-eval --model openai --model_args model_version=Qwen/Qwen2.5-Omni-7B,base_url=http://127.0.0.1:8000/v1 \\
        --include_path "$(python -m speakersleuth.judges lmms-tasks)" --tasks speakersleuth --log_samples --output_path out/

The folder holds one YAML per lmms-eval task and ``utils.py`` (what the YAMLs name): the tasks
``speakersleuth_detection``, ``speakersleuth_localization``, ``speakersleuth_discrimination`` (the
choice) and ``speakersleuth_discrimination_ranking`` (the ranking: lmms-eval asks one request per
document, so discrimination's two queries are two tasks), and their group ``speakersleuth``. The
shipped tasks read the ``speakersleuth`` folder of the working directory (a build's default output)
in the main variant with the main prompt setting; ``lmms-tasks --dataset D --variant V --setting S
--tasks-out DIR`` writes the same tasks reading D (a folder or a Hub id) instead. The per_turn
setting (one request per turn) is the Inspect tasks' and ``judges run``'s only.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.judges.harnesses.samples import check_task_options

TASK_FOLDER = Path(__file__).parent / "lmms_tasks"
GROUP = "speakersleuth"
#: lmms-eval task -> (our task, the query it asks, its metrics, each "<metric>: <aggregation in utils>")
LMMS_TASKS = {
    "speakersleuth_detection": ("detection", "detection", ("balanced_accuracy",)),
    "speakersleuth_localization": ("localization", "localization", ("balanced_f1",)),
    "speakersleuth_discrimination": ("discrimination", "choice", ("accuracy",)),
    "speakersleuth_discrimination_ranking": ("discrimination", "ranking", ("ndcg_at_1", "ndcg_at_2", "exact_match")),
}


def task_yaml(name: str, dataset: str, variant: str, setting: str) -> str:
    """The YAML of one of our lmms-eval tasks."""
    task, query, metrics = LMMS_TASKS[name]
    metric_lines = "".join(
        f"  - metric: {m}\n    aggregation: !function utils.aggregate_{m}\n    higher_is_better: true\n"
        for m in (*metrics, "coverage")
    )
    return (
        f"task: {name}\n"
        f"dataset_path: {dataset}\n"
        f"dataset_name: {ssd.config_name(task, variant)}\n"
        "test_split: test\n"
        "output_type: generate_until\n"
        "process_docs: !function utils.process_docs\n"
        "doc_to_messages: !function utils.doc_to_messages\n"
        "doc_to_text: !function utils.doc_to_text\n"
        "doc_to_target: id\n"
        f"process_results: !function utils.process_{query}\n"
        "generation_kwargs:\n  max_new_tokens: 256\n  temperature: 0\n  seed: 0\n"
        f"metric_list:\n{metric_lines}"
        "lmms_eval_specific_kwargs:\n"
        f"  default:\n    task: {task}\n    query: {query}\n    variant: {variant}\n    setting: {setting}\n"
        "metadata:\n  version: 1.0\n"
    )


def write_task_folder(
    out: str | os.PathLike, dataset: str | None, variant: str = "main", setting: str = "main"
) -> Path:
    """Write our lmms-eval tasks reading ``dataset`` in ``variant`` with the prompts of ``setting``
    to the folder ``out`` (the YAMLs, the group and ``utils.py``); returns the folder.

    >>> import tempfile
    >>> folder = write_task_folder(tempfile.mkdtemp(), "speakersleuth")
    >>> (folder / "speakersleuth_detection.yaml").read_text() == (TASK_FOLDER / "speakersleuth_detection.yaml").read_text()
    True
    """
    if not dataset:
        raise ValueError("lmms-tasks --tasks-out needs --dataset: the folder or Hub id the tasks read")
    for task, _, _ in LMMS_TASKS.values():
        check_task_options(task, variant, setting)
    if setting == "per_turn":
        raise ValueError("the lmms-eval tasks ask one request per document: per_turn is the Inspect tasks' setting")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for name in LMMS_TASKS:
        (out / f"{name}.yaml").write_text(task_yaml(name, str(dataset), variant, setting), encoding="utf-8")
    group = f"group: {GROUP}\ntask:\n" + "".join(f"  - {name}\n" for name in LMMS_TASKS)
    (out / f"{GROUP}.yaml").write_text(group, encoding="utf-8")
    if out.resolve() != TASK_FOLDER.resolve():
        shutil.copyfile(TASK_FOLDER / "utils.py", out / "utils.py")
    return out
