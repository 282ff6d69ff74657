// A Node client for ctxd: calls over HTTP on the daemon's Unix socket, events over a
// WebSocket on the same socket (the `ws` package, loaded at the first stream). Types: index.d.ts, with every
// method's params and result generated from protocol/openrpc.json (types.d.ts).

import { spawn } from "node:child_process";
import { closeSync, existsSync, fchmodSync, mkdirSync, openSync } from "node:fs";
import { request } from "node:http";
import { delimiter, dirname, isAbsolute, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

/** The `ws` package, loaded at the first stream, not at import: `npm install DIR` (npm 7
 * and later) links a directory without installing its dependencies, and Node resolves
 * `ws` from the link's target, where there is none. Calls over HTTP need nothing; for
 * streams, `ws` is taken from beside this file, else from the working directory's
 * project (`npm install DIR ws`). */
let wsModule = null;
async function loadWebSocket() {
  if (wsModule) return wsModule;
  try {
    wsModule = (await import("ws")).default;
  } catch {
    try {
      const local = createRequire(join(process.cwd(), "package.json")).resolve("ws");
      wsModule = (await import(pathToFileURL(local).href)).default;
    } catch {
      throw new ConnectError(
        "events need the `ws` package, which is not installed beside ctxd-client: install the package " +
          "from its tarball (`npm install ctxd-client-*.tgz`, made by scripts/install) or with " +
          "`npm install --install-links DIR`, or add `ws` to this project (`npm install ws`)",
      );
    }
  }
  return wsModule;
}

/** How long `connect` waits for a daemon it started to answer, in ms. */
const START_TIMEOUT_MS = 10_000;

/** The daemon answered a call with a JSON-RPC error. */
export class RpcError extends Error {
  constructor(method, error) {
    super(`${method}: ${error.message} (code ${error.code})`);
    this.name = "RpcError";
    this.method = method;
    this.code = error.code;
    this.data = error.data;
  }
}

/** No daemon answers on the socket, and none could be started. */
export class ConnectError extends Error {
  constructor(message) {
    super(message);
    this.name = "ConnectError";
  }
}

/** Where `ctx` and `ctxd` look: $CTXD_SOCKET, else $CTXD_HOME/ctxd.sock, else
 * $XDG_RUNTIME_DIR/ctxd/ctxd.sock, else /tmp/ctxd-UID/ctxd.sock. */
export function defaultSocket(env = process.env) {
  if (env.CTXD_SOCKET) return env.CTXD_SOCKET;
  if (env.CTXD_HOME) return join(env.CTXD_HOME, "ctxd.sock");
  const runtime = env.XDG_RUNTIME_DIR;
  if (runtime && isAbsolute(runtime)) return join(runtime, "ctxd", "ctxd.sock");
  return `/tmp/ctxd-${process.geteuid()}/ctxd.sock`;
}

/** $CTXD_BIN, else `ctxd` on PATH, else ~/.local/bin/ctxd (where scripts/install puts
 * it by default, often not on PATH). */
export function findCtxd(env = process.env) {
  if (env.CTXD_BIN) return env.CTXD_BIN;
  for (const dir of (env.PATH ?? "").split(delimiter)) {
    const candidate = join(dir, "ctxd");
    if (dir && existsSync(candidate)) return candidate;
  }
  const local = env.HOME ? join(env.HOME, ".local", "bin", "ctxd") : null;
  if (local && existsSync(local)) return local;
  throw new ConnectError("no ctxd binary on PATH or in ~/.local/bin: run scripts/install, or set CTXD_BIN");
}

/** An Anthropic SDK `Message` is plain JSON already; a class instance with `toJSON`
 * (or any object) is taken as its JSON form. */
function dump(message) {
  if (message === null || typeof message !== "object") {
    throw new TypeError("expected an Anthropic Message object");
  }
  return JSON.parse(JSON.stringify(message));
}

export class Client {
  constructor(socket, { timeoutMs = 600_000 } = {}) {
    this.socket = socket;
    this.timeoutMs = timeoutMs;
    this.nextId = 0;
  }

  /** Any RPC method, params by name; its result. Rejects with `RpcError`. */
  call(method, params = {}) {
    const body = JSON.stringify({ jsonrpc: "2.0", id: ++this.nextId, method, params });
    return new Promise((resolve, reject) => {
      const req = request(
        {
          socketPath: this.socket,
          path: "/",
          method: "POST",
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
          timeout: this.timeoutMs,
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () => {
            let reply;
            try {
              reply = JSON.parse(Buffer.concat(chunks).toString("utf8"));
            } catch (e) {
              reject(new Error(`${method}: the daemon's answer is not JSON (HTTP ${res.statusCode})`));
              return;
            }
            if (reply.error) reject(new RpcError(method, reply.error));
            else resolve(reply.result);
          });
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`${method}: no answer within ${this.timeoutMs} ms`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  /** `transcript.append`: records in ctxd's shape (docs/records.md). */
  append(sessionId, records, params = {}) {
    return this.call("transcript.append", { session_id: sessionId, records, ...params });
  }

  /** Appends a model response exactly as it came (an Anthropic SDK `Message`). */
  appendResponse(sessionId, message) {
    return this.append(sessionId, [{ type: "assistant", message: dump(message) }]);
  }

  /** Appends the results of the tools the last response called, as one user record:
   * each `{tool_use_id, content, is_error?}`. */
  appendToolResults(sessionId, results) {
    const content = results.map((r) => ({ type: "tool_result", ...r }));
    return this.append(sessionId, [{ type: "user", content }]);
  }

  /** `context.compile`: the body to send next, the headers it needs, and the metadata. */
  async compile(sessionId, params = {}) {
    const compiled = await this.call("context.compile", { session_id: sessionId, ...params });
    const metadata = compiled.metadata;
    return { body: compiled.request, headers: { ...(metadata.cache?.headers ?? {}) }, metadata };
  }

  /** The session's events, as `session.event` notifications carry them. With `afterSeq`,
   * first every record after it (from the store), then live; a subscription the daemon
   * ends for falling behind is taken up again from the last seq delivered, so records
   * arrive in order, none twice and none missing. Ends when the session is deleted or
   * the iterator is closed. */
  async *events(sessionId, { afterSeq, includeRecords = false } = {}) {
    let last = afterSeq;
    for (;;) {
      const stream = this.#subscribe(sessionId, last, includeRecords);
      let resume = false;
      try {
        for await (const event of stream) {
          if (event.kind === "lagged" && event.ended) {
            last = event.last_seq;
            resume = true;
            break;
          }
          if (event.kind === "records_appended" && event.records?.length) {
            last = Math.max(...event.records.map((r) => r.seq));
          }
          yield event;
          if (event.kind === "session_deleted") return;
        }
      } finally {
        await stream.return?.();
      }
      if (!resume) return;
    }
  }

  /** `context.send_stream`: ctxd compiles, calls the session's provider and appends its
   * answer; this yields the turn's events as they come (`started`, each provider
   * `event`, `retrying`, `recovering`), and last `finished` (its `response` is what
   * `context.send` answers) or `failed` (nothing was appended). A turn refused before
   * it starts throws an RpcError. Leaving the loop early cancels the turn. */
  async *sendStream(sessionId) {
    for await (const event of this.#stream("context.send_stream", { session_id: sessionId })) {
      yield event;
      if (event.kind === "finished" || event.kind === "failed") return;
    }
  }

  async *#subscribe(sessionId, afterSeq, includeRecords) {
    const params = { session_id: sessionId, include_records: includeRecords };
    if (afterSeq !== undefined && afterSeq !== null) params.after_seq = afterSeq;
    yield* this.#stream("session.subscribe", params);
  }

  async *#stream(method, params) {
    const WebSocket = await loadWebSocket();
    const ws = new WebSocket(`ws+unix://${this.socket}:/`, { maxPayload: 256 * 1024 * 1024 });
    const queue = [];
    let wake = null;
    const push = (item) => {
      queue.push(item);
      wake?.();
    };
    ws.on("message", (data) => push({ data }));
    ws.on("close", () => push({ closed: true }));
    ws.on("error", (error) => push({ error }));
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    ws.send(JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }));
    try {
      for (;;) {
        if (queue.length === 0) {
          await new Promise((resolve) => (wake = resolve));
          wake = null;
          continue;
        }
        const item = queue.shift();
        if (item.error) throw item.error;
        if (item.closed) return;
        const note = JSON.parse(item.data.toString("utf8"));
        if (note.id === 1) {
          if (note.error) throw new RpcError(method, note.error);
          continue;
        }
        if (note.params?.result) yield note.params.result;
      }
    } finally {
      ws.close();
    }
  }
}

async function answers(socket) {
  try {
    await new Client(socket, { timeoutMs: 2_000 }).call("daemon.ping");
    return true;
  } catch {
    return false;
  }
}

/** A client of the daemon on `socket` (default: `defaultSocket()`, or the one in
 * `home`). When nothing answers there and `start` is set, starts `ctxd` in the
 * background on that socket (its log in `ctxd.log` beside it), as `ctx` does. */
export async function connect({ socket, home, start = true } = {}) {
  const path = socket ?? (home ? join(home, "ctxd.sock") : defaultSocket());
  if (await answers(path)) return new Client(path);
  if (!start) throw new ConnectError(`no daemon answers on ${path}`);
  const dir = dirname(path);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The log names the user's sessions and files: 0600, narrowed even when it exists.
  const log = openSync(join(dir, "ctxd.log"), "a", 0o600);
  fchmodSync(log, 0o600);
  // The daemon rotates its log itself (bounded however long it runs); stderr goes to
  // the same file for what comes before the log starts.
  const args = ["--socket", path, "--log-file", join(dir, "ctxd.log"), ...(home ? ["--home", home] : [])];
  const child = spawn(findCtxd(), args, { detached: true, stdio: ["ignore", "ignore", log] });
  closeSync(log);
  let exited = null;
  child.on("exit", (code) => (exited = code));
  child.on("error", (e) => (exited = e.message));
  child.unref();
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (await answers(path)) return new Client(path);
    if (exited !== null) {
      if (await answers(path)) return new Client(path);
      throw new ConnectError(`ctxd exited (${exited}); see ${join(dir, "ctxd.log")}`);
    }
    await sleep(25);
  }
  throw new ConnectError(`ctxd did not answer on ${path} within ${START_TIMEOUT_MS / 1000} s; see ${join(dir, "ctxd.log")}`);
}
