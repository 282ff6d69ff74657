#!/usr/bin/env node
// A ctxd client over one WebSocket (the `ws` package) on the daemon's Unix socket:
// calls and the event stream share the connection, so the events this client causes
// arrive marked `own: true`.
//
// It shakes hands, creates a session, subscribes to it, appends one agent turn (a
// prompt, a response with usage and a tool call, the tool's result, the final answer),
// compiles the next request and prints where the context window stands.
//
//   npm install            # in this directory: installs `ws`
//   node example.js [--socket PATH] [--cwd DIR] [--keep]
//
// The socket defaults to where `ctx` looks (see defaultSocket).
"use strict";

const path = require("path");
const WebSocket = require("ws");

const PROTOCOL_VERSION = "1.1";

// Where `ctx` and `ctxd` look: $CTXD_SOCKET, else $CTXD_HOME/ctxd.sock, else
// $XDG_RUNTIME_DIR/ctxd/ctxd.sock, else /tmp/ctxd-UID/ctxd.sock.
function defaultSocket() {
  const env = process.env;
  if (env.CTXD_SOCKET) return env.CTXD_SOCKET;
  if (env.CTXD_HOME) return path.join(env.CTXD_HOME, "ctxd.sock");
  if (env.XDG_RUNTIME_DIR) return path.join(env.XDG_RUNTIME_DIR, "ctxd", "ctxd.sock");
  return `/tmp/ctxd-${process.getuid()}/ctxd.sock`;
}

function parseArgs(argv) {
  const args = {
    socket: defaultSocket(),
    cwd: process.cwd(),
    keep: false,
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--socket") args.socket = argv[++i];
    else if (argv[i] === "--cwd") args.cwd = argv[++i];
    else if (argv[i] === "--keep") args.keep = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (!require("fs").existsSync(args.socket)) {
    throw new Error(`no daemon at ${args.socket}: start one (\`ctx demo\` or \`ctxd\`), or pass --socket`);
  }
  return args;
}

// JSON-RPC over one WebSocket: calls resolve by id, notifications go to `onEvent`.
class Rpc {
  constructor(socketPath, onEvent) {
    this.ws = new WebSocket(`ws+unix://${socketPath}:/`);
    this.nextId = 1;
    this.pending = new Map();
    this.onEvent = onEvent;
    this.ws.on("message", (data) => {
      const msg = JSON.parse(data);
      if (msg.id !== undefined && this.pending.has(msg.id)) {
        const { resolve, reject, method } = this.pending.get(msg.id);
        this.pending.delete(msg.id);
        if (msg.error) reject(new Error(`${method}: ${msg.error.message} (${msg.error.code})`));
        else resolve(msg.result);
      } else if (msg.method === "session.event") {
        this.onEvent(msg.params.result);
      }
    });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once("open", resolve);
      this.ws.once("error", reject);
    });
  }

  async call(method, params) {
    await this.opened;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  close() {
    this.ws.close();
  }
}

function turn(cwd) {
  return [
    { type: "user", content: "What does the README say?" },
    {
      type: "assistant",
      message_id: "msg_example_1",
      model: "claude-sonnet-4-5",
      usage: { input_tokens: 1800, output_tokens: 45, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      content: [
        { type: "text", text: "Let me read it." },
        { type: "tool_use", id: "toolu_example_1", name: "Read", input: { file_path: path.join(cwd, "README.md") } },
      ],
    },
    {
      type: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_example_1", content: "# example\nA project used by the ctxd client example.\n" },
      ],
    },
    { type: "assistant", content: "It describes an example project." },
  ];
}

function picture(meta) {
  const c = meta.context;
  const width = 40;
  const filled = Math.min(width, Math.round((width * c.effective_tokens) / Math.max(c.effective_window, 1)));
  const n = (x) => x.toLocaleString("en-US");
  const lines = [
    `context: [${"#".repeat(filled)}${".".repeat(width - filled)}] ${n(c.effective_tokens)} / ${n(c.effective_window)} usable tokens ` +
      `(${100 - c.percent_left}% used, ${c.percent_left}% left; usable: the model's window less what is kept for the answer)`,
    `  autocompact at ${n(c.autocompact_threshold)}, warning at ${n(c.warning_threshold)}, blocking at ${n(c.blocking_limit)}`,
    `  messages: ${meta.message_count}, request: ${n(meta.request_bytes)} bytes, sha256 ${meta.request_sha256.slice(0, 16)}`,
    "  system sections:",
  ];
  for (const s of meta.system_sections) {
    lines.push(`    ${s.name.padEnd(32)} ${s.class.padEnd(14)} ${String(s.chars).padStart(6)} chars`);
  }
  return lines.join("\n");
}

// What fills the window (`context.usage`, Claude Code's /context), one line each.
function byCategory(usage) {
  const n = (x) => x.toLocaleString("en-US");
  const lines = [`  window by category (${usage.model}, ${n(usage.context_window)} tokens):`];
  for (const c of usage.categories) {
    lines.push(`    ${c.name.padEnd(20)} ${n(c.tokens).padStart(9)} tokens ${c.percent.toFixed(1).padStart(5)}%`);
  }
  return lines.join("\n");
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  let sawCompiled;
  const compiledSeen = new Promise((resolve) => (sawCompiled = resolve));
  const rpc = new Rpc(args.socket, (ev) => {
    const detail = ev.kind === "records_appended" ? ` ${ev.records.length} records` : "";
    console.log(`event seq=${ev.seq} ${ev.kind}${detail}${ev.own ? " (own)" : ""}`);
    if (ev.kind === "compiled") sawCompiled();
  });
  const hello = await rpc.call("daemon.initialize", {
    client_info: { name: "ctxd-example-node", version: "1.0" },
    protocol_version: PROTOCOL_VERSION,
  });
  console.log(`connected to ${hello.server_info.name} ${hello.server_info.version}, protocol ${hello.protocol_version}`);
  const { session } = await rpc.call("session.create", { cwd: path.resolve(args.cwd) });
  const sid = session.session_id;
  console.log(`session ${sid}`);
  const subscription = await rpc.call("session.subscribe", { session_id: sid, after_seq: 0 });
  const appended = await rpc.call("transcript.append", { session_id: sid, records: turn(args.cwd) });
  console.log(`appended ${appended.appended.length} records (last seq ${appended.appended.at(-1).seq})`);
  const compiled = await rpc.call("context.compile", { session_id: sid });
  const timeout = setTimeout(() => {
    console.error("no compiled event within 30 s");
    process.exit(1);
  }, 30000);
  await compiledSeen;
  clearTimeout(timeout);
  console.log(`unsubscribed: ${await rpc.call("session.unsubscribe", { subscription })}`);
  console.log(picture(compiled.metadata));
  console.log(byCategory(await rpc.call("context.usage", { session_id: sid })));
  if (!args.keep) await rpc.call("session.delete", { session_id: sid });
  rpc.close();
}

main().catch((e) => {
  console.error(`error: ${e.message}`);
  process.exit(1);
});
