// One chat session as the console knows it, merged from two sources:
//
// * snapshots read over HTTP — the session row, its timeline (human and agent messages in one
//   `seq` order) and each turn's plan detail — taken at a known `seq` (the session's `last_seq`
//   read before them);
// * live events from the session's Realtime channel (docs/events.md), each with its `seq`.
//
// Rows are keyed by `seq`, so a row seen in both is kept once. A live event changes a status
// only if its `seq` is newer than the snapshot that state came from, so an event that arrives
// late (events of concurrent steps interleave) never turns a finished step back to running.

export const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

export function emptySession(id) {
  return {
    id,
    session: null,
    missing: false, // 404: not this user's, or deleted
    chat: new Map(), // seq → chat message (user, assistant, tool, status, system)
    plans: new Map(), // plan id → plan
  };
}

function newPlan(id) {
  return {
    id,
    status: 'pending',
    phase: null, // thinking | executing | awaiting_approval | …
    strategy: null,
    goal: null,
    error: null,
    userMessageId: null,
    firstSeq: Infinity,
    statusSeq: 0,
    steps: new Map(), // step number → step
    threads: new Map(), // thread id → thread
    removed: [], // what retention deleted of the turn (`GET /plans/{id}`'s `removed`)
    approvals: new Map(), // approval id → approval
    usage: null,
    answer: null,
    live: [], // the planner's own words (its texts) and tool calls as they stream (until the rows are read)
    countedUsage: new Set(),
    executions: [],
  };
}

export function planOf(state, id) {
  if (!state.plans.has(id)) state.plans.set(id, newPlan(id));
  return state.plans.get(id);
}

function newStep(number) {
  return {
    number, id: null, description: '', assignee: 'executor', dependsOn: [], tools: [],
    status: 'pending', result: null, error: null, threadId: null, agentId: null, model: null,
    statusSeq: 0, usage: null,
  };
}

function stepOf(plan, number) {
  if (!plan.steps.has(number)) plan.steps.set(number, newStep(number));
  return plan.steps.get(number);
}

function stepById(plan, stepId) {
  for (const step of plan.steps.values()) if (step.id === stepId) return step;
  return null;
}

function threadOf(plan, id) {
  if (!plan.threads.has(id)) {
    plan.threads.set(id, { id, stepId: null, childAgentId: null, status: 'active', statusSeq: 0,
                           messages: new Map() });
  }
  return plan.threads.get(id);
}

// ---- snapshots (HTTP) ----------------------------------------------------------------------

/** Timeline entries (`GET /sessions/{id}/timeline`), human and agent, in `seq` order. */
export function applyTimeline(state, entries) {
  for (const entry of entries) {
    if (entry.source === 'chat') {
      state.chat.set(entry.seq, {
        seq: entry.seq, id: entry.message_id, role: entry.kind, content: entry.content,
        planId: entry.plan_id, toolName: entry.tool_name, model: entry.model,
        createdAt: entry.created_at,
      });
      if (entry.plan_id) {
        const plan = planOf(state, entry.plan_id);
        plan.firstSeq = Math.min(plan.firstSeq, entry.seq);
      }
      continue;
    }
    const plan = planOf(state, entry.plan_id);
    plan.firstSeq = Math.min(plan.firstSeq, entry.seq);
    const messages = threadOf(plan, entry.thread_id).messages;
    const said = {
      seq: entry.seq, type: entry.kind, content: entry.content, toolName: entry.tool_name,
      toolArgs: null, sender: entry.sender_role, model: entry.model,
    };
    if (entry.kind === 'tool_result' && entry.sender_role !== 'system') {
      // A tool call answered in its own row: the call, then its result right after it.
      messages.set(messageKey(entry.message_id, 'tool_call'), { ...said, type: 'tool_call', content: '' });
      messages.set(messageKey(entry.message_id, 'tool_result'), { ...said, seq: entry.seq + 0.5, sender: 'system' });
    } else {
      messages.set(messageKey(entry.message_id, entry.kind), said);
    }
  }
}

/** A thread message's key: its row and what it says (a call answered in its row is two). */
function messageKey(messageId, type) {
  return `${messageId}:${type}`;
}

/** A plan detail (`GET /plans/{id}`) read after the session's `last_seq` was `snapshotSeq`. */
export function applyPlanDetail(state, detail, snapshotSeq) {
  const plan = planOf(state, detail.id);
  Object.assign(plan, {
    status: detail.status, strategy: detail.strategy, goal: detail.goal, error: detail.error,
    userMessageId: detail.user_message_id, statusSeq: snapshotSeq,
    phase: detail.status === 'executing' ? plan.phase : detail.status,
    usage: {
      prompt_tokens: detail.prompt_tokens, completion_tokens: detail.completion_tokens,
      cache_hit_tokens: detail.cache_hit_tokens, cost_usd: detail.cost_usd,
    },
    executions: detail.executions,
    removed: detail.removed ?? [], // what retention deleted of the turn, each with its note
  });
  for (const s of detail.steps) {
    const step = stepOf(plan, s.step_number);
    Object.assign(step, {
      id: s.id, description: s.description, assignee: s.executor_required ? 'executor' : 'planner',
      dependsOn: s.depends_on, tools: s.tools, status: s.status, result: s.result,
      error: s.error, agentId: s.assigned_agent_id, statusSeq: snapshotSeq,
    });
  }
  for (const t of detail.threads) {
    const thread = threadOf(plan, t.id);
    Object.assign(thread, { stepId: t.step_id, childAgentId: t.child_agent_id, status: t.status,
                            statusSeq: snapshotSeq });
    const step = t.step_id && stepById(plan, t.step_id);
    if (step) step.threadId = t.id;
  }
  for (const run of detail.executions) {
    const step = run.step_id && stepById(plan, run.step_id);
    if (step) {
      step.model = run.model;
      step.usage = run; // the latest attempt's accounting
      step.durationMs = run.duration_ms;
    }
  }
  plan.approvals = new Map(detail.approvals.map((a) => [a.id, {
    id: a.id, kind: a.kind, stepId: a.step_id, toolName: a.tool_name, args: a.tool_args,
    reason: a.reason, status: a.status, response: a.response,
  }]));
  plan.countedUsage = new Set();
  if (TERMINAL.has(plan.status)) plan.live = [];
}

/**
 * A turn's planner texts as `watchSession()` assembles them (`onText`): its words before each
 * tool call and its answer, every token batch in its place — a batch that came after later
 * events too — and the stored text once read. They are the turn's live words.
 */
export function applyTexts(state, planId, texts) {
  const plan = planOf(state, planId);
  const words = texts.map((t) => ({ kind: 'words', seq: t.seq, text: t.text }));
  plan.live = [...plan.live.filter((note) => note.kind !== 'words'), ...words].sort((a, b) => a.seq - b.seq);
}

// ---- live events (Realtime) ----------------------------------------------------------------

function newer(event, holder) {
  return event.seq > holder.statusSeq;
}

/** One event from the session's channel (any order; duplicates are harmless). */
export function applyEvent(state, event) {
  if (!event.plan_id) return;
  // Live totals: every model call's usage (the answer's call has none of its own: `done` carries it).
  const call = (event.type === 'usage' || event.type === 'done') && event.data?.call;
  if (call && state.session && event.seq > state.session.last_seq) {
    state.session = { ...state.session, ...addUsage(state.session, call) };
  }
  const plan = planOf(state, event.plan_id);
  plan.firstSeq = Math.min(plan.firstSeq, event.seq);
  const data = event.data || {};
  const handler = HANDLERS[event.type];
  if (handler) handler(plan, data, event);
}

const HANDLERS = {
  status_update(plan, data, event) {
    if (!newer(event, plan)) return;
    plan.statusSeq = event.seq;
    plan.phase = data.status;
    plan.status = { thinking: 'executing', executing: 'executing' }[data.status] || data.status;
    for (const a of data.approvals || []) {
      plan.approvals.set(a.id, {
        id: a.id, kind: a.kind, stepId: a.step_id, toolName: a.tool_name,
        args: a.tool_args, reason: a.reason, status: 'pending', response: null,
      });
    }
  },
  tool_call(plan, data, event) {
    if (!newer(event, plan)) return;
    plan.live.push({ kind: 'tool_call', seq: event.seq, name: data.tool_name, args: data.tool_args });
  },
  tool_result(plan, data, event) {
    if (!newer(event, plan)) return;
    plan.live.push({ kind: 'tool_result', seq: event.seq, name: data.tool_name, ok: data.ok,
                     content: data.content });
  },
  plan_created(plan, data) {
    plan.goal = data.goal;
    plan.strategy = 'complex';
    for (const s of data.steps) {
      const step = stepOf(plan, s.step_number);
      Object.assign(step, { id: s.step_id, description: s.description, assignee: s.assignee,
                            dependsOn: s.depends_on, tools: s.tools });
    }
  },
  step_started(plan, data, event) {
    const step = stepOf(plan, data.step_number);
    Object.assign(step, { id: data.step_id, description: data.description, assignee: data.assignee,
                          threadId: data.thread_id, agentId: event.agent_id, model: data.model });
    const thread = threadOf(plan, data.thread_id);
    thread.stepId = data.step_id;
    thread.childAgentId = event.agent_id;
    if (newer(event, step)) {
      step.status = 'running';
      step.statusSeq = event.seq;
    }
  },
  agent_message(plan, data, event) {
    const thread = threadOf(plan, data.thread_id);
    if (data.step_id) thread.stepId = data.step_id;
    const step = stepById(plan, data.step_id);
    const fromStepAgent = data.sender_agent_id && data.sender_agent_id === thread.childAgentId;
    thread.messages.set(messageKey(data.message_id, data.message_type), {
      seq: event.seq, type: data.message_type, content: data.content, toolName: data.tool_name,
      toolArgs: data.tool_args, model: data.model,
      sender: fromStepAgent ? step?.assignee || 'executor' : 'planner',
    });
  },
  usage(plan, data, event) {
    if (!newer(event, plan) || plan.countedUsage.has(event.seq)) return;
    plan.countedUsage.add(event.seq);
    plan.usage = data.plan;
    for (const step of plan.steps.values()) {
      if (step.agentId && step.agentId === event.agent_id && step.status === 'running') {
        step.usage = addUsage(step.usage, data.call);
      }
    }
  },
  step_completed(plan, data, event) {
    const step = stepOf(plan, data.step_number);
    if (!newer(event, step)) return;
    Object.assign(step, { status: data.status, result: data.result, error: data.error,
                          statusSeq: event.seq });
    const thread = step.threadId && plan.threads.get(step.threadId);
    if (thread && data.thread_status && newer(event, thread)) {
      thread.status = data.thread_status;
      thread.statusSeq = event.seq;
    }
  },
  error(plan, data) {
    plan.error = data.message;
  },
  done(plan, data, event) {
    if (!newer(event, plan)) return;
    Object.assign(plan, { status: data.status, phase: data.status, strategy: data.strategy,
                          answer: data.answer, statusSeq: event.seq });
    if (data.usage) plan.usage = data.usage;
    if (data.error) plan.error = data.error;
    // An ended plan waits for nothing (its pending approvals were settled or cancelled).
    if (TERMINAL.has(data.status)) {
      for (const a of plan.approvals.values()) if (a.status === 'pending') a.status = 'settled';
    }
  },
};

function addUsage(total, call) {
  const base = total || { prompt_tokens: 0, completion_tokens: 0, cache_hit_tokens: 0, cost_usd: '0' };
  return {
    prompt_tokens: base.prompt_tokens + call.prompt_tokens,
    completion_tokens: base.completion_tokens + call.completion_tokens,
    cache_hit_tokens: base.cache_hit_tokens + call.cache_hit_tokens,
    cost_usd: String(Number(base.cost_usd) + Number(call.cost_usd)),
  };
}

// ---- reading it back -----------------------------------------------------------------------

/**
 * The session's turns, oldest first: each user message with its plan (if it has one) and the
 * chat rows that followed it. Messages copied into a fork have no plan; a plan whose user
 * message has not been read yet (it is running) is a turn of its own.
 */
export function turns(state) {
  const messages = [...state.chat.values()].sort((a, b) => a.seq - b.seq);
  const planOfMessage = new Map();
  for (const plan of state.plans.values()) if (plan.userMessageId) planOfMessage.set(plan.userMessageId, plan);
  // A plan seen live before its detail was read: its message is the row stored just before it.
  for (const plan of state.plans.values()) {
    if (plan.userMessageId) continue;
    const before = messages.findLast((m) => m.seq < plan.firstSeq);
    if (before?.role === 'user' && !planOfMessage.has(before.id)) planOfMessage.set(before.id, plan);
  }
  const list = [];
  const byPlan = new Map();
  const turnOf = (plan, order) => {
    if (!byPlan.has(plan.id)) {
      const turn = { plan, user: null, rows: [], order };
      byPlan.set(plan.id, turn);
      list.push(turn);
    }
    return byPlan.get(plan.id);
  };
  let current = null;
  for (const message of messages) {
    const plan = message.role === 'user' ? planOfMessage.get(message.id) : state.plans.get(message.planId);
    if (message.role === 'user') {
      current = plan ? turnOf(plan, message.seq) : { plan: null, user: null, rows: [], order: message.seq };
      if (!plan) list.push(current);
      current.user = message;
      current.order = message.seq;
    } else if (plan) {
      turnOf(plan, message.seq).rows.push(message);
    } else if (current) {
      current.rows.push(message);
    }
  }
  for (const plan of state.plans.values()) turnOf(plan, plan.firstSeq);
  return list.sort((a, b) => a.order - b.order);
}

/** The plan's steps in number order, each with its depth in the dependency graph. */
export function layeredSteps(plan) {
  const steps = [...plan.steps.values()].sort((a, b) => a.number - b.number);
  const depth = new Map();
  for (const step of steps) {
    const parents = step.dependsOn.map((n) => depth.get(n) ?? 0);
    depth.set(step.number, parents.length ? Math.max(...parents) + 1 : 0);
  }
  return steps.map((step) => ({ step, depth: depth.get(step.number) }));
}
