import type { ChatCalls, ExecutorCalls, PlannerCalls } from './generated/routes.js';
import type { ProblemName, Problems } from './generated/problems.js';
import type { ChatTurnAccepted, ChatTurnReply, ChatTurnRequest, DecisionReply, DecisionRequest, PlanDetail, TimelineEntry } from './index.js';
import type { EventStream } from './sse.js';

export type { EventStream } from './sse.js';

/** Options of one call, beside its path parameters and its body or query. */
export interface CallInit<Query = never> {
  /** Extra request headers (e.g. `Prefer: respond-async`). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** The query parameters of a route that also takes a body. */
  query?: Query;
}

/** An RFC 9457 problem as an `ApiError` holds it: any kind's body (narrow it with
 * `isProblem(error, kind)`), or whatever a non-Parley answer had. */
export interface AnyProblem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  [member: string]: unknown;
}

/** An answer other than 2xx: the status and the RFC 9457 problem (`detail` is readable). */
export declare class ApiError<P extends AnyProblem = AnyProblem> extends Error {
  constructor(status: number, problem: Record<string, unknown> | null);
  readonly status: number;
  /** The problem+json body: `type` (its kind, docs/problems.md), `title`, `status`, `detail`,
   * and the kind's own members (`turn-running`: `plan_id`, `plan_status`). */
  readonly problem: P;
  /** The kind its `type` names (`turn-running`, …), or null (`about:blank`, or not Parley's). */
  readonly kind: ProblemName | null;
}

/** Whether `error` is an `ApiError` of the kind `name` (any kind, without one); narrows its
 * `problem` to that kind's body. */
export declare function isProblem<N extends ProblemName>(error: unknown, name: N): error is ApiError<Problems[N]>;
export declare function isProblem(error: unknown): error is ApiError;

/** The request never got an answer (offline, DNS, CORS, a dropped connection). */
export declare class NetworkError extends Error {}

export interface ParleyOptions {
  /** The chat function's URL. */
  chat: string;
  /** The agent_planner function's URL (plans, approvals, cancel). */
  planner?: string;
  /** The agent_executor function's URL (service calls only). */
  executor?: string;
  /** The user's Supabase access token, or a function returning the current one (called for
   * every request, so a refreshed token is used at once). */
  accessToken: string | (() => string | null | Promise<string | null>);
  /** Defaults to the global `fetch`. */
  fetch?: typeof fetch;
  /** Called on every 401: the token expired or was revoked (sign in again). */
  onUnauthorized?: (error: ApiError) => void;
}

type SendBody = Omit<ChatTurnRequest, 'stream' | 'client_message_id'> & { client_message_id?: string };

export declare class ParleyClient {
  constructor(options: ParleyOptions);
  /** Every route of the chat function: sessions, messages, the timeline, turns, dashboards. */
  readonly chat: ChatCalls;
  /** Every route of the agent_planner function: plans, approvals, cancel (and run, internal). */
  readonly planner: PlannerCalls;
  /** Every route of the agent_executor function (internal: the service-role key). */
  readonly executor: ExecutorCalls;
  /** Send a message and get the ids at once (`Prefer: respond-async` → 202); the turn's
   * progress comes over Realtime (`watchSession`). `client_message_id` defaults to a new UUID:
   * keep it to retry after a network error. */
  send(body: SendBody, init?: CallInit): Promise<ChatTurnAccepted | ChatTurnReply>;
  /** Decide an approval, answered at once (`Prefer: respond-async`: 202 once the decision is
   * recorded and the plan handed on); follow the resumed plan with `watch.turnEnd(planId,
   * pause.seq)`. (`planner.decideApproval` waits for the resumed plan instead.) */
  decide(planId: string, approvalId: string, body: DecisionRequest, init?: CallInit): Promise<DecisionReply>;
  /** Send a message and read the turn's events as the function streams them (SSE). A resend
   * (the same `client_message_id`) streams nothing: it answers JSON — the turn as it stands
   * (200), or where to watch it while it runs (202). */
  sendStream(body: SendBody, init?: CallInit): Promise<EventStream | ChatTurnReply | ChatTurnAccepted>;
  /** Every timeline entry after `afterSeq`, in `seq` order (page by page). */
  timeline(sessionId: string, afterSeq?: number, init?: CallInit): Promise<TimelineEntry[]>;
  /** Every plan of the session in full, oldest first (page by page). */
  sessionPlans(sessionId: string, afterSeq?: number, init?: CallInit): Promise<PlanDetail[]>;
  /** One request to a function, for what the typed calls do not cover. */
  request(
    fn: 'chat' | 'planner' | 'executor',
    method: string,
    path: string,
    request?: CallInit<Record<string, unknown>> & { body?: unknown },
  ): Promise<unknown>;
}
