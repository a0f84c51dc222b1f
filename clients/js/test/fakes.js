// Stand-ins for the unit tests of watchSession() and the React hook: a demo-shaped turn, the
// functions' tables as they stand after each commit, and a supabase-js channel.

export const SESSION = 's1';
export const PLAN = 'p1';
export const WORDS = 'm-words'; // the planner's message holding its tool calls: the words before them
export const ANSWER = 'm-answer';

/**
 * The demo turn's shape: the first call streams the words before its `create_plan` call (seq
 * 3–5, from a block reserved up to 18), its row is 19 and its `tool_call` 20; the steps run
 * (21–39); the synthesis streams the answer (41–43, block up to 56), stored at 57, `done` 59.
 */
export function turn() {
  const ev = (seq, type, data = {}) => ({ seq, type, data, session_id: SESSION, plan_id: PLAN, agent_id: null, ts: new Date(1_700_000_000_000 + seq).toISOString() });
  const words = ['(demo) ', 'Writing ', 'a plan.'];
  const answer = ['(demo) The tools ', 'returned: 4 tasks, ', '4 events.\n\nI am the demo model.'];
  const events = [
    ev(2, 'status_update', { status: 'thinking' }),
    ...words.map((text, i) => ev(3 + i, 'token', { text })),
    ev(20, 'tool_call', { message_id: WORDS, tool_call_id: 'c1', tool_name: 'create_plan', tool_args: {} }),
    ev(21, 'plan_created', { goal: 'g', steps: [] }),
    ev(22, 'status_update', { status: 'executing' }),
    ...Array.from({ length: 16 }, (_, i) => ev(23 + i, 'agent_message', { message_type: 'status', content: `step work ${i}` })),
    ev(39, 'tool_result', { message_id: 'm-tool', tool_call_id: 'c1', tool_name: 'create_plan', ok: true, error: null, content: 'step 1: Found 3 tasks.' }),
    ...answer.map((text, i) => ev(41 + i, 'token', { text })),
    ev(58, 'usage', {}),
    ev(59, 'done', { status: 'completed', strategy: 'complex', answer: answer.join(''), message_id: ANSWER, error: null, usage: null }),
  ];
  const rows = [
    { seq: 1, source: 'chat', kind: 'user', message_id: 'm-user', plan_id: PLAN, content: 'plan my week' },
    { seq: 19, source: 'chat', kind: 'assistant', message_id: WORDS, plan_id: PLAN, content: words.join('') },
    { seq: 39, source: 'chat', kind: 'tool', message_id: 'm-tool', plan_id: PLAN, content: 'step 1: Found 3 tasks.' },
    { seq: 57, source: 'chat', kind: 'assistant', message_id: ANSWER, plan_id: PLAN, content: answer.join('') },
  ];
  return { events, rows, stored: [words.join(''), answer.join('')] };
}

/** The functions' tables as they stand after the commits so far (`committed`: the last seq). */
export class Tables {
  committed = 0;
  gate = null; // a promise every read waits for, when set
  reads = 0;

  constructor(rows, events) {
    Object.assign(this, { rows, events });
  }

  async #read(answer) {
    this.reads += 1;
    await this.gate;
    return answer();
  }

  plan() {
    const done = this.events.find((e) => e.type === 'done' && e.seq <= this.committed);
    return { id: PLAN, status: done ? 'completed' : 'executing', approvals: [] };
  }

  get client() {
    const tables = this;
    const rows = (after) => tables.rows.filter((r) => r.seq > after && r.seq <= tables.committed);
    return {
      chat: { getSession: () => tables.#read(() => ({ id: SESSION, last_seq: tables.committed })) },
      planner: { getPlan: () => tables.#read(() => tables.plan()) },
      timeline: (_, after = 0) => tables.#read(() => rows(after)),
      sessionPlans: () => tables.#read(() => (tables.committed >= 2 ? [tables.plan()] : [])),
    };
  }
}

/** A supabase-js stand-in: one channel, joined at once; `deliver(event)` is a broadcast. */
export function fakeSupabase(refuse = null) {
  const host = {
    realtime: { setAuth: async () => {} },
    handlers: {},
    channel() {
      const channel = {
        on(type, _filter, callback) { host.handlers[type] = callback; return channel; },
        subscribe(callback) {
          // Joined at once; or refused as Realtime refuses a join: its reply's `{ reason }`.
          queueMicrotask(() => (refuse
            ? callback('CHANNEL_ERROR', new Error(refuse, { cause: { reason: refuse } }))
            : callback('SUBSCRIBED')));
          return channel;
        },
      };
      return channel;
    },
    removeChannel: async () => {},
    deliver: (event) => host.handlers.broadcast({ payload: event, meta: {} }),
  };
  return host;
}

