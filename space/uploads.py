"""What an upload may cost the server's disk.

``UploadGuard`` is ASGI middleware on Gradio's FastAPI app: it refuses a POST to Gradio's upload
route, before anything is written, when the request has no Content-Length, when the client's address
has uploaded more than its byte budget within the window (the upload TTL: what it uploaded may
still be on disk), or when the bytes held in Gradio's upload folder plus the uploads in progress
would pass the total cap. ``FileUpload`` is the upload widget of the Submit tab and the Check tab.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import anyio
import gradio as gr
from gradio.data_classes import FileData, ListFiles
from gradio.route_utils import API_PREFIX
from gradio.utils import NamedString, get_upload_folder
from gradio_client.utils import is_valid_file
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse

UPLOAD_PATH = API_PREFIX + "/upload"


def folder_bytes(folder: Path) -> int:
    """Bytes of the files under ``folder`` (files deleted while it is walked are skipped)."""
    total = 0
    for root, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _size(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n >= 100_000 else f"{n:,} bytes"


@dataclass(eq=False)  # one upload; two of the same size at the same time are still two
class _Charge:
    at: float
    size: int


class UploadGuard:
    """ASGI middleware: refuses uploads over the per-address budget or the total cap (see the
    module docstring); every other request passes untouched. An upload that fails (any status
    but 200) is not charged to its address."""

    def __init__(
        self,
        app,
        *,
        per_address_bytes: int,
        total_bytes: int,
        window_s: float,
        folder: str | os.PathLike,
        behind_proxy: bool = False,
        clock=time.monotonic,
    ):
        self.app = app
        self.behind_proxy = behind_proxy
        self.per_address_bytes = per_address_bytes
        self.total_bytes = total_bytes
        self.window_s = window_s
        self.folder = Path(folder)
        self.clock = clock
        self.charges: dict[str, deque[_Charge]] = {}
        self.in_flight = 0  # declared bytes of the uploads being received now

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith(UPLOAD_PATH):
            await self.app(scope, receive, send)
            return
        size, refusal = self._declared_size(scope)
        address = self._address(scope)
        if refusal is None:
            held = await anyio.to_thread.run_sync(folder_bytes, self.folder)
            refusal = self._over_budget(address, size) or self._over_cap(held, size)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        charge = _Charge(self.clock(), size)
        self.charges.setdefault(address, deque()).append(charge)
        self.in_flight += size
        status = {}

        async def send_noting_status(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_noting_status)
        finally:
            self.in_flight -= size
            charges = self.charges.get(address, ())
            if status.get("code") != 200 and charge in charges:  # (unless it already left the window)
                charges.remove(charge)

    def _address(self, scope) -> str:
        """The client's address: the peer uvicorn reports or, ``behind_proxy`` (on Spaces, whose
        proxy connects from its own address), the last X-Forwarded-For entry, the one the proxy
        added (entries before it are whatever the client sent)."""
        if self.behind_proxy:
            forwarded = [v for k, v in scope.get("headers", []) if k == b"x-forwarded-for"]
            if forwarded:
                return forwarded[-1].decode("latin-1").split(",")[-1].strip()
        return scope["client"][0] if scope.get("client") else "unknown"

    @staticmethod
    def _declared_size(scope) -> tuple[int, PlainTextResponse | None]:
        raw = Headers(scope=scope).get("content-length")
        if raw is None:
            return 0, PlainTextResponse("Upload refused: the request has no Content-Length header.", status_code=411)
        if not (raw.isascii() and raw.isdigit()):
            return 0, PlainTextResponse(
                f"Upload refused: Content-Length {raw!r} is not a number of bytes.", status_code=400
            )
        return int(raw), None

    def _over_budget(self, address: str, size: int) -> PlainTextResponse | None:
        now = self.clock()
        for key in list(self.charges):  # forget what left the window, and addresses with nothing in it
            charges = self.charges[key]
            while charges and charges[0].at <= now - self.window_s:
                charges.popleft()
            if not charges:
                del self.charges[key]
        charges = self.charges.get(address, ())
        used = sum(c.size for c in charges)
        if used + size <= self.per_address_bytes:
            return None
        refusal = (
            f"Upload refused: your address has uploaded {_size(used)} in the last {self.window_s:g} s and "
            f"this upload ({_size(size)}) would pass the limit of {_size(self.per_address_bytes)} per {self.window_s:g} s."
        )
        if size > self.per_address_bytes:
            return PlainTextResponse(refusal + " Upload fewer or smaller files.", status_code=413)
        wait = max(1, math.ceil(charges[0].at + self.window_s - now))
        return PlainTextResponse(
            f"{refusal} Try again in {wait} s.", status_code=429, headers={"Retry-After": str(wait)}
        )

    def _over_cap(self, held: int, size: int) -> PlainTextResponse | None:
        if held + self.in_flight + size <= self.total_bytes:
            return None
        return PlainTextResponse(
            f"Upload refused: the server's upload space is full ({_size(held + self.in_flight)} held, "
            f"limit {_size(self.total_bytes)}). Try again later.",
            status_code=507,
        )


def upload_guard(config) -> Middleware:
    """The ``UploadGuard`` for a ``SpaceConfig``, over Gradio's upload folder, for ``app_kwargs``."""
    return Middleware(
        UploadGuard,
        per_address_bytes=config.upload_budget_bytes,
        total_bytes=config.upload_cap_bytes,
        window_s=config.upload_ttl_s,
        folder=get_upload_folder(),
        behind_proxy=config.on_spaces,
    )


class FileUpload(gr.File):
    """``gr.File`` that, with ``type="filepath"``, passes the uploads' paths without the empty ``tmp*``
    file that Gradio 6.31's ``File.preprocess`` creates (and never deletes) in its temp folder for
    every file it passes on; a file of another type than ``file_types`` is refused, named. (No
    ``__init__`` of its own: Gradio sends the browser the arguments named in ``gr.File.__init__``.)"""

    is_template = True  # the browser draws it as a plain gr.File

    def preprocess(self, payload: ListFiles | FileData | None):
        if payload is None or self.type != "filepath":
            return super().preprocess(payload)
        files = list(payload) if isinstance(payload, ListFiles) else [payload]
        for file in files:
            if self.file_types and not is_valid_file(file.path, self.file_types):
                raise gr.Error(f"{file.orig_name or Path(file.path).name}: not a {' or '.join(self.file_types)} file.")
        paths = [NamedString(file.path) for file in files]
        return paths if self.file_count == "multiple" else paths[0]
