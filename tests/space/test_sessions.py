"""A new visitor's session makes block configs only when they are read (``space.sessions``), and
what it reads is what Gradio's own eager constructor would have stored."""

from __future__ import annotations

import gradio as gr
import pytest
from gradio.blocks import BlocksConfig
from gradio.state_holder import SessionState

from speakersleuth.space.sessions import LazyBlockConfigs, lazy_block_configs


@pytest.fixture(scope="module")
def blocks():
    assert lazy_block_configs()
    with gr.Blocks() as demo:
        name = gr.Textbox("first", label="Name")
        counts = gr.Dropdown(["a", "b"], value="a", label="Choice")
        with gr.Row():
            out = gr.HTML("<p>x</p>")
        name.submit(lambda n, c: gr.update(value=f"<b>{n}</b>"), [name, counts], out)
    return demo


def eager_configs(blocks) -> dict:
    """What Gradio's constructor stores: every block's config, made from the app's blocks."""
    return {
        k: BlocksConfig.config_for_block(k, [], v)
        for k, v in blocks.default_config.blocks.items()
        if k in blocks.blocks
    }


def test_a_new_session_makes_no_block_config_until_one_is_read(blocks, monkeypatch):
    from gradio.blocks import Block

    made = []
    real = Block.get_config
    monkeypatch.setattr(Block, "get_config", lambda self, *a, **k: made.append(self._id) or real(self, *a, **k))
    session = SessionState(blocks)
    assert isinstance(session.config_values, LazyBlockConfigs)
    assert made == []
    some = next(iter(session.config_values))
    session.config_values[some]
    assert set(made) == {some}


def test_every_config_read_is_what_the_eager_constructor_stores(blocks):
    session = SessionState(blocks)
    expected = eager_configs(blocks)
    assert list(session.config_values) == list(expected) and len(session.config_values) == len(expected)
    assert dict(session.config_values.items()) == expected
    assert list(session.components) == [c for c in expected.values() if c]


def eager_session(blocks) -> SessionState:
    """A session made by Gradio's own constructor (every config made at once)."""
    session = SessionState.__new__(SessionState)
    SessionState.__init__.__wrapped__(session, blocks)
    assert not isinstance(session.config_values, LazyBlockConfigs)
    return session


def test_after_the_same_updates_a_lazy_and_an_eager_session_hold_the_same_configs(blocks):
    sessions = [SessionState(blocks), eager_session(blocks)]
    textbox = next(b for b in blocks.blocks.values() if isinstance(b, gr.Textbox))
    html = next(b for b in blocks.blocks.values() if isinstance(b, gr.HTML))
    for session in sessions:
        session[textbox._id] = gr.Textbox("second", label="Name")
        session._update_config(textbox._id)
        session._update_value_in_config(html._id, "<i>third</i>")
    lazy, eager = (dict(s.config_values.items()) for s in sessions)
    assert lazy == eager
    assert lazy[textbox._id]["props"]["value"] == "second" and lazy[html._id]["props"]["value"] == "<i>third</i>"
    assert eager_configs(blocks)[textbox._id]["props"]["value"] == "first"  # the app's own blocks are untouched


def test_other_threads_still_get_real_configs_while_a_session_is_made(blocks):
    """The configs left out are left out in the constructing thread only: another thread asking
    for a config meanwhile (an event of another visitor) gets it."""
    import sys
    import threading

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter can
    some = next(iter(blocks.blocks))
    missing, done = [], threading.Event()

    def ask():
        while not done.is_set():
            if BlocksConfig.config_for_block(some, [], blocks.blocks[some]) is None:
                missing.append(1)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        for _ in range(300):
            SessionState(blocks)
    finally:
        done.set()
        asker.join()
        sys.setswitchinterval(interval)
    assert not missing, f"{len(missing)} configs came back empty in another thread"


def test_an_event_runs_through_a_lazy_session(blocks):
    from gradio_client import Client

    blocks.queue()
    _, url, _ = blocks.launch(prevent_thread_lock=True, server_name="127.0.0.1", quiet=True)
    try:
        client = Client(url, verbose=False)
        fn = next(i for i, d in enumerate(blocks.fns.values()))
        assert "<b>hello</b>" in str(client.predict("hello", "b", fn_index=fn))
    finally:
        blocks.close()
