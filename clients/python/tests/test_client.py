"""ctxd_client against a real daemon: `CTXD_BIN` names the binary (the Rust suite sets it)."""

import json
import os
import tempfile
import threading
import unittest
from pathlib import Path

import ctxd_client

SDK_DUMPS = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "sdk"


class FakeMessage:
    """What the SDK's pydantic `Message` offers ctxd_client: `model_dump(mode=...)`."""

    def __init__(self, dump):
        self._dump = dump

    def model_dump(self, mode="python"):
        assert mode == "json"
        return self._dump


def message(text, tool=None, msg_id="msg_1"):
    content = [{"type": "text", "text": text, "citations": None}]
    if tool:
        content.append({"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": "/tmp/x"}, "caller": {"type": "direct"}})
    return {
        "id": msg_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 120, "output_tokens": 30, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
                  "service_tier": "standard", "server_tool_use": None},
    }


STREAM_KEY_VAR = "CTXD_PY_TEST_KEY"


def scripted_messages_api(events):
    """A Messages API on 127.0.0.1 that streams `events` to every POST; its base URL."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


TURN_EVENTS = [
    {"type": "message_start", "message": {"id": "msg_py", "type": "message", "role": "assistant", "model": "m", "content": [],
                                          "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 50, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello "}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "there."}},
    {"type": "content_block_stop", "index": 0},
    {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 4}},
    {"type": "message_stop"},
]


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # The daemon connect() starts inherits it: the provider's key.
        os.environ[STREAM_KEY_VAR] = "sk-py-test"
        cls.dir = tempfile.TemporaryDirectory()
        cls.home = cls.dir.name
        cls.ctx = ctxd_client.connect(home=cls.home)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.ctx.call("daemon.shutdown")
        finally:
            cls.dir.cleanup()

    def session(self):
        return self.ctx.call("session.create", cwd=self.home, no_git=True)["session"]["session_id"]

    def test_connect_finds_the_daemon_it_started(self):
        again = ctxd_client.connect(home=self.home, start=False)
        self.assertEqual(again.call("daemon.ping"), {"pong": True})
        self.assertEqual(again.socket, os.path.join(self.home, "ctxd.sock"))
        # The log of the daemon it started is the user's alone.
        self.assertEqual(os.stat(os.path.join(self.home, "ctxd.log")).st_mode & 0o777, 0o600)

    def test_connect_without_a_daemon_and_without_start_says_so(self):
        with tempfile.TemporaryDirectory() as empty:
            with self.assertRaises(ctxd_client.ConnectError):
                ctxd_client.connect(home=empty, start=False)

    def test_an_error_answer_is_an_rpc_error_naming_the_field(self):
        with self.assertRaises(ctxd_client.RpcError) as caught:
            self.ctx.call("session.create", cwd=self.home, model={"context_window": "big"})
        self.assertEqual(caught.exception.code, -32602)
        self.assertIn("field", caught.exception.data)

    def test_a_turn_with_a_tool_compiles_and_the_responses_go_in_as_they_came(self):
        sid = self.session()
        self.ctx.append(sid, [{"type": "user", "content": "Read /tmp/x"}])
        compiled = self.ctx.compile(sid)
        self.assertEqual(compiled.body["messages"][-1]["role"], "user")
        self.assertIsInstance(compiled.headers, dict)
        self.ctx.append_response(sid, FakeMessage(message("Reading.", tool="toolu_1")))
        self.ctx.append_tool_results(sid, [{"tool_use_id": "toolu_1", "content": "hello"}])
        # The dump itself (as `model_dump()` gives it) is taken too.
        self.ctx.append_response(sid, message("It says hello.", msg_id="msg_2"))
        body = self.ctx.compile(sid).body
        roles = [m["role"] for m in body["messages"]]
        self.assertEqual(roles, ["user", "assistant", "user", "assistant"])
        tool_use = body["messages"][1]["content"][-1]
        self.assertEqual(tool_use["caller"], {"type": "direct"}, "fields ctxd has no slot for pass through")
        self.assertEqual(body["messages"][2]["content"][0]["type"], "tool_result")

    def test_every_sdk_dump_is_taken_as_it_is(self):
        dumps = sorted(SDK_DUMPS.glob("*.json"))
        self.assertTrue(dumps, f"no SDK dumps in {SDK_DUMPS}")
        for path in dumps:
            dump = json.loads(path.read_text())
            if dump.get("type") != "message":
                continue
            sid = self.session()
            self.ctx.append(sid, [{"type": "user", "content": "go"}])
            self.ctx.append_response(sid, dump)

    def test_events_resume_after_a_seq_in_order_without_gaps(self):
        sid = self.session()
        self.ctx.append(sid, [{"type": "user", "content": f"m{i}"} for i in range(5)])
        seen = []
        done = threading.Event()

        def follow():
            for event in self.ctx.events(sid, after_seq=2):
                if event["kind"] == "records_appended":
                    seen.extend(r["seq"] for r in event["records"])
                if len(seen) >= 6:
                    done.set()
                    return

        reader = threading.Thread(target=follow, daemon=True)
        reader.start()
        self.ctx.append(sid, [{"type": "user", "content": f"n{i}"} for i in range(3)])
        self.assertTrue(done.wait(20), f"saw {seen}")
        self.assertEqual(seen, [3, 4, 5, 6, 7, 8])

    def test_a_script_that_keeps_an_events_iterator_exits(self):
        sid = self.session()
        self.ctx.append(sid, [{"type": "user", "content": "hi"}])
        script = (
            "import ctxd_client, sys\n"
            f"c = ctxd_client.connect(socket={self.ctx.socket!r}, start=False)\n"
            f"ev = c.events({sid!r}, after_seq=0)\n"
            "for e in ev:\n"
            "    break\n"
            "print('done')\n"
        )
        import subprocess
        import sys

        # Without a bound a hang would hold the suite: the script has 20 s to exit.
        run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=20)
        self.assertEqual(run.returncode, 0, run.stderr)
        self.assertEqual(run.stdout.strip(), "done")

    def test_typed_methods_call_the_method_of_their_name(self):
        created = self.ctx.session_create(cwd=self.home, no_git=True, title="typed")
        sid = created["session"]["session_id"]
        self.assertEqual(self.ctx.session_get(session_id=sid)["session"]["title"], "typed")
        appended = self.ctx.transcript_append(session_id=sid, records=[{"type": "user", "content": "hi"}])
        self.assertEqual(appended["appended"][0]["seq"], 1)
        self.assertEqual(self.ctx.daemon_ping(), {"pong": True})

    def test_every_method_of_the_document_has_its_typed_method(self):
        import typing

        doc = self.ctx.call("rpc.discover")
        for m in doc["methods"]:
            name = m["name"].replace(".", "_")
            fn = getattr(ctxd_client.Client, name, None)
            self.assertIsNotNone(fn, f"no method {name}")
            typing.get_type_hints(fn)
            want = {p["name"] for p in m["params"]}
            import inspect

            got = {p.rstrip("_") for p in inspect.signature(fn).parameters if p != "self"}
            self.assertEqual(got, want, name)

    def test_send_stream_yields_the_turn_as_it_comes_and_records_the_answer(self):
        import asyncio

        server, url = scripted_messages_api(TURN_EVENTS)
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        sid = self.session()
        provider = {"kind": "anthropic", "base_url": url, "api_key_env": STREAM_KEY_VAR}
        self.ctx.session_update(session_id=sid, settings={"provider": provider})
        self.ctx.append(sid, [{"type": "user", "content": "hi"}])
        events = list(self.ctx.send_stream(sid))
        self.assertEqual(events[0]["kind"], "started")
        self.assertEqual([e["event"] for e in events if e["kind"] == "event"], TURN_EVENTS)
        self.assertEqual(events[-1]["kind"], "finished")
        answer = events[-1]["response"]["message"]
        self.assertEqual(answer["content"], [{"type": "text", "text": "Hello there."}])
        last = self.ctx.call("transcript.read", session_id=sid)["records"][-1]
        self.assertEqual(last["content"], answer["content"])

        async def second_turn():
            actx = await ctxd_client.connect_async(home=self.home, start=False)
            await actx.append(sid, [{"type": "user", "content": "again"}])
            return [e["kind"] async for e in actx.send_stream(sid)]

        kinds = asyncio.run(second_turn())
        self.assertEqual((kinds[0], kinds[-1]), ("started", "finished"))
        # A refused turn is an RpcError before any event: this session has no provider.
        with self.assertRaises(ctxd_client.RpcError):
            list(self.ctx.send_stream(self.session()))

    def test_the_asyncio_client_calls_and_follows_events(self):
        import asyncio

        async def main():
            actx = await ctxd_client.connect_async(home=self.home, start=False)
            sid = (await actx.session_create(cwd=self.home, no_git=True))["session"]["session_id"]
            await actx.append(sid, [{"type": "user", "content": f"a{i}"} for i in range(3)])
            seqs = []
            async for event in actx.events(sid, after_seq=0):
                if event["kind"] == "records_appended":
                    seqs += [r["seq"] for r in event["records"]]
                if len(seqs) >= 3:
                    break
            compiled = await actx.compile(sid)
            return seqs, compiled

        seqs, compiled = asyncio.run(main())
        self.assertEqual(seqs, [1, 2, 3])
        self.assertEqual(compiled.body["messages"][0]["role"], "user")


if __name__ == "__main__":
    unittest.main()
