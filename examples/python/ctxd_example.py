#!/usr/bin/env python3
"""A ctxd client in ~150 lines: the standard library for calls (HTTP over the daemon's
Unix socket) and the `websockets` package for the event stream.

It shakes hands, creates a session, subscribes to it, appends one agent turn (a prompt,
a response with usage and a tool call, the tool's result, the final answer), compiles
the next request and prints where the context window stands.

    pip install websockets
    python3 ctxd_example.py [--socket PATH] [--keep]

The socket defaults to where `ctx` looks: $CTXD_SOCKET, else $CTXD_HOME/ctxd.sock (start a daemon with
`ctxd` or any `ctx` command first).
"""

import argparse
import asyncio
import http.client
import json
import os
import socket
import sys

from websockets.asyncio.client import unix_connect

PROTOCOL_VERSION = "1.1"


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a Unix socket."""

    def __init__(self, path):
        super().__init__("localhost")
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.path)


class RpcError(Exception):
    pass


def call(sock_path, method, params):
    """One JSON-RPC call over HTTP POST; params by name."""
    conn = UnixHTTPConnection(sock_path)
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    conn.request("POST", "/", body, {"Content-Type": "application/json"})
    reply = json.loads(conn.getresponse().read())
    conn.close()
    if "error" in reply:
        raise RpcError(f"{method}: {reply['error']['message']} ({reply['error']['code']})")
    return reply["result"]


def turn(cwd):
    """One agent turn as ctxd records."""
    path = os.path.join(cwd, "README.md")
    return [
        {"type": "user", "content": "What does the README say?"},
        {
            "type": "assistant",
            "message_id": "msg_example_1",
            "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 1800, "output_tokens": 45,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
            "content": [
                {"type": "text", "text": "Let me read it."},
                {"type": "tool_use", "id": "toolu_example_1", "name": "Read",
                 "input": {"file_path": path}},
            ],
        },
        {"type": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_example_1",
             "content": "# example\nA project used by the ctxd client example.\n"},
        ]},
        {"type": "assistant", "content": "It describes an example project."},
    ]


def picture(meta):
    """The usage picture: a bar of the effective window and what fills it."""
    ctx = meta["context"]
    used, window = ctx["effective_tokens"], ctx["effective_window"]
    width = 40
    filled = min(width, round(width * used / max(window, 1)))
    lines = [
        f"context: [{'#' * filled}{'.' * (width - filled)}] "
        f"{used:,} / {window:,} usable tokens ({100 - ctx['percent_left']}% used, {ctx['percent_left']}% left; "
        f"usable: the model's window less what is kept for the answer)",
        f"  autocompact at {ctx['autocompact_threshold']:,}, warning at {ctx['warning_threshold']:,}, "
        f"blocking at {ctx['blocking_limit']:,}",
        f"  messages: {meta['message_count']}, request: {meta['request_bytes']:,} bytes, "
        f"sha256 {meta['request_sha256'][:16]}",
        "  system sections:",
    ]
    for s in meta["system_sections"]:
        lines.append(f"    {s['name']:<32} {s['class']:<14} {s['chars']:>6} chars")
    return "\n".join(lines)


def by_category(usage):
    """What fills the window (`context.usage`, Claude Code's /context), one line each."""
    lines = [f"  window by category ({usage['model']}, {usage['context_window']:,} tokens):"]
    for c in usage["categories"]:
        lines.append(f"    {c['name']:<20} {c['tokens']:>9,} tokens {c['percent']:>5.1f}%")
    return "\n".join(lines)


def default_socket():
    """Where `ctx` and `ctxd` look: $CTXD_SOCKET, else $CTXD_HOME/ctxd.sock, else
    $XDG_RUNTIME_DIR/ctxd/ctxd.sock, else /tmp/ctxd-UID/ctxd.sock."""
    if os.environ.get("CTXD_SOCKET"):
        return os.environ["CTXD_SOCKET"]
    if os.environ.get("CTXD_HOME"):
        return os.path.join(os.environ["CTXD_HOME"], "ctxd.sock")
    if os.environ.get("XDG_RUNTIME_DIR"):
        return os.path.join(os.environ["XDG_RUNTIME_DIR"], "ctxd", "ctxd.sock")
    return f"/tmp/ctxd-{os.getuid()}/ctxd.sock"


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", default=default_socket(), help="the daemon's Unix socket")
    ap.add_argument("--cwd", default=os.getcwd(), help="working directory of the session")
    ap.add_argument("--keep", action="store_true", help="keep the session afterwards")
    args = ap.parse_args()
    if not os.path.exists(args.socket):
        sys.exit(f"no daemon at {args.socket}: start one (`ctx demo` or `ctxd`), or pass --socket")

    hello = call(args.socket, "daemon.initialize", {
        "client_info": {"name": "ctxd-example-python", "version": "1.0"},
        "protocol_version": PROTOCOL_VERSION,
    })
    print(f"connected to {hello['server_info']['name']} {hello['server_info']['version']}, "
          f"protocol {hello['protocol_version']}")
    session = call(args.socket, "session.create", {"cwd": os.path.abspath(args.cwd)})["session"]
    sid = session["session_id"]
    print(f"session {sid}")

    async with unix_connect(args.socket, uri="ws://localhost/") as ws:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "session.subscribe",
                                  "params": {"session_id": sid, "after_seq": 0}}))
        subscription = json.loads(await ws.recv())["result"]

        appended = call(args.socket, "transcript.append", {"session_id": sid, "records": turn(args.cwd)})
        last_seq = appended["appended"][-1]["seq"]
        print(f"appended {len(appended['appended'])} records (last seq {last_seq})")
        compiled = call(args.socket, "context.compile", {"session_id": sid})

        # Follow the stream until the compile shows up in it.
        while True:
            note = json.loads(await asyncio.wait_for(ws.recv(), timeout=30))["params"]["result"]
            detail = f" {len(note['records'])} records" if note["kind"] == "records_appended" else ""
            print(f"event seq={note['seq']} {note['kind']}{detail}")
            if note["kind"] == "compiled":
                break
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": "session.unsubscribe",
                                  "params": {"subscription": subscription}}))
        while True:  # notifications already in flight may come first
            reply = json.loads(await ws.recv())
            if reply.get("id") == 2:
                print(f"unsubscribed: {json.dumps(reply['result'])}")
                break

    print(picture(compiled["metadata"]))
    print(by_category(call(args.socket, "context.usage", {"session_id": sid})))
    if not args.keep:
        call(args.socket, "session.delete", {"session_id": sid})


if __name__ == "__main__":
    asyncio.run(main())
