// One session: the conversation and composer on the left, the selected turn's dialogue
// (approvals, plan graph, executor threads) on the right. A new chat creates its session
// first and joins its channel before sending, so the first events are seen live.

import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { NetworkError, isProblem } from '@parley/client';
import { SessionFeed } from '../live.js';
import { turns } from '../session_state.js';
import { Approvals } from './approvals.js';
import { Composer, Conversation, Outgoing } from './chat.js';
import { PlanGraph } from './plan_graph.js';
import { SessionHeader } from './sessions.js';
import { Threads } from './threads.js';

const outbox = new Map(); // session id → the first message of a chat created a moment ago

/** Create a session for `text` and open it; the session view sends `text` once joined. */
async function startChat(api, text, onSessionsChanged, { replace = false } = {}) {
  const session = await api.chat.createSession({ title: text.replace(/\s+/g, ' ').slice(0, 60) });
  outbox.set(session.id, text);
  onSessionsChanged();
  const target = `#/s/${session.id}`;
  if (replace) window.location.replace(target);
  else window.location.hash = target;
}

export function NewChat({ app, onSessionsChanged }) {
  const [error, setError] = useState(null);
  const start = (text) => startChat(app.api, text, onSessionsChanged).catch((e) => setError(e.message));
  return html`
    <main id="main" class="session new">
      <header class="session-header"><h2>New chat</h2></header>
      <div class="chat-col">
        <p class="empty">Ask for something that takes several steps, and watch the planner
          delegate to executors on the right.</p>
        ${error && html`<p class="error" role="alert">${error}</p>`}
        <${Composer} demoMessage=${app.config.demoMessage} onSend=${start} />
      </div>
    </main>`;
}

/**
 * `#/demo` (the link the local stack prints): a new chat that sends the demo message by itself.
 * The link gives way to the session's own (`#/s/<id>`), so a reload shows that turn again
 * instead of starting another.
 */
export function DemoTurn({ app, onSessionsChanged }) {
  const [error, setError] = useState(null);
  const { demoMessage } = app.config;
  useEffect(() => {
    if (!demoMessage) window.location.replace('#/new'); // a deployment has no demo message
    else startChat(app.api, demoMessage, onSessionsChanged, { replace: true }).catch((e) => setError(e.message));
  }, []);
  return html`
    <main id="main" class="session new">
      <header class="session-header"><h2>Demo turn</h2></header>
      ${error ? html`<p class="error" role="alert">Could not start the demo turn: ${error}</p>`
              : html`<p class="note" role="status">Starting the demo turn…</p>`}
    </main>`;
}

export function SessionView({ app, sessionId, onSessionsChanged }) {
  const { api, auth, config } = app;
  const [feed, setFeed] = useState(null);
  const [, setVersion] = useState(0);
  const [picked, setPicked] = useState(null);
  const [outgoing, setOutgoing] = useState(null);
  const feedRef = useRef(null);

  useEffect(() => {
    const opened = new SessionFeed({ client: auth.client, api, sessionId, onChange: () => setVersion((v) => v + 1) });
    feedRef.current = opened;
    setFeed(opened);
    setPicked(null);
    setOutgoing(null);
    opened.open().then(() => {
      const first = outbox.get(sessionId);
      outbox.delete(sessionId);
      if (first && !opened.state.missing) send(first);
    }, () => {}); // refused by Realtime: the header shows why (feed.error)
    return () => opened.close();
  }, [sessionId]);

  // A message counts as accepted once its turn shows up (an event or the POST's answer), and
  // leaves the outbox once its stored row is read back.
  useEffect(() => {
    if (!outgoing || !feed) return;
    if (!outgoing.planId && outgoing.state === 'sending') {
      const fresh = [...feed.state.plans.keys()].find((id) => !outgoing.knownPlans.has(id));
      if (fresh) setOutgoing({ ...outgoing, planId: fresh, state: 'accepted' });
    } else if (outgoing.planId && turns(feed.state).some((t) => t.plan?.id === outgoing.planId && t.user)) {
      setOutgoing(null);
    }
  });

  const send = async (text, clientMessageId = crypto.randomUUID()) => {
    const current = feedRef.current;
    const knownPlans = new Set(current.state.plans.keys());
    setPicked(null);
    setOutgoing({ text, clientMessageId, state: 'sending', knownPlans });
    try {
      const reply = await api.send({ session_id: sessionId, message: text, client_message_id: clientMessageId });
      setOutgoing((o) => o && o.clientMessageId === clientMessageId ? { ...o, planId: reply.plan_id, state: 'accepted' } : o);
      current.catchUp([reply.plan_id]);
      onSessionsChanged();
    } catch (error) {
      const failed = { text, clientMessageId, knownPlans, error: error.message };
      if (isProblem(error, 'turn-running')) {
        setOutgoing({ ...failed, state: 'conflict', runningPlanId: error.problem.plan_id, planStatus: error.problem.plan_status });
      } else if (error instanceof NetworkError) {
        setOutgoing({ ...failed, state: 'failed' });
      } else {
        setOutgoing({ ...failed, state: 'error' });
      }
    }
  };

  if (!feed) return null;
  const { state } = feed;
  if (state.missing) {
    return html`
      <main id="main" class="session missing">
        <h2>Session not found</h2>
        <p>It does not exist, it was deleted, or it belongs to another user.</p>
        <a class="button" href="#/new">Start a new chat</a>
      </main>`;
  }
  if (!state.session) return html`<main id="main" class="session"><p class="note" role="status">Loading the session…</p></main>`;

  const list = turns(state);
  const selectedId = picked || defaultPlan(list);
  const selected = selectedId && state.plans.get(selectedId);
  const fork = (messageId) => api.chat.forkSession(sessionId, { at_message_id: messageId }).then((f) => {
    onSessionsChanged();
    window.location.hash = `#/s/${f.id}`;
  });
  const decide = async (planId, approvalId, decision, text) => {
    const pending = api.decide(planId, approvalId, text ? { decision, text } : { decision });
    pending.finally(() => feed.catchUp([planId])).catch(() => {});
    await pending;
  };
  const outgoingView = outgoing && html`<${Outgoing} outgoing=${outgoing}
    onRetry=${() => send(outgoing.text, outgoing.clientMessageId)}
    onDiscard=${() => setOutgoing(null)}
    onCancelTurn=${() => api.planner.cancelPlan(outgoing.runningPlanId).then(() => feed.catchUp([outgoing.runningPlanId]))
      .catch((e) => setOutgoing({ ...outgoing, state: 'error', error: e.message }))} />`;

  return html`
    <main id="main" class="session">
      <${SessionHeader} session=${state.session} api=${api} connection=${feed.connection} syncError=${feed.error}
        onChanged=${() => { feed.catchUp(); onSessionsChanged(); }}
        onDeleted=${() => { onSessionsChanged(); window.location.hash = '#/'; }} />
      <div class="columns">
        <div class="chat-col">
          <${Conversation} feed=${feed} selectedPlanId=${selectedId} onSelectPlan=${setPicked}
            onFork=${fork} outgoing=${outgoing} outgoingView=${outgoingView} />
          <${Composer} disabled=${outgoing?.state === 'sending'}
            demoMessage=${list.length === 0 && !outgoing ? config.demoMessage : null}
            busyNote=${outgoing?.state === 'sending' ? 'Sending…' : ''}
            onSend=${(text) => send(text)} />
        </div>
        <aside class="dialogue-col" aria-label="The agents' dialogue">
          ${selected ? html`<${Dialogue} plan=${selected} number=${list.findIndex((t) => t.plan?.id === selectedId) + 1} decide=${decide} />`
                     : html`<p class="empty">The planner's plan and its executors' threads appear here.</p>`}
        </aside>
      </div>
    </main>`;
}

function Dialogue({ plan, number, decide }) {
  const pick = (step) => document.getElementById(`thread-${step.number}`)?.focus();
  const hasSteps = plan.steps.size > 0;
  return html`
    <h2>The agents' dialogue <span class="note">— turn ${number}</span></h2>
    <${Approvals} plan=${plan} decide=${decide} />
    ${hasSteps ? html`<${PlanGraph} plan=${plan} onPickStep=${pick} />`
               : html`<p class="note">${NO_PLAN[plan.strategy] || 'The planner is deciding how to answer…'}</p>`}
    <${Threads} plan=${plan} />
    <${Removed} plan=${plan} />`;
}

// Detail retention deleted (the dialogue, the planner's tool rounds, the runs): said, not hidden.
function Removed({ plan }) {
  if (!plan.removed?.length) return null;
  return html`
    <ul class="removed" aria-label="Deleted by retention">
      ${plan.removed.map((r) => html`<li key=${r.what} class="note" data-what=${r.what}>${r.note}</li>`)}
    </ul>`;
}

const NO_PLAN = {
  direct: 'The planner answered directly: no plan, no executors.',
  tool: 'The planner used its tools itself (see "The planner\'s own work" in the conversation).',
};

/** The latest turn, unless the user picked another. */
function defaultPlan(list) {
  return list.findLast((t) => t.plan)?.plan.id || null;
}
