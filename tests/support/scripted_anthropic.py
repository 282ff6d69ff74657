#!/usr/bin/env python3
"""A scripted Messages API on 127.0.0.1 for the README's agent loop.

    scripted_anthropic.py LOG

Prints its port on the first line of stdout, then answers `POST /v1/messages` with a
streamed response (server-sent events, the event grammar of the Messages API): while
the last message holds no tool result, a text and a `Read` of README.md; then a text
that quotes the tool result's first line, and `end_turn`. Every request (headers and
body) is appended to LOG as one JSON line. With `SCRIPTED_DELAY_S` set, each answer
waits that long after the request is logged (for cancelling a turn).
"""

import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOG = sys.argv[1]


def events(message, blocks, stop_reason):
    yield "message_start", {"type": "message_start", "message": message}
    for i, (block, delta) in enumerate(blocks):
        yield "content_block_start", {"type": "content_block_start", "index": i, "content_block": block}
        yield "ping", {"type": "ping"}
        yield "content_block_delta", {"type": "content_block_delta", "index": i, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": i}
    yield "message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 17},
    }
    yield "message_stop", {"type": "message_stop"}


def last_tool_result(body):
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return None
    for block in content:
        if block.get("type") == "tool_result":
            text = block["content"]
            if isinstance(text, list):
                text = "".join(b.get("text", "") for b in text)
            return text
    return None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        with open(LOG, "a") as log:
            log.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": body}) + "\n")
        n = sum(1 for _ in open(LOG))
        time.sleep(float(os.environ.get("SCRIPTED_DELAY_S", "0")))
        message = {
            "id": f"msg_scripted_{n}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 100 * n, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0},
        }
        result = last_tool_result(body)
        if result is None:
            blocks = [
                ({"type": "text", "text": ""}, {"type": "text_delta", "text": "Let me read it. "}),
                ({"type": "tool_use", "id": f"toolu_scripted_{n}", "name": "Read", "input": {}},
                 {"type": "input_json_delta", "partial_json": json.dumps({"file_path": "README.md"})}),
            ]
            stop = "tool_use"
        else:
            first = result.strip().splitlines()[0] if result.strip() else ""
            blocks = [({"type": "text", "text": ""}, {"type": "text_delta", "text": f"It begins: {first}"})]
            stop = "end_turn"
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("request-id", f"req_scripted_{n}")
        self.end_headers()
        for name, data in events(message, blocks, stop):
            self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
