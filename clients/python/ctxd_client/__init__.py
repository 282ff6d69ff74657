"""A Python client for ctxd.

    import ctxd_client
    ctx = ctxd_client.connect()              # finds the daemon, or starts one, as `ctx` does
    sid = ctx.call("session.create", cwd="/my/project")["session"]["session_id"]
    ctx.append(sid, [{"type": "user", "content": "Hello"}])
    compiled = ctx.compile(sid)              # compiled.body, compiled.headers, compiled.metadata
    ctx.append_response(sid, message)        # an Anthropic SDK Message, or its model_dump()
    for event in ctx.events(sid, after_seq=0):
        ...

Calls go over HTTP on the daemon's Unix socket (one connection per call, standard
library only); `events` uses a WebSocket (the `websockets` package), the only transport
that carries subscriptions.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket as _socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Optional, Sequence

__all__ = [
    "Client",
    "Compiled",
    "RpcError",
    "connect",
    "default_socket",
    "find_ctxd",
]

PROTOCOL_VERSION = "1.2"
# How long `connect` waits for a daemon it started to answer.
START_TIMEOUT_S = 10.0
# Daemons this process started: they outlive it on purpose (their own session), and are
# kept here so that Python does not warn about a child it lost track of.
_STARTED: list = []


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
    """$CTXD_BIN, else `ctxd` on PATH."""
    found = os.environ.get("CTXD_BIN") or shutil.which("ctxd")
    if not found:
        raise ConnectError("no ctxd binary: put it on PATH or set CTXD_BIN")
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


class Client:
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

        last = after_seq
        while True:
            params: dict = {"session_id": session_id, "include_records": include_records}
            if last is not None:
                params["after_seq"] = last
            resume = False
            with unix_connect(self.socket, uri="ws://localhost/", max_size=None) as ws:
                ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session.subscribe", "params": params}))
                try:
                    for text in ws:
                        note = json.loads(text)
                        if note.get("id") == 1:
                            if "error" in note:
                                raise RpcError("session.subscribe", note["error"])
                            continue
                        event = note.get("params", {}).get("result")
                        if event is None:
                            continue
                        if event.get("kind") == "lagged" and event.get("ended"):
                            last = event["last_seq"]
                            resume = True
                            break
                        if event.get("kind") == "records_appended":
                            seqs = [r["seq"] for r in event.get("records", [])]
                            if seqs:
                                last = max(seqs)
                        yield event
                        if event.get("kind") == "session_deleted":
                            return
                except ConnectionClosed:
                    resume = True
            if not resume:
                return


def _answers(path: str) -> bool:
    try:
        Client(path, timeout=2.0).call("daemon.ping")
        return True
    except (OSError, RpcError, ValueError):
        return False


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
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    log = open(directory / "ctxd.log", "ab")
    cmd = [find_ctxd(), "--socket", path] + (["--home", home] if home else [])
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
