#!/usr/bin/env python3
"""What a WebSocket client that never reads costs a running ctxd.

    scripts/ws-backpressure.py SOCKET [--calls 150] [--session-mb 10]

Creates a session of about SESSION_MB megabytes over HTTP, opens a WebSocket, writes
CALLS pipelined `transcript.read {limit: 5000}` calls and never reads an answer. Prints
the daemon's resident memory before, once its queue for that client is full (as
`daemon.status.websocket` reports it), and after the client has gone; and how long
another client's `daemon.ping` takes meanwhile. Needs only the standard library.
"""

import argparse
import base64
import json
import os
import socket
import struct
import time


def http(sock_path, method, params):
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).encode()
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    s.sendall(
        b"POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    data = b""
    while True:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        data += chunk
    s.close()
    answer = json.loads(data.split(b"\r\n\r\n", 1)[1])
    if "error" in answer:
        raise SystemExit(f"{method}: {answer['error']}")
    return answer["result"]


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def frame(payload):
    mask = os.urandom(4)
    head = bytearray([0x81])
    n = len(payload)
    if n < 126:
        head.append(0x80 | n)
    elif n < 1 << 16:
        head.append(0x80 | 126)
        head += struct.pack(">H", n)
    else:
        head.append(0x80 | 127)
        head += struct.pack(">Q", n)
    return bytes(head) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def websocket(sock_path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock_path)
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall(
        (
            "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n\r\n" not in head:
        head += s.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    return s


def wait_status(sock_path, done, limit=120):
    start = time.time()
    while True:
        ws = http(sock_path, "daemon.status", {})["websocket"]
        if done(ws):
            return ws
        if time.time() - start > limit:
            raise SystemExit(f"gave up waiting: {ws}")
        time.sleep(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("socket")
    ap.add_argument("--calls", type=int, default=150)
    ap.add_argument("--session-mb", type=int, default=10)
    args = ap.parse_args()
    pid = http(args.socket, "daemon.status", {})["pid"]
    sid = http(args.socket, "session.create", {"cwd": "/tmp", "no_git": True})["session"]["session_id"]
    text = "x" * 100_000
    for batch in range(args.session_mb):
        records = [
            {"type": "user", "message": {"role": "user", "content": f"{batch}/{i} {text}"}}
            for i in range(10)
        ]
        http(args.socket, "transcript.append", {"session_id": sid, "records": records})
    before = rss_mib(pid)
    ws = websocket(args.socket)
    read = lambda i: json.dumps(
        {"jsonrpc": "2.0", "id": i, "method": "transcript.read", "params": {"session_id": sid, "limit": 5000}}
    ).encode()
    ws.sendall(b"".join(frame(read(i)) for i in range(args.calls)))
    full = wait_status(
        args.socket, lambda w: w["queued_bytes"] >= 16 << 20 and w["calls_running"] == 0
    )
    during = rss_mib(pid)
    t = time.time()
    http(args.socket, "daemon.ping", {})
    ping_ms = (time.time() - t) * 1000
    ws.close()
    wait_status(args.socket, lambda w: w["connections"] == 0 and w["queued_bytes"] == 0)
    time.sleep(2)
    after = rss_mib(pid)
    print(
        f"{args.calls} pipelined reads of a {args.session_mb} MB session, never read:\n"
        f"  RSS before {before:.0f} MiB, queue full {during:.0f} MiB, client gone {after:.0f} MiB\n"
        f"  status when full: {full}\n"
        f"  another client's daemon.ping meanwhile: {ping_ms:.1f} ms"
    )


if __name__ == "__main__":
    main()
