// Typed calls for every route of Parley's three functions. The routes come from the functions'
// OpenAPI documents (src/generated/routes.js); their types from the same documents
// (src/generated/*.d.ts). Every call carries the user's access token; every error is an
// `ApiError` holding the RFC 9457 problem (its `detail` is written to be shown; its `type`
// names its kind: `isProblem(error, 'turn-running')`), or a `NetworkError` when no answer came.

import { problemTypes } from './generated/problems.js';
import { routes } from './generated/routes.js';
import { EventStream } from './sse.js';

const KIND_OF = new Map(Object.entries(problemTypes).map(([name, { type }]) => [type, name]));

/** An answer other than 2xx: the status and the problem+json body. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {Record<string, any> | null} problem
   */
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.name = 'ApiError';
    /** @type {number} */
    this.status = status;
    /** @type {Record<string, any>} */
    this.problem = problem || {};
  }

  /** The problem's kind (docs/problems.md): the name its `type` URI ends in, or null (none of
   * Parley's: `about:blank`, or an answer that was not Parley's). */
  get kind() {
    return KIND_OF.get(this.problem.type) ?? null;
  }
}

/**
 * Whether `error` is an `ApiError` — of the kind `name`, when given (`turn-running`,
 * `client-message-id-reused`, …: `problemTypes` lists them). With TypeScript it narrows
 * `error.problem` to that kind's body.
 * @param {unknown} error
 * @param {string} [name]
 */
export function isProblem(error, name) {
  if (!(error instanceof ApiError)) return false;
  if (name === undefined) return true;
  if (!Object.hasOwn(problemTypes, name)) throw new TypeError(`isProblem: no problem kind is called ${name}`);
  return error.problem.type === problemTypes[name].type;
}

/** The request never got an answer (offline, DNS, CORS, a dropped connection). */
export class NetworkError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'NetworkError';
  }
}

const PAGE = { entries: 500, plans: 100 }; // a page's size: the timeline's entries, a session's plans

/**
 * @typedef {object} ParleyOptions
 * @property {string} chat The chat function's URL.
 * @property {string} [planner] The agent_planner function's URL.
 * @property {string} [executor] The agent_executor function's URL (service calls only).
 * @property {string | (() => string | null | Promise<string | null>)} accessToken The user's
 *   Supabase access token, or a function returning the current one (called for every request).
 * @property {typeof fetch} [fetch] Defaults to the global `fetch`.
 * @property {(error: ApiError) => void} [onUnauthorized] Called on every 401 (the token expired
 *   or was revoked: sign in again).
 */

export class ParleyClient {
  /** @param {ParleyOptions} options */
  constructor({ chat, planner, executor, accessToken, fetch: fetchImpl, onUnauthorized }) {
    this.urls = { chat, planner, executor };
    this.accessToken = accessToken;
    this.fetch = fetchImpl || ((...args) => globalThis.fetch(...args));
    this.onUnauthorized = onUnauthorized || (() => {});
    this.chat = this.#calls('chat');
    this.planner = this.#calls('planner');
    this.executor = this.#calls('executor');
  }

  #calls(fn) {
    const calls = {};
    for (const [name, route] of Object.entries(routes[fn])) {
      calls[name] = (...args) => {
        const params = (route.params || []).map((param, i) => {
          const value = args[i];
          if (typeof value !== 'string' || !value) throw new TypeError(`${fn}.${name}: ${param} must be a non-empty string`);
          return value;
        });
        const rest = args.slice(params.length);
        const input = route.body || route.query ? rest.shift() : undefined;
        const init = rest.shift() || {};
        let path = route.path;
        route.params?.forEach((param, i) => { path = path.replace(`{${param}}`, encodeURIComponent(params[i])); });
        return this.request(fn, route.method, path, {
          ...init,
          body: route.body ? input ?? {} : undefined,
          query: route.body ? init.query : input,
        });
      };
    }
    return calls;
  }

  /**
   * One request to a function: JSON in and out; an SSE answer becomes an `EventStream`, other
   * text a string.
   * @param {'chat' | 'planner' | 'executor'} fn
   * @param {string} method
   * @param {string} path
   * @param {{ body?: unknown, query?: Record<string, unknown>, headers?: Record<string, string>,
   *   signal?: AbortSignal }} [request]
   */
  async request(fn, method, path, { body, query, headers, signal } = {}) {
    const base = this.urls[fn];
    if (!base) throw new TypeError(`ParleyClient: no URL for the ${fn} function`);
    const url = new URL(base.replace(/\/+$/, '') + path);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    const token = typeof this.accessToken === 'function' ? await this.accessToken() : this.accessToken;
    let response;
    try {
      response = await this.fetch(url, {
        method,
        headers: {
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          ...headers,
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
        signal,
      });
    } catch (error) {
      if (error?.name === 'AbortError') throw error;
      throw new NetworkError(`Could not reach the ${fn} function (${error.message})`, { cause: error });
    }
    const type = (response.headers.get('content-type') || '').split(';')[0].trim();
    if (response.ok && type === 'text/event-stream') return new EventStream(response);
    if (response.status === 204) return null;
    if (response.ok && type.startsWith('text/')) return response.text(); // a transcript's markdown
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      const error = new ApiError(response.status, data);
      if (response.status === 401) this.onUnauthorized(error);
      throw error;
    }
    return data;
  }

  /**
   * Send a message and get the ids at once (`Prefer: respond-async` → 202): the turn's
   * progress comes over Realtime (`watchSession`). `client_message_id` defaults to a new
   * UUID; keep it to retry after a network error — the same id returns the original turn
   * instead of storing the message twice. A chat function that waits for the turn answers 200
   * when it ends or pauses instead; both carry `session_id`, `message_id` and `plan_id`.
   * @param {{ session_id?: string | null, message: string, client_message_id?: string }} body
   * @param {{ signal?: AbortSignal }} [init]
   */
  send(body, init = {}) {
    const request = { client_message_id: crypto.randomUUID(), ...body };
    return this.chat.postChat(request, { ...init, headers: { Prefer: 'respond-async', ...init.headers } });
  }

  /**
   * Decide an approval and get the answer at once (`Prefer: respond-async` → 202 once the
   * decision is recorded and the plan handed on to resume): the plan's progress comes over
   * Realtime — `watch.turnEnd(planId, pause.seq)` resolves when it ends or pauses again.
   * `planner.decideApproval` is the route itself, which waits for the resumed plan.
   * @param {string} planId
   * @param {string} approvalId
   * @param {{ decision: 'approve' | 'reject' | 'answer', text?: string | null }} body
   * @param {{ signal?: AbortSignal, headers?: Record<string, string> }} [init]
   */
  decide(planId, approvalId, body, init = {}) {
    return this.planner.decideApproval(planId, approvalId, body, {
      ...init, headers: { Prefer: 'respond-async', ...init.headers },
    });
  }

  /**
   * Send a message and read the turn's events as they happen (server-sent events; a host that
   * buffers responses, like a Lambda function URL, delivers them only at the end). A resend
   * (the same `client_message_id`) answers JSON instead: the turn as it stands (200), or where
   * to watch it while it runs (202).
   * @param {{ session_id?: string | null, message: string, client_message_id?: string }} body
   * @param {{ signal?: AbortSignal }} [init]
   */
  sendStream(body, init = {}) {
    const request = { client_message_id: crypto.randomUUID(), ...body, stream: true };
    return this.chat.postChat(request, init);
  }

  /** Every timeline entry after `afterSeq`, in `seq` order (page by page). */
  timeline(sessionId, afterSeq = 0, init = {}) {
    return this.#everyPage((query) => this.chat.getTimeline(sessionId, query, init), 'entries', afterSeq);
  }

  /** Every plan of the session in full (as `planner.getPlan` gives one), oldest first. */
  sessionPlans(sessionId, afterSeq = 0, init = {}) {
    return this.#everyPage((query) => this.chat.listPlans(sessionId, query, init), 'plans', afterSeq);
  }

  /** The `key` list of every page after `afterSeq`, read until a page is not full. */
  async #everyPage(read, key, afterSeq) {
    const items = [];
    for (;;) {
      const page = await read({ after_seq: afterSeq, limit: PAGE[key] });
      items.push(...page[key]);
      if (page[key].length < PAGE[key]) return items;
      afterSeq = page.last_seq;
    }
  }
}
