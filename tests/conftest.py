"""Fixtures the tests share: a small built dataset per test module with its gold, a
``Submitter`` factory over a fresh store, Debian's Chromium driven by Playwright, and real TTS
voices for the speaker-encoder tests."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from tests.support.shared_folders import shared_folder
from tests.support.space_support import ARGS, CHROMIUM, build_dataset

#: The modules that take minutes on 2 cores (builds, fresh environments, TTS, browsers), slowest
#: first as measured by ``--durations``: collected before the others, so that ``./run.sh test``
#: (``--dist loadfile --no-loadscope-reorder``) starts them first and the two workers finish together.
SLOW_MODULES = (
    "tests/builder_scripts/test_build_shards.py",
    "tests/builder_scripts/test_build.py",
    "tests/publishing/test_hub_trees.py",
    "tests/judges/test_check_other_speech.py",
    "tests/product/test_outside_in.py",
    "tests/product/test_readme.py",
    "tests/builder_scripts/test_chitchat_tts.py",
    "tests/speech/test_encoders.py",
    "tests/product/test_core_install.py",
    "tests/space/test_check_tab.py",
    "tests/space/test_round_attack.py",
    "tests/judges/test_check_cli.py",
    "tests/builder_scripts/test_cli_sources.py",
    "tests/builder_scripts/test_substitute_pool.py",
    "tests/product/test_docstring_examples.py",
)


def pytest_collection_modifyitems(items):
    """The tests of ``SLOW_MODULES`` first, in its order; the others after them, as collected."""
    rank = {module: i for i, module in enumerate(SLOW_MODULES)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory, request):
    """A synthetic dataset for each test module: its own copy of one built once per session."""
    shared = shared_folder(tmp_path_factory, "synthetic-dataset", build_dataset) / "dataset"
    return Path(
        shutil.copytree(shared, tmp_path_factory.mktemp(request.module.__name__.rpartition(".")[2]) / "dataset")
    )


@pytest.fixture(scope="module")
def gold(dataset):
    from speakersleuth.metrics.submission import load_gold

    return load_gold(dataset, "main")


@pytest.fixture
def make(tmp_path, dataset):
    """``make(**overrides)``: a Submitter over a fresh SQLite store; keyword arguments override the config."""
    from speakersleuth.space.config import SpaceConfig
    from speakersleuth.space.store import SqliteStore
    from speakersleuth.space.submitter import Submitter

    def build(**overrides):
        config = replace(SpaceConfig.from_env({}, dataset=str(dataset), data_dir=tmp_path), **overrides)
        return Submitter(config, SqliteStore(tmp_path), dataset, variants=["main"], n_bootstrap=50)

    return build


@pytest.fixture(scope="module")
def browser():
    """Debian's headless Chromium (the test is skipped where it or Playwright is missing)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def tts_voices(tmp_path_factory):
    """Distinct voices of the embedded TTS bank reading two texts each (``tests/support/tts_voices.py``),
    voiced once per session for all workers (the others read the voice bank's cache)."""
    from tests.support.tts_voices import render_voices

    return render_voices(shared_folder(tmp_path_factory, "tts-voices", render_voices))


@pytest.fixture(scope="module")
def one_torch_thread():
    """Torch on one thread for a module (models run faster so on a busy 2-core machine); the
    caller's count is restored afterwards. Encoder test modules use it for every test."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def campplus(one_torch_thread):
    from speakersleuth.speech.encoders import get_encoder

    return get_encoder("campplus")


@pytest.fixture(scope="module")
def eres2net(one_torch_thread):
    from speakersleuth.speech.encoders import get_encoder

    return get_encoder("eres2net")


@pytest.fixture(scope="module")
def dvector(one_torch_thread):
    from speakersleuth.speech.encoders import get_encoder

    return get_encoder("dvector")
