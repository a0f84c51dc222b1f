// The functions' HTTP routes, called with the user's access token. Errors are RFC 9457
// problem+json: an `ApiError` carries the status and the problem (its `detail` is readable).

export class ApiError extends Error {
  constructor(status, problem) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
  }
}

/** The request never got an answer (offline, DNS, CORS, a dropped connection). */
export class NetworkError extends Error {}

const TIMELINE_PAGE = 500;
const PLANS_PAGE = 100;

export class Api {
  constructor(config, auth) {
    this.functions = config.functions;
    this.auth = auth;
    this.onUnauthorized = () => {};
  }

  async request(fn, method, path, { body, query, headers } = {}) {
    const url = new URL(this.functions[fn] + path);
    for (const [key, value] of Object.entries(query || {})) {
      if (value !== undefined && value !== null) url.searchParams.set(key, String(value));
    }
    let response;
    try {
      response = await fetch(url, {
        method,
        headers: {
          Authorization: `Bearer ${this.auth.token}`,
          ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          ...headers,
        },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    } catch (error) {
      throw new NetworkError(`Could not reach the ${fn} function (${error.message})`);
    }
    if (response.status === 204) return null;
    const data = await response.json().catch(() => null);
    if (!response.ok) {
      if (response.status === 401) this.onUnauthorized();
      throw new ApiError(response.status, data);
    }
    return data;
  }

  // Sessions (chat function)
  listSessions(includeArchived = false) {
    return this.request('chat', 'GET', '/sessions', { query: { include_archived: includeArchived } });
  }
  createSession(title) {
    return this.request('chat', 'POST', '/sessions', { body: title ? { title } : {} });
  }
  getSession(id) {
    return this.request('chat', 'GET', `/sessions/${id}`);
  }
  updateSession(id, changes) {
    return this.request('chat', 'PATCH', `/sessions/${id}`, { body: changes });
  }
  deleteSession(id) {
    return this.request('chat', 'DELETE', `/sessions/${id}`);
  }
  forkSession(id, atMessageId) {
    return this.request('chat', 'POST', `/sessions/${id}/fork`, { body: { at_message_id: atMessageId } });
  }

  /** Every timeline entry after `afterSeq`, in `seq` order (page by page). */
  async timeline(id, afterSeq = 0) {
    const entries = [];
    for (;;) {
      const page = await this.request('chat', 'GET', `/sessions/${id}/timeline`, {
        query: { after_seq: afterSeq, limit: TIMELINE_PAGE },
      });
      entries.push(...page.entries);
      if (page.entries.length < TIMELINE_PAGE) return entries;
      afterSeq = page.last_seq;
    }
  }

  /** Every plan of the session in full (as `plan()` gives one), oldest first (page by page). */
  async sessionPlans(id, afterSeq = 0) {
    const plans = [];
    for (;;) {
      const page = await this.request('chat', 'GET', `/sessions/${id}/plans`, {
        query: { after_seq: afterSeq, limit: PLANS_PAGE },
      });
      plans.push(...page.plans);
      if (page.plans.length < PLANS_PAGE) return plans;
      afterSeq = page.last_seq;
    }
  }

  /**
   * Send a message. `clientMessageId` makes a resend safe: the same id returns the original
   * turn instead of storing the message twice. `Prefer: respond-async` asks for 202 with the
   * ids at once (progress then comes over Realtime); a chat function that waits for the turn
   * answers 200 at its end instead: both carry `session_id`, `message_id` and `plan_id`.
   */
  send({ sessionId, message, clientMessageId }) {
    return this.request('chat', 'POST', '/chat', {
      body: { session_id: sessionId, message, client_message_id: clientMessageId },
      headers: { Prefer: 'respond-async' },
    });
  }

  // Plans (planner function)
  plan(planId) {
    return this.request('planner', 'GET', `/plans/${planId}`);
  }
  decide(planId, approvalId, decision, text) {
    return this.request('planner', 'POST', `/plans/${planId}/approvals/${approvalId}`, {
      body: text ? { decision, text } : { decision },
    });
  }
  cancel(planId) {
    return this.request('planner', 'POST', `/plans/${planId}/cancel`);
  }

  // Operators
  dashboards(days = 30) {
    return this.request('chat', 'GET', '/dashboards/daily', { query: { days } });
  }
}
