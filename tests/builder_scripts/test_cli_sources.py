"""Every source from the command line, as the README types it, on small copies of each corpus in
its real on-disk format (``tests.support.corpus_fixtures``, speech-like voices): a whole tiny build per
source, and one clear line (exit 2, no traceback) for an empty or an incomplete corpus folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from speakersleuth.builder_scripts.sources.ami import AMI_EVAL_MEETINGS
from speakersleuth.builder_scripts.sources.chitchat_tts import POOL_MAX_SECONDS, POOL_MIN_SECONDS
from speakersleuth.speech.model_dirs import use_model_dirs
from tests.support.corpus_fixtures import behavior_sd_record, write_ami, write_bazinga, write_dailytalk, write_table
from tests.support.vc_fixtures import VOICES, Voice

ROOT = Path(__file__).resolve().parents[2]
SR = 16_000
TURNS, TURN_SECONDS, GAP = 14, 1.6, 0.2  # alternating turns: a 5-turn window and a 3 s reference
MALE, MALE2, MALE3 = VOICES["male_a"], VOICES["male_b"], Voice(f0=115.0, vtl=0.97, open_quotient=0.58)
FEMALE, FEMALE2 = VOICES["female_a"], VOICES["female_b"]
WORDS = "so what did you think of the film we saw on friday night it was long but i liked the ending".split()


def text(i: int) -> str:
    return " ".join(WORDS[(3 * i) % 12 : (3 * i) % 12 + 4 + i % 3])


def spans(first: float = 0.0, turns: int = TURNS) -> list[tuple[float, float]]:
    """(start, end) of each of ``turns`` consecutive turns."""
    return [
        (round(first + i * (TURN_SECONDS + GAP), 3), round(first + i * (TURN_SECONDS + GAP) + TURN_SECONDS, 3))
        for i in range(turns)
    ]


def track_seconds(turns: int = TURNS) -> float:
    return spans(turns=turns)[-1][1] + 0.5


# ------------------------------------------------------------------------- corpora (real formats)


def dailytalk(root: Path) -> Path:
    """One conversation of the corpus's two voices (speaker 1 female, 0 male)."""
    utterances = [(1 - i % 2, text(i), TURN_SECONDS) for i in range(TURNS)]
    return write_dailytalk(root, {0: utterances}, sr=SR, voices={0: MALE, 1: FEMALE})


def bazinga(root: Path) -> Path:
    """An episode of penny talking with sheldon and leonard in turn."""
    rows = [(("penny", ("sheldon", "leonard")[i // 2 % 2])[i % 2], a, b, text(i)) for i, (a, b) in enumerate(spans())]
    return write_bazinga(
        root,
        {"TheBigBangTheory.Season01.Episode01": rows},
        {"penny": "female", "sheldon": "male", "leonard": "male"},
        seconds=track_seconds(),
        sr=SR,
        voices={"penny": FEMALE2, "sheldon": MALE2, "leonard": MALE3},
    )


def behavior_sd(root: Path) -> Path:
    """Two dialogues of the test split in one parquet file, three TTS voices."""
    long = [(i % 2, text(i), a, b) for i, (a, b) in enumerate(spans())]
    short = [(i % 2, text(i + 1), a, b) for i, (a, b) in enumerate(spans(turns=2))]
    voices = {"0001_0": FEMALE, "0002_1": MALE, "0003_1": MALE2}
    records = [
        behavior_sd_record(1, long, ["female", "male"], ["0001_0", "0002_1"], sr=SR, voices=voices),
        behavior_sd_record(2, short, ["female", "male"], ["0001_0", "0003_1"], sr=SR, voices=voices),
    ]
    write_table(root / "data" / "test-00000-of-00001.parquet", records)
    return root


def ami(root: Path) -> Path:
    """The 16 evaluation meetings (the source's default) with the same three participants; the
    first holds a conversation, the others four turns each."""
    agents = {"A": ("FEE005", 0, FEMALE), "B": ("MEE006", 1, MALE), "C": ("MEE007", 2, MALE2)}

    def words(start: float, end: float, sentence: str) -> list[tuple[float, float, str]]:
        step = (end - start) / len(sentence.split())
        return [
            (round(start + k * step, 3), round(start + (k + 1) * step, 3), w) for k, w in enumerate(sentence.split())
        ]

    def meeting(turns: int) -> dict:
        who = ["A" if i % 2 == 0 else "BC"[i // 2 % 2] for i in range(turns)]
        return {
            agent: {
                "global_name": name,
                "channel": channel,
                "segments": [
                    (a, b, words(a, b, text(i))) for i, (a, b) in enumerate(spans(turns=turns)) if who[i] == agent
                ],
            }
            for agent, (name, channel, _) in agents.items()
        }

    meetings = {m: meeting(TURNS if m == AMI_EVAL_MEETINGS[0] else 4) for m in AMI_EVAL_MEETINGS}
    write_ami(root, meetings, seconds=track_seconds(), sr=SR, voices={n: v for n, _, v in agents.values()})
    return root


CORPORA = {"dailytalk": dailytalk, "bazinga": bazinga, "behavior_sd": behavior_sd, "ami": ami}


# ------------------------------------------------------------------------------------ the CLI


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m speakersleuth.builder_scripts <args>`` from the repository root, as the README types it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", OMP_NUM_THREADS="1")
    return subprocess.run(
        [sys.executable, "-m", "speakersleuth.builder_scripts", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def build(tmp: Path, *sources: tuple[str, Path]) -> subprocess.CompletedProcess:
    args = [
        "build",
        "--dataset-out",
        str(tmp / "out"),
        "--cache",
        str(tmp / "cache"),
        "--variant",
        "main",
        "--dialogues",
        "1",
        "--margin",
        "0",
        "--no-progress",
        "--threads",
        "1",
    ]
    for name, folder in sources:
        args += ["--source", name, "--source-dir", f"{name}={folder}"]
    return cli(*args)


def refused(result: subprocess.CompletedProcess) -> str:
    """The one stderr line of a refusal (exit 2, no traceback)."""
    assert result.returncode == 2, (result.returncode, result.stderr[-3000:])
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1, result.stderr
    return result.stderr


@pytest.fixture(autouse=True)
def forget_model_dirs():
    """``main`` records ``--model-dir`` folders for its process; in-process runs must not leak them."""
    yield
    use_model_dirs({})


def run_main(argv: list[str], capsys) -> tuple[int, str]:
    """The builder's ``main`` in-process (fast): its exit code and stderr; any exception other
    than the exit escapes and fails the test."""
    from speakersleuth.builder_scripts.__main__ import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    return exit_.value.code, capsys.readouterr().err


def files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*"))


def written(tmp: Path) -> list[Path]:
    """The files a build given ``--dataset-out tmp/out --cache tmp/cache`` has written (a refusal writes none)."""
    return [p for p in (*(tmp / "out").rglob("*"), *(tmp / "cache").rglob("*")) if p.is_file()]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("corpora")
    return {name: write(root / name) for name, write in CORPORA.items()}


# ------------------------------------------------------------------------------- whole builds


def test_the_recorded_corpora_build_from_the_command_line(corpora, tmp_path):
    """One build of the four recorded corpora, each from its --source-dir (together: a DailyTalk-only
    build has two voices, too few substitutes); every corpus publishes its dialogue."""
    import speakersleuth.speakersleuth_dataset as ssd

    ami_files = files(corpora["ami"])
    result = build(tmp_path, *corpora.items())
    assert result.returncode == 0, result.stderr[-3000:]
    bars = [line for line in result.stderr.replace("\r", "\n").splitlines() if re.search(r"%\||it/s\]", line)]
    assert not bars, bars[:5]  # --no-progress: lhotse's AMI bars too
    ids = ssd.read_rows(tmp_path / "out", "discrimination").column("dialogue_id").to_pylist()
    assert sorted(ids) == [
        "ami/ES2004a",
        "bazinga/TheBigBangTheory.Season01.Episode01",
        "behavior_sd/test-1",
        "dailytalk/0",
    ]
    assert json.loads((tmp_path / "cache" / "build_report.json").read_text())["dialogues"] == {"main": 4}
    assert files(corpora["ami"]) == ami_files  # the annotations zip is extracted into the cache, not beside itself
    assert (tmp_path / "cache/sources/ami/ami_public_manual_1.6.2/corpusResources/meetings.xml").is_file()


def test_chitchat_reads_the_dataset_file_of_its_source_dir(tmp_path, capsys, monkeypatch):
    """``--source-dir chitchat_tts=DIR`` reaches the source, which reads DIR/dataset.json (the build
    itself, which voices the pool with the TTS bank, is the embedded default's tests' business)."""
    import speakersleuth.builder_scripts.pipeline as pipeline

    conversation = {"messages": [[{"sender": s, "text": text(i), "timestamp": ""}] for i, s in enumerate("abab")]}
    (tmp_path / "chat").mkdir()
    (tmp_path / "chat" / "dataset.json").write_text(json.dumps({"c1": conversation, "c2": {"messages": []}}))
    read = {}

    def reader(opts, jobs):  # stands in for the build: reads each source as the build would
        for name in opts.sources:
            source = pipeline.make_source(name, opts)
            read[name] = [d.dialogue_id for d in source.dialogues()]
        raise SystemExit(0)

    monkeypatch.setattr(pipeline, "build", reader)
    code, err = run_main(
        [
            "build",
            "--source",
            "chitchat_tts",
            "--source-dir",
            f"chitchat_tts={tmp_path / 'chat'}",
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        capsys,
    )
    assert code == 0, err
    assert read == {"chitchat_tts": ["c1"]}  # c2 has no turns


# ------------------------------------------------------------------------------------ refusals


def damage(name: str, corpus: Path) -> str:
    """Make ``corpus`` (a copy) incomplete; returns what the refusal must name."""
    if name == "dailytalk":
        (corpus / "data/0/3_0_d0.wav").unlink()
        return f"dialogue 0 utterance 3: missing {corpus}/data/0/3_0_d0.wav"
    if name == "ami":
        (corpus / "amicorpus/ES2004b/audio/ES2004b.Headset-1.wav").unlink()
        return "meeting ES2004b: missing audio " + f"{corpus}/**/ES2004b/audio/ES2004b.Headset-1.wav"
    if name == "behavior_sd":
        data = corpus / "data" / "test-00000-of-00001.parquet"
        import pyarrow.parquet as pq

        pq.write_table(pq.read_table(data).drop_columns(["tts_genders"]), data)
        return f"{data} lacks column(s) ['tts_genders']"
    (corpus / "audio/TheBigBangTheory.Season01.Episode01.flac").unlink()
    return f"missing audio {corpus}/audio/TheBigBangTheory.Season01.Episode01"


EMPTY = {
    "dailytalk": "missing {}/metadata.json",
    "ami": "no annotations: neither {0}/ami_public_manual_1.6.2 nor {0}/ami_public_manual_1.6.2.zip exists; "
    "put AMI's manual annotations zip (or its extracted folder) there",
    "behavior_sd": "no .parquet/.arrow files for split 'test' under {}",
    "bazinga": "missing {}/speakers.csv",
    "chitchat_tts": "missing {}/dataset.json",
}


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_an_empty_corpus_folder_is_refused_in_one_line(name, tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    code, err = run_main(
        [
            "build",
            "--source",
            name,
            "--source-dir",
            f"{name}={tmp_path / 'empty'}",
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f": error: {name}: {EMPTY[name].format(tmp_path / 'empty')}; expected " in err
    assert written(tmp_path) == []


@pytest.mark.parametrize("name", sorted(EMPTY))
def test_a_file_given_as_the_corpus_folder_is_refused_as_not_a_folder(name, tmp_path, capsys):
    (tmp_path / "corpus.zip").write_bytes(b"PK")
    code, err = run_main(
        [
            "build",
            "--source",
            name,
            "--source-dir",
            f"{name}={tmp_path / 'corpus.zip'}",
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f": error: {name}: {tmp_path / 'corpus.zip'} is not a folder; expected " in err
    assert written(tmp_path) == []


NOT_UTF8 = bytes(range(128, 256))


def wav_bytes(seconds: float = 1.0) -> bytes:
    """A silent 16 kHz wav file's bytes."""
    import io

    import numpy as np
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, np.zeros(int(seconds * SR), dtype=np.float32), SR, format="WAV")
    return buffer.getvalue()


#: source -> (files written into an otherwise empty corpus folder, what the refusal must say after "<name>: ")
BAD_CONTENT = {
    "dailytalk-empty-metadata": (
        "dailytalk",
        {"metadata.json": b"{}", "data/": None},
        "{}/metadata.json lists no utterances",
    ),
    "dailytalk-no-data": ("dailytalk", {"metadata.json": b"{}"}, "missing {}/data"),
    "bazinga-speakers-not-utf8": (
        "bazinga",
        {"speakers.csv": NOT_UTF8},
        "{}/speakers.csv is not a UTF-8 CSV file with columns speaker,gender (",
    ),
    "bazinga-transcript-latin1": (
        "bazinga",
        {
            "speakers.csv": b"speaker,gender\npenny,female\n",
            "transcripts/e.csv": b"speaker,start,end,text\npenny,0,0.5,caf\xe9\n",
            "audio/e.wav": wav_bytes(),
        },
        "{}/transcripts/e.csv is not a UTF-8 CSV file with columns speaker,start,end,text (",
    ),
    "chitchat-not-utf8": ("chitchat_tts", {"dataset.json": NOT_UTF8}, "{}/dataset.json is not JSON ("),
    "chitchat-a-list": (
        "chitchat_tts",
        {"dataset.json": b"[1, 2]"},
        "{}/dataset.json is not a JSON object of conversations by id",
    ),
    "chitchat-empty": ("chitchat_tts", {"dataset.json": b"{}"}, "{}/dataset.json holds no conversations"),
    "chitchat-bad-message": (
        "chitchat_tts",
        {"dataset.json": b'{"c1": {"messages": [[{"sender": "a", "text": 5}]]}}'},
        '{}/dataset.json: conversation \'c1\' is not {{"messages": [[{{"sender": str, "text": str}}, ...], ...], ...}}',
    ),
    "chitchat-one-sender": (
        "chitchat_tts",
        {"dataset.json": b'{"c1": {"messages": [[{"sender": "a", "text": "hello there"}]]}}'},
        "{}/dataset.json holds no conversation of two senders with at least 2 speakable turns",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CONTENT))
def test_bad_content_in_a_corpus_folder_is_refused_in_one_line(case, tmp_path, capsys):
    """Files that are there but unreadable, undecodable, of the wrong shape or empty: one line naming
    the file, before anything is written (no cache of a corpus that cannot be built)."""
    name, content, message = BAD_CONTENT[case]
    corpus = tmp_path / "corpus"
    for relative, data in {"": None, **content}.items():
        if data is None:
            (corpus / relative).mkdir(parents=True, exist_ok=True)
        else:
            (corpus / relative).parent.mkdir(parents=True, exist_ok=True)
            (corpus / relative).write_bytes(data)
    code, err = run_main(
        [
            "build",
            "--source",
            name,
            "--source-dir",
            f"{name}={corpus}",
            "--threads",
            "1",
            "--no-progress",
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f": error: {name}: {message.format(corpus)}" in err and "; expected " in err, err
    assert written(tmp_path) == []


def test_bad_content_is_refused_from_the_command_line_without_a_traceback(tmp_path):
    """The README's command, in its own process, on a corpus whose metadata lists nothing."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "metadata.json").write_text("{}")
    result = cli(
        "build",
        "--source",
        "dailytalk",
        "--source-dir",
        f"dailytalk={tmp_path / 'corpus'}",
        "--dataset-out",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "cache"),
    )
    assert f"dailytalk: missing {tmp_path / 'corpus' / 'data'}; expected " in refused(result)
    assert written(tmp_path) == []


@pytest.mark.parametrize("name", sorted(CORPORA))
def test_an_incomplete_corpus_folder_is_refused_in_one_line(name, corpora, tmp_path, capsys):
    corpus = shutil.copytree(corpora[name], tmp_path / name)
    missing = damage(name, corpus)
    code, err = run_main(
        [
            "build",
            "--source",
            name,
            "--source-dir",
            f"{name}={corpus}",
            "--variant",
            "main",
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
            "--no-progress",
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f": error: {name}: {missing}" in err and "; expected " in err
    assert written(tmp_path) == []


def test_a_recorded_source_without_its_folder_is_refused(tmp_path, capsys):
    code, err = run_main(["build", "--source", "dailytalk", "--dataset-out", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1 and "--source dailytalk needs --source-dir dailytalk=DIR" in err, err
    code, err = run_main(["build", "--source-dir", f"ami={tmp_path}", "--dataset-out", str(tmp_path / "out")], capsys)
    assert code == 2 and "ami is not built; add --source ami" in err, err


def test_the_command_line_refuses_an_empty_folder_without_a_traceback(tmp_path):
    """The README's command, in its own process: exit 2 and one line on stderr."""
    (tmp_path / "empty").mkdir()
    result = cli(
        "build",
        "--source",
        "ami",
        "--source-dir",
        f"ami={tmp_path / 'empty'}",
        "--dataset-out",
        str(tmp_path / "out"),
        "--cache",
        str(tmp_path / "cache"),
    )
    assert "ami: no annotations" in refused(result)


# ----------------------------------------------------------------------------- model folders


@pytest.mark.parametrize(
    "backend, names",
    [
        ("freevc", ["freevc"]),
        ("yourtts", ["yourtts"]),
        ("openvoice", ["openvoice"]),
        ("cosyvoice3", ["cosyvoice3", "cosyvoice3-repo"]),
    ],
)
def test_a_model_folder_that_lacks_files_is_refused(backend, names, tmp_path, capsys):
    import speakersleuth.builder_scripts.vc as vc

    flags = []
    for name in names:
        (tmp_path / name).mkdir()
        flags += ["--model-dir", f"{name}={tmp_path / name}"]
    code, err = run_main(["build", "--vc", backend, *flags, "--dataset-out", str(tmp_path / "out")], capsys)
    assert code == 2 and err.count("\n") == 1, err
    for folder in vc.converter_class(backend).model_folders():  # the flags are still in force in this process
        assert f"model folder {tmp_path / folder.name} (--model-dir {folder.name}=DIR) lacks " in err
        assert all(file in err for file in folder.files)
    assert vc.converter_class(backend).staging in err


@pytest.mark.parametrize(
    "encoder, lacks",
    [
        ("ecapa", "hyperparams.yaml, embedding_model.ckpt"),
        ("wavlm", "config.json, preprocessor_config.json, model.safetensors"),
    ],
)
def test_an_encoder_folder_that_lacks_files_is_refused(encoder, lacks, tmp_path, capsys):
    code, err = run_main(
        [
            "build",
            "--encoder",
            encoder,
            "--model-dir",
            f"{encoder}={tmp_path}",
            "--dataset-out",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    assert (
        code == 2
        and err.count("\n") == 1
        and f"{encoder}: model folder {tmp_path} (--model-dir {encoder}=DIR) lacks {lacks}" in err
    ), err
    code, err = run_main(
        ["build", "--model-dir", f"xvector={tmp_path}", "--dataset-out", str(tmp_path / "out")], capsys
    )
    assert code == 2 and "--model-dir 'xvector=" in err and "NAME one of freevc" in err, err


@pytest.fixture()
def no_build(monkeypatch):
    """Options that pass the checks end the command with 0 instead of building."""
    import speakersleuth.builder_scripts.__main__ as cli_main

    monkeypatch.setattr(cli_main, "_build", lambda opts, jobs: 0)


@pytest.mark.parametrize(
    "flags, named, user",
    [
        (
            ["--model-dir", "yourtts={}"],
            "yourtts",
            "--vc/--vc-4vc yourtts",
        ),  # the default backends are world and praat
        (["--vc", "freevc", "--model-dir", "cosyvoice3-repo={}"], "cosyvoice3-repo", "--vc/--vc-4vc cosyvoice3"),
        (["--model-dir", "ecapa={}"], "ecapa", "--encoder ecapa"),  # the default encoder is campplus
        (["--encoder", "ecapa:{}", "--model-dir", "wavlm={}"], "wavlm", "--encoder wavlm"),
    ],
)
def test_a_model_folder_the_build_does_not_use_is_refused(flags, named, user, tmp_path, capsys, no_build):
    code, err = run_main(
        [
            "build",
            *(f.format(tmp_path) for f in flags),
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f"error: --model-dir {named}={tmp_path}: unused by this command; only {user} reads it" in err, err


@pytest.mark.parametrize(
    "flags, validation", [([], 12), (["--dialogues", "7"], 2), (["--validation-dialogues", "0"], 0)]
)
def test_the_build_has_a_validation_split_by_default(flags, validation, tmp_path, monkeypatch):
    """A fifth of --dialogues (12 of the default 60) go to validation unless told otherwise."""
    import speakersleuth.builder_scripts.__main__ as cli_main

    seen = []
    monkeypatch.setattr(cli_main, "_build", lambda opts, jobs: seen.append(opts) or 0)
    assert (
        cli_main.main(["build", *flags, "--dataset-out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")])
        == 0
    )
    assert seen[0].validation_dialogues == validation


def test_a_negative_validation_split_is_refused(tmp_path, capsys, no_build):
    code, err = run_main(["build", "--validation-dialogues", "-1", "--dataset-out", str(tmp_path / "out")], capsys)
    assert code == 2 and "error: --validation-dialogues -1: must be 0 (no validation split) or more" in err, err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--dialogues", "0"], "--dialogues 0: must be at least 1 for 4vc/main"),
        (["--variant", "4vc", "--dialogues", "-2"], "--dialogues -2: must be at least 1 for 4vc"),
        (["--dialogues-10turn", "0"], "--dialogues-10turn 0: must be at least 1 for 10turn"),
    ],
)
def test_a_variant_of_no_dialogues_is_refused(flags, message, tmp_path, capsys, no_build):
    code, err = run_main(
        ["build", *flags, "--dataset-out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")], capsys
    )
    assert code == 2 and err.count("\n") == 1, err
    assert f"error: {message}; to leave a variant out, list the others with --variant" in err, err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--jobs", "0"], "--jobs 0: must be at least 1"),
        (["--jobs", "-3"], "--jobs -3: must be at least 1"),
        (["--num-shards", "0"], "--num-shards 0: must be at least 1"),
        (["--jobs", "2", "--num-shards", "2"], "--jobs runs its own shards; do not combine it with --num-shards"),
    ],
)
def test_a_process_count_below_one_is_refused(flags, message, tmp_path, capsys, no_build):
    code, err = run_main(
        ["build", *flags, "--dataset-out", str(tmp_path / "out"), "--cache", str(tmp_path / "cache")], capsys
    )
    assert code == 2 and err.count("\n") == 1 and f"error: {message}\n" in err, err


def test_a_count_of_a_variant_not_built_is_not_checked(tmp_path, no_build):
    """--dialogues 0 with only 10turn built is fine: main and 4vc are left out by --variant."""
    from speakersleuth.builder_scripts.__main__ import main

    assert main(["build", "--variant", "10turn", "--dialogues", "0", "--dataset-out", str(tmp_path / "out")]) == 0


def test_a_chat_corpus_too_short_for_the_speaker_pool_is_refused(tmp_path, capsys):
    """Two-party chats whose turns are all too short to voice the pool: one line naming the file.
    What is left in the cache is the normalised text under a hash of this very file."""
    chat = {"c1": {"messages": [[{"sender": "a", "text": "hi"}, {"sender": "b", "text": "yo"}]]}}
    (tmp_path / "chat").mkdir()
    (tmp_path / "chat" / "dataset.json").write_text(json.dumps(chat))
    code, err = run_main(
        [
            "build",
            "--source",
            "chitchat_tts",
            "--source-dir",
            f"chitchat_tts={tmp_path / 'chat'}",
            "--threads",
            "1",
            "--no-progress",
            "--dataset-out",
            str(tmp_path / "out"),
            "--cache",
            str(tmp_path / "cache"),
        ],
        capsys,
    )
    assert code == 2 and err.count("\n") == 1, err
    assert (
        f"error: chitchat_tts: {tmp_path / 'chat' / 'dataset.json'}: only 0 turns of {POOL_MIN_SECONDS}-{POOL_MAX_SECONDS} s in its 1 dialogues; "
        in err
    )
    assert [p.name.split("-")[0] for p in written(tmp_path)] == ["chitchat_turns"]


def test_review_export_refuses_a_missing_or_empty_dataset(tmp_path, capsys):
    """It exited 0 with an empty sheet for a folder that does not exist."""
    review = tmp_path / "review"
    code, err = run_main(
        ["review-export", "--dataset", str(tmp_path / "missing"), "--review-out", str(review)], capsys
    )
    assert code == 2 and err.count("\n") == 1 and f"{tmp_path / 'missing'}: no such folder" in err, err
    (tmp_path / "empty").mkdir()
    code, err = run_main(["review-export", "--dataset", str(tmp_path / "empty"), "--review-out", str(review)], capsys)
    assert code == 2 and err.count("\n") == 1 and "no discrimination test shards to review" in err, err
    assert not review.exists()
