"""The SpeakerSleuth leaderboard Space: Leaderboard, Submit, Submission, Viewer, Review, Check your audio and About tabs.

Run locally (listens on 127.0.0.1 unless told otherwise)::

    python -m speakersleuth.space.app --dataset speakersleuth --host 127.0.0.1 --port 7860

Every option also comes from the environment (see ``space.config``). On Hugging Face Spaces
(``SPACE_ID`` set) the Submit tab shows the login button and the rate limit counts per HF user.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import gradio as gr
import httpx
from gradio import networking

import speakersleuth.speakersleuth_dataset as ssd
from speakersleuth.space import about
from speakersleuth.space.baselines_status import STATUS_FILE, baselines_note
from speakersleuth.space.check_tab import build_check_tab
from speakersleuth.space.config import ALLOW_PAIRED_HELP, SpaceConfig
from speakersleuth.space.disclosure import Disclosure
from speakersleuth.space.leaderboard import LEADERBOARD_CSS, REFRESH_CONCURRENCY, build_leaderboard_tab
from speakersleuth.space.review import ReviewDesk, build_review_tab
from speakersleuth.space.sessions import lazy_block_configs
from speakersleuth.space.store import ResultsStore, open_store
from speakersleuth.space.submission_page import SUBMISSION_CSS, build_submission_tab
from speakersleuth.space.submission_page import TAB_ID as SUBMISSION_TAB
from speakersleuth.space.submit import SUBMIT_CSS, build_submit_tab
from speakersleuth.space.submitter import Submitter, example_file, gold_folder
from speakersleuth.space.uploads import upload_guard
from speakersleuth.space.viewer import VIEWER_CSS, InstanceIndex, build_viewer_tab
from speakersleuth.speech.files import write_bytes_atomic

logger = logging.getLogger(__name__)

CSS = LEADERBOARD_CSS + SUBMIT_CSS + SUBMISSION_CSS + VIEWER_CSS
#: How long ``launch`` waits for the started server to answer its first ``HEAD /``.
LAUNCH_CHECK_S = 180.0
_SERVED = (200, 401, 301, 302, 303, 307, 308)  # what Gradio's check takes for "the page is served"


def served(url: str, deadline_s: float = LAUNCH_CHECK_S) -> bool:
    """Whether the server at ``url`` answers ``HEAD /``, waiting up to ``deadline_s`` seconds for it.

    What ``Blocks.launch`` asks before it goes on (``gradio.networking.url_ok``: one request with a
    3 s timeout, given up on the first timeout, then "When localhost is not accessible, a shareable
    link must be created"). The first render of the page is several times slower than the next ones
    (page config and API info built and cached, the template compiled): on a busy 2-core machine it
    took more than 3 s. Here a timeout, or a status other than served, is asked again with a longer
    timeout until the deadline; a refused connection is still an answer at once (nothing listens)."""
    end = time.monotonic() + deadline_s
    timeout = 3.0
    while True:
        try:
            if httpx.head(url, timeout=timeout, verify=False).status_code in _SERVED:
                return True
        except httpx.ConnectError:
            return False
        except httpx.TransportError:  # a timeout (or a connection dropped mid-answer): busy, ask again
            pass
        left = end - time.monotonic()
        if left <= 0:
            return False
        logger.info(
            "the server has not answered HEAD %s within %.0f s; asking again (%.0f s left)", url, timeout, left
        )
        timeout = min(timeout * 2, max(left, 1.0))
        time.sleep(min(0.5, left))


@contextmanager
def _patient_launch_check(deadline_s: float):
    """``Blocks.launch``'s check that the page is served, made ``served`` (patient) while it runs."""
    original = networking.url_ok
    networking.url_ok = lambda url: served(url, deadline_s)
    try:
        yield
    finally:
        networking.url_ok = original


@dataclass
class SpaceApp:
    """A built app and what it serves; ``launch()`` starts the server."""

    config: SpaceConfig
    dataset: Path
    store: ResultsStore
    submitter: Submitter
    blocks: gr.Blocks
    review: ReviewDesk

    def launch(self, *, check_s: float = LAUNCH_CHECK_S, **overrides):
        """``Blocks.launch`` with the Space's settings (caps, upload guard, CSS, host/port); returns its
        result. Its check that the started server serves the page waits up to ``check_s`` seconds
        (``served``), so a slow first render on a busy machine does not end the app."""
        kwargs = dict(
            server_name=self.config.host,
            server_port=self.config.port,
            max_file_size=self.config.max_bytes,
            app_kwargs={"middleware": [upload_guard(self.config)]},
            css=CSS,
            theme=gr.themes.Soft(),
            allowed_paths=[str(self.public_dir)],
            show_error=False,
            footer_links=["api"],
        )
        kwargs.update(overrides)
        with _patient_launch_check(check_s):
            return self.blocks.launch(**kwargs)

    @property
    def public_dir(self) -> Path:
        """Files the server may send to browsers (example submissions, leaderboard CSV files)."""
        return public_dir(self.config)


ANALYTICS_SUMMARY_EVERY = (
    1000  # events between two of Gradio's monitoring summaries (GRADIO_ANALYTICS_CACHE_FREQUENCY)
)


def public_dir(config: SpaceConfig) -> Path:
    return config.data_dir / "public"


def _write_examples(submitter: Submitter, out: Path) -> dict[str, Path]:
    files = {}
    for variant in submitter.variants:
        path = out / f"example-predictions-{variant}.jsonl"
        write_bytes_atomic(path, example_file(submitter.gold(variant)), durable=True)
        files[variant] = path
    return files


def _build_about_tab(submitter: Submitter, examples: dict[str, Path]) -> None:
    """The tasks, metrics, file format, Check your audio, disclosure policy, example files and citation."""
    gr.Markdown(about.TASKS)
    gr.Markdown(about.METRICS)
    gr.Markdown(about.SUBMISSION_FORMAT)
    gr.Markdown(about.CHECK_AUDIO)
    gr.Markdown(about.disclosure_text(submitter.policy, submitter.rate))
    with gr.Row():
        for variant, path in examples.items():
            gr.DownloadButton(f"Example file ({variant})", value=str(path), size="sm")
    gr.Markdown("## Citation")
    gr.Code(about.CITATION_TEXT, language=None, label="BibTeX", interactive=False)


def _leaderboard_tab(config: SpaceConfig, store: ResultsStore, variants: list[str], policy: Disclosure):
    """The Leaderboard tab's tables (``space.leaderboard``), under the line on the baselines still
    being judged (``space.baselines_status.baselines_note``), and its Refresh button: the refresh, its inputs,
    its outputs and the button."""
    refresh, toggles, outputs = build_leaderboard_tab(
        store,
        list(ssd.VARIANTS),
        variants,
        public_dir(config) / "exports",
        policy,
        note=partial(baselines_note, config.data_dir / STATUS_FILE),
    )
    return refresh, toggles, outputs, gr.Button("Refresh", size="sm")


def _start_queue(blocks: gr.Blocks, config: SpaceConfig) -> None:
    """Gradio's queue recomputes its monitoring summary (a pandas groupby over its last 10,000
    events) after every event unless told otherwise: ~5 % of the server's time per submitter.
    Only Gradio's /monitoring/summary route reads it (nothing of the Space's): it now lags by up
    to that many events. Read by the Queue when it is made; set for the process (a deployer's
    own value is kept)."""
    os.environ.setdefault("GRADIO_ANALYTICS_CACHE_FREQUENCY", str(ANALYTICS_SUMMARY_EVERY))
    blocks.queue(default_concurrency_limit=max(2, config.concurrency))


def build_app(
    config: SpaceConfig,
    store: ResultsStore | None = None,
    *,
    n_bootstrap: int | None = None,
    policy: Disclosure | None = None,
) -> SpaceApp:
    """Open the dataset and the store, load the gold of every variant, and build the Blocks;
    ``policy``: what is shown of the scores (default: ``space.disclosure.policy_for`` the dataset)."""
    lazy_block_configs()  # a new visitor's first event does not build the config of every block (space.sessions)
    dataset = config.dataset_folder()
    variants = ssd.variants_present(dataset, every_task=True)  # a submission answers all three tasks
    if not variants:
        raise ValueError(f"{dataset}: no variant has test shards for all three tasks; build the dataset first")
    store = store or open_store(config)
    kwargs = {} if n_bootstrap is None else {"n_bootstrap": n_bootstrap}
    submitter = Submitter(
        config, store, dataset, variants=variants, gold=gold_folder(config, dataset), policy=policy, **kwargs
    )
    for variant in variants:  # a blind copy too small to split into a public and a private part is refused here
        submitter.policy.check(submitter.gold(variant))
    submitter.policy.check_copy(dataset, [submitter.gold(v) for v in variants])  # and a paired one, unless allowed
    examples = _write_examples(submitter, public_dir(config) / "examples")
    review = ReviewDesk(config, store, dataset, submitter.identity)

    # uploads never submitted (and cached outputs) are deleted once older than the TTL
    with gr.Blocks(title=about.TITLE, delete_cache=(config.upload_ttl_s, config.upload_ttl_s)) as blocks:
        gr.Markdown(f"# {about.TITLE}\n\n{about.INTRODUCTION}")
        if submitter.policy.paired:
            gr.Markdown(about.PAIRED_BANNER, elem_id="ss-paired-banner")
        with gr.Tabs(overflow_behavior="wrap") as tabs:  # a phone shows every tab (no "..." menu)
            with gr.Tab("Leaderboard", id="leaderboard"):
                refresh, toggles, lb_outputs, refresh_button = _leaderboard_tab(
                    config, store, variants, submitter.policy
                )
            with gr.Tab("Submit", id="submit"):
                submit_event = build_submit_tab(submitter)
            with gr.Tab("Submission", id=SUBMISSION_TAB) as submission_tab:
                submission = build_submission_tab(submitter, public_dir(config) / "predictions")
            with gr.Tab("Viewer", id="viewer") as viewer_tab:
                show, viewer_inputs, viewer_outputs = build_viewer_tab(InstanceIndex(dataset))
            with gr.Tab("Review", id="review") as review_tab:
                build_review_tab(review, review_tab)
            build_check_tab()  # its own gr.Tab, "Check your audio"
            with gr.Tab("About", id="about"):
                _build_about_tab(submitter, examples)

        # Refreshes only read (a rebuild is coalesced under a per-variant lock, see LeaderboardViews):
        # they share a wider limit than submissions, so a refresh that waits out the coalescing does
        # not hold one of two slots, and fewer than Gradio's worker threads, so waiting refreshes
        # cannot take the threads that submissions and other events run on.
        reader = {"concurrency_limit": REFRESH_CONCURRENCY, "concurrency_id": "refresh", "api_name": False}
        refresh_button.click(refresh, toggles, lb_outputs, **reader | {"api_name": "leaderboard"})
        submit_event.then(refresh, toggles, lb_outputs, **reader)
        blocks.load(refresh, toggles, lb_outputs, **reader)
        submission.withdrawn.then(refresh, toggles, lb_outputs, **reader)
        submission_tab.select(submission.page.choices, None, submission.chooser, api_name=False)
        blocks.load(submission.page.open_link, None, [tabs, submission.chooser, *submission.outputs], api_name=False)
        viewer_tab.select(show, list(viewer_inputs), viewer_outputs, api_name=False)  # not on page load
    _start_queue(blocks, config)
    return SpaceApp(config, dataset, store, submitter, blocks, review)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m speakersleuth.space.app", description="Run the SpeakerSleuth leaderboard Space."
    )
    parser.add_argument("--dataset", help="built dataset folder or Hub dataset id (env SPEAKERSLEUTH_DATASET)")
    parser.add_argument(
        "--gold", help="private test gold of a blind dataset: folder or Hub id (env SPEAKERSLEUTH_GOLD)"
    )
    parser.add_argument("--data-dir", type=Path, help="results store and caches (env SPEAKERSLEUTH_DATA_DIR)")
    parser.add_argument("--host", help="address to listen on (default 127.0.0.1; env SPEAKERSLEUTH_HOST)")
    parser.add_argument("--port", type=int, help="port (default 7860; env SPEAKERSLEUTH_PORT)")
    parser.add_argument(
        "--allow-paired",
        action="store_true",
        default=None,
        help=f"{ALLOW_PAIRED_HELP} (env SPEAKERSLEUTH_ALLOW_PAIRED=1)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = SpaceConfig.from_env(**vars(args))  # each option overrides the SpaceConfig field of its name
        app = build_app(config)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    app.launch()
    return 0


if __name__ == "__main__":
    sys.exit(main())
