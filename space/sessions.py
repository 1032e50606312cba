"""A visitor's first event without the cost of the whole page's config.

Gradio makes a ``SessionState`` for every new session (a browser tab, a ``gradio_client``) on its
first event, and its constructor builds the config of every block of the app at once
(``BlocksConfig.config_for_block``: each block's constructor signature read, its API schema made).
Those configs are read back only for the blocks an event takes or updates, and all of them only
by Gradio's deep-link route (``SessionState.components``), which this app does not offer. For the
Space's ~150 blocks that was about 50 ms of the server's one interpreter per new visitor, a third
of what serving a submitter cost (``benchmarks/bench_space.py --profile-server``), so 50 visitors
arriving together queued behind 2.5 s of it.

``lazy_block_configs()`` makes each session compute a block's config when it is first read,
from the block that session holds then; what any read returns is what the eager constructor
would have stored (a block a session replaces gets its config set at once, as before).
Gradio's ``SessionState`` is patched once per process, for the pinned Gradio 6 (the attributes it
relies on are checked, and an unknown layout leaves Gradio as it is).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, MutableMapping
from typing import Any

from gradio import state_holder
from gradio.blocks import BlocksConfig

_PATCHED = "_speakersleuth_lazy_configs"


class LazyBlockConfigs(MutableMapping):
    """``SessionState.config_values`` made on read: block id -> that block's config."""

    def __init__(self, session: state_holder.SessionState, ids: list[int]) -> None:
        self._session = session
        self._ids = dict.fromkeys(ids)  # the blocks the eager constructor would have configured, in order
        self._made: dict[int, Any] = {}

    def __getitem__(self, key: int) -> Any:
        if key not in self._made:
            if key not in self._ids:
                raise KeyError(key)
            config = self._session.blocks_config
            self._made[key] = config.config_for_block(key, [], config.blocks[key])
        return self._made[key]

    def __setitem__(self, key: int, value: Any) -> None:
        self._made[key] = value

    def __delitem__(self, key: int) -> None:
        self._made.pop(key, None)
        self._ids.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._made or key in self._ids

    def __iter__(self) -> Iterator[int]:
        yield from self._ids
        yield from (k for k in self._made if k not in self._ids)

    def __len__(self) -> int:
        return len(self._ids) + sum(k not in self._ids for k in self._made)


def lazy_block_configs() -> bool:
    """Patch Gradio's ``SessionState`` so that block configs are made when read; ``False`` (and
    nothing changed) when this Gradio's ``SessionState`` does not look as expected."""
    cls, blocks_config = state_holder.SessionState, BlocksConfig
    if getattr(cls, _PATCHED, False):
        return True
    if not all(hasattr(cls, name) for name in ("_update_config", "_update_value_in_config", "components")):
        return False
    eager_init, config_for_block = cls.__init__, blocks_config.config_for_block
    deferring = threading.local()

    def deferred_config_for_block(*args, **kwargs):
        return None if getattr(deferring, "on", False) else config_for_block(*args, **kwargs)

    @functools.wraps(eager_init)  # __wrapped__: Gradio's own constructor
    def __init__(self, blocks) -> None:
        deferring.on = True  # Gradio's own constructor, with the configs it would make left out
        try:
            eager_init(self, blocks)
        finally:
            deferring.on = False
        self.config_values = LazyBlockConfigs(self, list(self.config_values))

    blocks_config.config_for_block = staticmethod(deferred_config_for_block)
    cls.__init__ = __init__
    setattr(cls, _PATCHED, True)
    return True
