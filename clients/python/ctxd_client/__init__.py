"""A Python client for ctxd.

    import ctxd_client
    ctx = ctxd_client.connect()              # finds the daemon, or starts one, as `ctx` does
    sid = ctx.call("session.create", cwd="/my/project")["session"]["session_id"]
    ctx.append(sid, [{"type": "user", "content": "Hello"}])
    compiled = ctx.compile(sid)              # compiled.body, compiled.headers, compiled.metadata
    ctx.append_response(sid, message)        # an Anthropic SDK Message, or its model_dump()
    for event in ctx.events(sid, after_seq=0):
        ...

Every RPC method also has a typed method of its own (`ctx.session_create(cwd=...)`),
and every schema a TypedDict, both generated from protocol/openrpc.json (`types`).
`connect_async()` gives the same client for asyncio (`AsyncClient`).

Calls go over HTTP on the daemon's Unix socket (one connection per call, standard
library only); `events` uses a WebSocket (the `websockets` package), the only transport
that carries subscriptions.
"""

from __future__ import annotations

import asyncio
import atexit
import http.client
import json
import os
import shutil
import socket as _socket
import subprocess
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, AsyncIterator, Iterator, Mapping, Optional, Sequence

from . import types
from .types import AsyncMethods, Methods

__all__ = [
    "AsyncClient",
    "Client",
    "Compiled",
    "RpcError",
    "connect",
    "connect_async",
    "default_socket",
    "find_ctxd",
    "types",
]

PROTOCOL_VERSION = "1.2"
# How long `connect` waits for a daemon it started to answer.
START_TIMEOUT_S = 10.0
# Daemons this process started: they outlive it on purpose (their own session), and are
# kept here so that Python does not warn about a child it lost track of.
_STARTED: list = []


# WebSocket connections of `events` and `send_stream` iterators still open. An iterator
# kept in a variable is finalised only after the interpreter has stopped its threads, and
# closing its connection then waits forever for the reading thread; so they are closed
# before that, at exit.
_OPEN_SOCKETS: "weakref.WeakSet" = weakref.WeakSet()


@atexit.register
def _close_open_sockets() -> None:
    for ws in list(_OPEN_SOCKETS):
        try:
            ws.close()
        except Exception:  # the connection may have failed meanwhile; nothing to free
            pass


class RpcError(Exception):
    """The daemon answered a call with a JSON-RPC error."""

    def __init__(self, method: str, error: Mapping[str, Any]):
        self.method = method
        self.code = error.get("code")
        self.message = error.get("message", "")
        self.data = error.get("data")
        super().__init__(f"{method}: {self.message} (code {self.code})")


class ConnectError(Exception):
    """No daemon answers on the socket, and none could be started."""


def default_socket() -> str:
    """Where `ctx` and `ctxd` look: $CTXD_SOCKET, else $CTXD_HOME/ctxd.sock, else
    $XDG_RUNTIME_DIR/ctxd/ctxd.sock, else /tmp/ctxd-UID/ctxd.sock."""
    if os.environ.get("CTXD_SOCKET"):
        return os.environ["CTXD_SOCKET"]
    if os.environ.get("CTXD_HOME"):
        return os.path.join(os.environ["CTXD_HOME"], "ctxd.sock")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "ctxd", "ctxd.sock")
    return f"/tmp/ctxd-{os.geteuid()}/ctxd.sock"


def find_ctxd() -> str:
    """$CTXD_BIN, else `ctxd` on PATH, else ~/.local/bin/ctxd (where scripts/install puts
    it by default, often not on PATH)."""
    found = os.environ.get("CTXD_BIN") or shutil.which("ctxd")
    if not found:
        local = os.path.join(os.path.expanduser("~"), ".local", "bin", "ctxd")
        if os.access(local, os.X_OK):
            found = local
    if not found:
        raise ConnectError("no ctxd binary on PATH or in ~/.local/bin: run scripts/install, or set CTXD_BIN")
    return found


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            sock.connect(self._path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


@dataclass
class Compiled:
    """A compiled request: the body to send, the HTTP headers to send with it (beta
    headers the body needs), and what ctxd reports about it."""

    body: dict
    headers: dict
    metadata: dict


def _dump(message: Any) -> dict:
    """An Anthropic SDK `Message` (a pydantic model) or its dump, as JSON values."""
    if hasattr(message, "model_dump"):
        return message.model_dump(mode="json")
    if isinstance(message, Mapping):
        return dict(message)
    raise TypeError(f"expected an Anthropic Message or its model_dump(), not {type(message).__name__}")


def _subscribe_params(session_id: str, after_seq: Optional[int], include_records: bool) -> dict:
    params: dict = {"session_id": session_id, "include_records": include_records}
    if after_seq is not None:
        params["after_seq"] = after_seq
    return {"jsonrpc": "2.0", "id": 1, "method": "session.subscribe", "params": params}


def _turn_event(text: str) -> Optional[dict]:
    """The turn event a `context.send_stream` message carries, if any. Raises `RpcError`
    when the turn was refused before its stream opened."""
    note = json.loads(text)
    if note.get("id") == 1:
        if "error" in note:
            raise RpcError("context.send_stream", note["error"])
        return None
    return note.get("params", {}).get("result")


_TURN_ENDS = ("finished", "failed")


class _Resume:
    """Where a stream of events stands: what to resume from, and whether to."""

    def __init__(self, after_seq: Optional[int]):
        self.last = after_seq
        self.resume = False

    def take(self, text: str) -> Optional[dict]:
        """The event a message carries, if any. Raises `RpcError` for a refused
        subscription; sets `resume` (and returns None) for a `lagged` end."""
        note = json.loads(text)
        if note.get("id") == 1:
            if "error" in note:
                raise RpcError("session.subscribe", note["error"])
            return None
        event = note.get("params", {}).get("result")
        if event is None:
            return None
        if event.get("kind") == "lagged" and event.get("ended"):
            self.last = event["last_seq"]
            self.resume = True
            return None
        if event.get("kind") == "records_appended":
            seqs = [r["seq"] for r in event.get("records", [])]
            if seqs:
                self.last = max(seqs)
        return event


class Client(Methods):
    """A connection to one daemon. Cheap to keep: every call opens its own HTTP request."""

    def __init__(self, socket: str, timeout: float = 600.0):
        self.socket = socket
        self.timeout = timeout
        self._next_id = 0

    def call(self, method: str, **params: Any) -> Any:
        """Any RPC method, params by name; its result. Raises `RpcError`."""
        self._next_id += 1
        body = json.dumps(
            {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        )
        conn = _UnixHTTPConnection(self.socket, self.timeout)
        try:
            conn.request("POST", "/", body, {"Content-Type": "application/json"})
            reply = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        if "error" in reply:
            raise RpcError(method, reply["error"])
        return reply["result"]

    def append(self, session_id: str, records: Sequence[Mapping[str, Any]], **params: Any) -> dict:
        """`transcript.append`: records in ctxd's shape (see docs/records.md)."""
        return self.call("transcript.append", session_id=session_id, records=list(records), **params)

    def append_response(self, session_id: str, message: Any) -> dict:
        """Appends a model response exactly as it came: an Anthropic SDK `Message`, or
        its `model_dump()` (with or without `exclude_none`)."""
        return self.append(session_id, [{"type": "assistant", "message": _dump(message)}])

    def append_tool_results(self, session_id: str, results: Sequence[Mapping[str, Any]]) -> dict:
        """Appends the results of the tools the last response called, one user record:
        each result is `{"tool_use_id", "content", "is_error"?}` (content a string or
        content blocks)."""
        blocks = [{"type": "tool_result", **dict(r)} for r in results]
        return self.append(session_id, [{"type": "user", "content": blocks}])

    def compile(self, session_id: str, **params: Any) -> Compiled:
        """`context.compile`: the request to send next."""
        compiled = self.call("context.compile", session_id=session_id, **params)
        metadata = compiled["metadata"]
        headers = dict(metadata.get("cache", {}).get("headers", {}))
        return Compiled(body=compiled["request"], headers=headers, metadata=metadata)

    def events(self, session_id: str, after_seq: Optional[int] = None, include_records: bool = False) -> Iterator[dict]:
        """The session's events, as `session.event` notifications carry them (`kind`,
        `seq`, ...). With `after_seq`, first every record after it, from the store;
        then live. A subscription the daemon ends for falling behind (`lagged` with
        `ended`) is taken up again from the last seq delivered, so records arrive in
        order, none twice and none missing. Ends when the session is deleted."""
        from websockets.exceptions import ConnectionClosed
        from websockets.sync.client import unix_connect

        state = _Resume(after_seq)
        while True:
            state.resume = False
            with unix_connect(self.socket, uri="ws://localhost/", max_size=None) as ws:
                _OPEN_SOCKETS.add(ws)
                ws.send(json.dumps(_subscribe_params(session_id, state.last, include_records)))
                try:
                    for text in ws:
                        event = state.take(text)
                        if state.resume:
                            break
                        if event is None:
                            continue
                        yield event
                        if event.get("kind") == "session_deleted":
                            return
                except ConnectionClosed:
                    state.resume = True
            if not state.resume:
                return


    def send_stream(self, session_id: str) -> Iterator[dict]:
        """`context.send_stream`: ctxd compiles, calls the session's provider and appends
        its answer; this yields the turn's events as they come (`started`, each provider
        `event`, `retrying`, `recovering`), and last `finished` (its `response` is what
        `context.send` answers) or `failed` (`code`, `message`, `data`: nothing was
        appended). Leaving the loop early cancels the turn."""
        from websockets.sync.client import unix_connect

        request = {"jsonrpc": "2.0", "id": 1, "method": "context.send_stream", "params": {"session_id": session_id}}
        with unix_connect(self.socket, uri="ws://localhost/", max_size=None) as ws:
            _OPEN_SOCKETS.add(ws)
            ws.send(json.dumps(request))
            for text in ws:
                event = _turn_event(text)
                if event is None:
                    continue
                yield event
                if event.get("kind") in _TURN_ENDS:
                    return


class AsyncClient(AsyncMethods):
    """`Client` for asyncio: the same calls, awaited (each runs on a worker thread, so the
    event loop never waits on the socket), and `events` as an async iterator."""

    def __init__(self, socket: str, timeout: float = 600.0):
        self._client = Client(socket, timeout)

    @property
    def socket(self) -> str:
        return self._client.socket

    async def call(self, method: str, **params: Any) -> Any:
        return await asyncio.to_thread(self._client.call, method, **params)

    async def append(self, session_id: str, records: Sequence[Mapping[str, Any]], **params: Any) -> dict:
        return await asyncio.to_thread(self._client.append, session_id, records, **params)

    async def append_response(self, session_id: str, message: Any) -> dict:
        return await asyncio.to_thread(self._client.append_response, session_id, message)

    async def append_tool_results(self, session_id: str, results: Sequence[Mapping[str, Any]]) -> dict:
        return await asyncio.to_thread(self._client.append_tool_results, session_id, results)

    async def compile(self, session_id: str, **params: Any) -> Compiled:
        return await asyncio.to_thread(self._client.compile, session_id, **params)

    async def events(self, session_id: str, after_seq: Optional[int] = None, include_records: bool = False) -> AsyncIterator[dict]:
        """As `Client.events`."""
        from websockets.asyncio.client import unix_connect
        from websockets.exceptions import ConnectionClosed

        state = _Resume(after_seq)
        while True:
            state.resume = False
            async with unix_connect(self.socket, uri="ws://localhost/", max_size=None) as ws:
                await ws.send(json.dumps(_subscribe_params(session_id, state.last, include_records)))
                try:
                    async for text in ws:
                        event = state.take(text)
                        if state.resume:
                            break
                        if event is None:
                            continue
                        yield event
                        if event.get("kind") == "session_deleted":
                            return
                except ConnectionClosed:
                    state.resume = True
            if not state.resume:
                return


    async def send_stream(self, session_id: str) -> AsyncIterator[dict]:
        """As `Client.send_stream`."""
        from websockets.asyncio.client import unix_connect

        request = {"jsonrpc": "2.0", "id": 1, "method": "context.send_stream", "params": {"session_id": session_id}}
        async with unix_connect(self.socket, uri="ws://localhost/", max_size=None) as ws:
            await ws.send(json.dumps(request))
            async for text in ws:
                event = _turn_event(text)
                if event is None:
                    continue
                yield event
                if event.get("kind") in _TURN_ENDS:
                    return


def _answers(path: str) -> bool:
    try:
        Client(path, timeout=2.0).call("daemon.ping")
        return True
    except (OSError, RpcError, ValueError):
        return False


def _private_dirs(directory: Path) -> None:
    """Creates `directory` and any missing parent 0700, as the daemon does (Path.mkdir
    gives the parents the umask's mode); an existing one is left as it is."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        if directory.parent == directory:
            break
        directory = directory.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)


def connect(socket: Optional[str] = None, home: Optional[str] = None, start: bool = True) -> Client:
    """A client of the daemon on `socket` (default: `default_socket()`, or the one in
    `home`). When nothing answers there and `start` is set, starts `ctxd` in the
    background on that socket (its log in `ctxd.log` beside it), as `ctx` does."""
    path = socket or (os.path.join(home, "ctxd.sock") if home else default_socket())
    if _answers(path):
        return Client(path)
    if not start:
        raise ConnectError(f"no daemon answers on {path}")
    directory = Path(path).parent
    _private_dirs(directory)
    # The log names the user's sessions and files: 0600, narrowed even when it exists.
    log_fd = os.open(directory / "ctxd.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(log_fd, 0o600)
    log = os.fdopen(log_fd, "ab")
    # The daemon rotates its log itself (bounded however long it runs); stderr goes to
    # the same file for what comes before the log starts.
    cmd = [find_ctxd(), "--socket", path, "--log-file", str(directory / "ctxd.log")]
    cmd += ["--home", home] if home else []
    child = subprocess.Popen(
        cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
    )
    log.close()
    _STARTED.append(child)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if _answers(path):
            return Client(path)
        if child.poll() is not None:
            # Another daemon may have won the socket.
            if _answers(path):
                return Client(path)
            raise ConnectError(f"ctxd exited with {child.returncode}; see {directory / 'ctxd.log'}")
        time.sleep(0.025)
    raise ConnectError(f"ctxd did not answer on {path} within {START_TIMEOUT_S:.0f} s; see {directory / 'ctxd.log'}")


async def connect_async(socket: Optional[str] = None, home: Optional[str] = None, start: bool = True) -> AsyncClient:
    """`connect` for asyncio."""
    client = await asyncio.to_thread(connect, socket, home, start)
    return AsyncClient(client.socket, client.timeout)
