// The client's types; every method's params and result come from types.d.ts, generated
// from protocol/openrpc.json.
import type { Methods, SessionNotification, TurnEvent } from "./types.js";

export * from "./types.js";

export type MethodName = keyof Methods;
export type ParamsOf<M extends MethodName> = Methods[M]["params"];
export type ResultOf<M extends MethodName> = Methods[M]["result"];

export declare class RpcError extends Error {
  method: string;
  code: number;
  data?: unknown;
}

export declare class ConnectError extends Error {}

export interface Compiled {
  /** The request body to send as it is. */
  body: { [key: string]: unknown };
  /** HTTP headers the body needs (beta headers). */
  headers: { [key: string]: string };
  metadata: ResultOf<"context.compile">["metadata"];
}

export interface ToolResult {
  tool_use_id: string;
  content: string | Array<{ [key: string]: unknown }>;
  is_error?: boolean;
}

export declare class Client {
  constructor(socket: string, options?: { timeoutMs?: number });
  readonly socket: string;
  call<M extends MethodName>(method: M, params?: ParamsOf<M>): Promise<ResultOf<M>>;
  append(sessionId: string, records: ParamsOf<"transcript.append">["records"], params?: Partial<ParamsOf<"transcript.append">>): Promise<ResultOf<"transcript.append">>;
  appendResponse(sessionId: string, message: object): Promise<ResultOf<"transcript.append">>;
  appendToolResults(sessionId: string, results: ToolResult[]): Promise<ResultOf<"transcript.append">>;
  compile(sessionId: string, params?: Partial<ParamsOf<"context.compile">>): Promise<Compiled>;
  events(sessionId: string, options?: { afterSeq?: number; includeRecords?: boolean }): AsyncGenerator<SessionNotification, void, undefined>;
  sendStream(sessionId: string): AsyncGenerator<TurnEvent, void, undefined>;
}

export declare function defaultSocket(env?: Record<string, string | undefined>): string;
export declare function findCtxd(env?: Record<string, string | undefined>): string;
export declare function connect(options?: { socket?: string; home?: string; start?: boolean }): Promise<Client>;
