// ctxd-client against a real daemon: CTXD_BIN names the binary (the Rust suite sets it).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer } from "node:http";

import { connect, ConnectError, RpcError } from "ctxd-client";

const home = mkdtempSync(join(tmpdir(), "ctxd-ts-"));
// The SDK's own dumps of every message kind (tests/fixtures/sdk in the repository).
const sdkDumps = process.env.CTXD_SDK_DUMPS;
let ctx;

before(async () => {
  // The daemon connect() starts inherits it: the scripted provider's key.
  process.env.CTXD_TS_TEST_KEY = "sk-ts-test";
  ctx = await connect({ home });
});

after(async () => {
  try {
    await ctx.call("daemon.shutdown");
  } finally {
    rmSync(home, { recursive: true, force: true });
  }
});

const session = async () => (await ctx.call("session.create", { cwd: home, no_git: true })).session.session_id;

const message = (text, { tool, id = "msg_1" } = {}) => ({
  id,
  type: "message",
  role: "assistant",
  model: "claude-sonnet-4-5",
  content: [
    { type: "text", text, citations: null },
    ...(tool ? [{ type: "tool_use", id: tool, name: "Read", input: { file_path: "/tmp/x" }, caller: { type: "direct" } }] : []),
  ],
  stop_reason: tool ? "tool_use" : "end_turn",
  stop_sequence: null,
  usage: { input_tokens: 120, output_tokens: 30, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: "standard" },
});

test("connect finds the daemon it started, and without one and without start says so", async () => {
  const again = await connect({ home, start: false });
  assert.deepEqual(await again.call("daemon.ping"), { pong: true });
  // The log of the daemon it started is the user's alone.
  assert.equal(statSync(join(home, "ctxd.log")).mode & 0o777, 0o600);
  const empty = mkdtempSync(join(tmpdir(), "ctxd-ts-empty-"));
  await assert.rejects(connect({ home: empty, start: false }), ConnectError);
  rmSync(empty, { recursive: true, force: true });
});

test("an error answer is an RpcError naming the field", async () => {
  const e = await ctx.call("session.create", { cwd: home, model: { context_window: "big" } }).catch((e) => e);
  assert.ok(e instanceof RpcError, String(e));
  assert.equal(e.code, -32602);
  assert.ok(e.data.field);
});

test("a turn with a tool compiles, and the responses go in as they came", async () => {
  const sid = await session();
  await ctx.append(sid, [{ type: "user", content: "Read /tmp/x" }]);
  const first = await ctx.compile(sid);
  assert.equal(first.body.messages.at(-1).role, "user");
  assert.equal(typeof first.headers, "object");
  await ctx.appendResponse(sid, message("Reading.", { tool: "toolu_1" }));
  await ctx.appendToolResults(sid, [{ tool_use_id: "toolu_1", content: "hello" }]);
  await ctx.appendResponse(sid, message("It says hello.", { id: "msg_2" }));
  const { body } = await ctx.compile(sid);
  assert.deepEqual(body.messages.map((m) => m.role), ["user", "assistant", "user", "assistant"]);
  assert.deepEqual(body.messages[1].content.at(-1).caller, { type: "direct" });
  assert.equal(body.messages[2].content[0].type, "tool_result");
});

test("every SDK dump is taken as it is", async () => {
  assert.ok(sdkDumps, "CTXD_SDK_DUMPS names the folder of the SDK's dumps");
  const dumps = readdirSync(sdkDumps).filter((f) => f.endsWith(".json"));
  assert.ok(dumps.length > 0);
  for (const file of dumps) {
    const dump = JSON.parse(readFileSync(join(sdkDumps, file), "utf8"));
    if (dump.type !== "message") continue;
    const sid = await session();
    await ctx.append(sid, [{ type: "user", content: "go" }]);
    await ctx.appendResponse(sid, dump);
  }
});

test("sendStream yields the turn as it comes and the answer is recorded", async () => {
  const events = [
    { type: "message_start", message: { id: "msg_ts", type: "message", role: "assistant", model: "m", content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 50, output_tokens: 1 } } },
    { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi from " } },
    { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "the stream." } },
    { type: "content_block_stop", index: 0 },
    { type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: 5 } },
    { type: "message_stop" },
  ];
  const body = events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`).join("");
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.end(body);
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const sid = await session();
    const provider = { kind: "anthropic", base_url: `http://127.0.0.1:${server.address().port}`, api_key_env: "CTXD_TS_TEST_KEY" };
    await ctx.call("session.update", { session_id: sid, settings: { provider } });
    await ctx.append(sid, [{ type: "user", content: "hi" }]);
    const seen = [];
    for await (const e of ctx.sendStream(sid)) seen.push(e);
    assert.equal(seen[0].kind, "started");
    assert.deepEqual(seen.filter((e) => e.kind === "event").map((e) => e.event), events);
    const last = seen.at(-1);
    assert.equal(last.kind, "finished");
    assert.deepEqual(last.response.message.content, [{ type: "text", text: "Hi from the stream." }]);
    const records = (await ctx.call("transcript.read", { session_id: sid })).records;
    assert.deepEqual(records.at(-1).content, last.response.message.content);
    // Refused before it starts: this session has no provider.
    const bare = await session();
    await assert.rejects(async () => {
      for await (const _ of ctx.sendStream(bare)) break;
    }, RpcError);
  } finally {
    server.close();
  }
});

test("events resume after a seq, in order, without gaps", async () => {
  const sid = await session();
  await ctx.append(sid, [0, 1, 2, 3, 4].map((i) => ({ type: "user", content: `m${i}` })));
  const seen = [];
  const follow = (async () => {
    for await (const event of ctx.events(sid, { afterSeq: 2 })) {
      if (event.kind === "records_appended") seen.push(...event.records.map((r) => r.seq));
      if (seen.length >= 6) return;
    }
  })();
  await ctx.append(sid, [0, 1, 2].map((i) => ({ type: "user", content: `n${i}` })));
  await follow;
  assert.deepEqual(seen, [3, 4, 5, 6, 7, 8]);
});
