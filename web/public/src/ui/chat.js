// The conversation: one block per turn (the user's message, the planner's own tool use, the
// answer streaming in, the turn's cost), the message being sent, and the composer.

import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { clip, pretty, usage as usageText } from '../format.js';
import { TERMINAL, turns } from '../session_state.js';
import { Badge } from './badge.js';

export function Conversation({ feed, selectedPlanId, onSelectPlan, onFork, outgoing, outgoingView }) {
  const list = turns(feed.state);
  const end = useRef(null);
  const count = list.length + (outgoing ? 1 : 0);
  useEffect(() => end.current?.scrollIntoView({ block: 'end' }), [count]);
  const shown = (t) => t.plan && t.plan.id === outgoing?.planId;
  return html`
    <section class="conversation" aria-label="Conversation">
      ${list.length === 0 && !outgoing && html`<p class="empty">No messages yet.</p>`}
      ${list.map((turn, index) => turn.plan
        ? html`<${Turn} key=${turn.plan.id} turn=${turn} number=${index + 1}
            selected=${turn.plan.id === selectedPlanId}
            onSelect=${() => onSelectPlan(turn.plan.id)} onFork=${onFork}
            pending=${shown(turn) && !turn.user ? outgoing : null} />`
        : html`<${PlainTurn} key=${turn.user?.id ?? turn.order} turn=${turn} number=${index + 1} onFork=${onFork} />`)}
      ${outgoing && !list.some(shown) && outgoingView}
      <div ref=${end}></div>
    </section>`;
}

function Turn({ turn, number, selected, onSelect, onFork, pending }) {
  const { plan, user, rows } = turn;
  const done = TERMINAL.has(plan.status);
  const { activity, answer } = split(plan, rows, done);
  const steps = plan.steps.size;
  return html`
    <article class=${`turn ${selected ? 'selected' : ''}`} aria-label=${`Turn ${number}`}
             data-plan-id=${plan.id} data-status=${plan.status}>
      ${user
        ? html`<div class="msg user">
            <div class="who">You</div>
            <div class="text">${user.content}</div>
            <button class="link" onClick=${() => onFork(user.id)}
              title="A new session with the conversation up to this message">Fork here</button>
          </div>`
        : pending && html`<div class="msg user"><div class="who">You</div><div class="text">${pending.text}</div></div>`}
      ${activity.length > 0 && html`
        <details class="activity">
          <summary>The planner's own work (${activity.length})</summary>
          <ol>${activity.map((a) => html`<li key=${a.seq}><${Activity} item=${a} /></li>`)}</ol>
        </details>`}
      ${(answer || (!done && plan.status !== 'awaiting_approval')) && html`
        <div class=${`msg assistant ${done ? '' : 'streaming'}`} aria-live=${done ? 'off' : 'polite'}>
          <div class="who">Planner</div>
          <div class="text">${answer ? answer.text : '…'}</div>
          ${done && answer?.id && html`<button class="link" onClick=${() => onFork(answer.id)}>Fork here</button>`}
        </div>`}
      ${plan.error && html`<p class="error" role="alert">⚠ ${plan.error}</p>`}
      <footer class="turn-meta">
        <${Badge} status=${plan.phase === 'thinking' ? 'thinking' : plan.status} />
        ${plan.strategy && html`<span>${plan.strategy}${steps ? ` · ${steps} steps` : ''}</span>`}
        ${plan.usage && html`<span class="cost" title="This turn: every agent's model calls">${usageText(plan.usage)}</span>`}
        ${plan.status === 'awaiting_approval' && html`<strong>Waiting for your decision →</strong>`}
        <button class="link" aria-pressed=${selected} onClick=${onSelect}>
          ${selected ? 'Dialogue shown' : 'Show the dialogue'}
        </button>
      </footer>
    </article>`;
}

/** Messages without a plan: the conversation a fork was made from. */
function PlainTurn({ turn, number, onFork }) {
  return html`
    <article class="turn plain" aria-label=${`Turn ${number}`}>
      ${[turn.user, ...turn.rows].filter(Boolean).map((m) => html`
        <div key=${m.seq} class=${`msg ${m.role === 'user' ? 'user' : 'assistant'}`}>
          <div class="who">${m.role === 'user' ? 'You' : 'Planner'}</div>
          <div class="text">${m.content}</div>
          <button class="link" onClick=${() => onFork(m.id)}>Fork here</button>
        </div>`)}
    </article>`;
}

function Activity({ item }) {
  if (item.kind === 'words') return html`<span class="words">${item.text}</span>`;
  if (item.kind === 'tool_call') {
    return html`<details><summary>⚙ called <code>${item.name}</code></summary><pre>${pretty(item.args)}</pre></details>`;
  }
  const label = item.ok === false ? '✗ failed' : '↩ result';
  return html`<details><summary>${label} of <code>${item.name}</code>: ${clip(item.content, 60)}</summary>
    <pre>${pretty(item.content)}</pre></details>`;
}

/** The planner's own work (words before its tool calls, the calls, their results) and the
 * answer: the words after the last tool call. Stored rows first, then live notes newer than
 * them. */
function split(plan, rows, done) {
  const items = rows.map((row) => row.role === 'tool'
    ? { kind: 'tool_result', seq: row.seq, name: row.toolName, content: row.content }
    : { kind: 'words', seq: row.seq, text: row.content, id: row.id });
  // Live notes stay until the rows that hold them are read (the catch-up after `done`).
  const stored = new Set(items.map((item) => item.seq));
  const after = items.length ? items.at(-1).seq : 0;
  items.push(...plan.live.filter((note) => note.seq > after && !stored.has(note.seq)));
  const lastTool = items.findLastIndex((item) => item.kind !== 'words');
  const last = items.slice(lastTool + 1).at(-1);
  const activity = items.filter((item) => item !== last);
  if (last) return { activity, answer: { text: last.text, id: last.id ?? null } };
  return { activity, answer: done && plan.answer ? { text: plan.answer, id: null } : null };
}

export function Composer({ disabled, demoMessage, onSend, busyNote }) {
  const [text, setText] = useState('');
  const area = useRef(null);
  const submit = (event) => {
    event.preventDefault();
    const message = text.trim();
    if (!message || disabled) return;
    onSend(message);
    setText('');
  };
  const keydown = (event) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) submit(event);
  };
  return html`
    <form class="composer" onSubmit=${submit}>
      ${demoMessage && html`
        <button type="button" class="suggestion"
          onClick=${() => { setText(demoMessage); area.current?.focus(); }}>
          Try the demo: “${demoMessage}”
        </button>`}
      <label for="composer-text" class="visually-hidden">Message</label>
      <textarea id="composer-text" ref=${area} rows="3" value=${text} placeholder="Message the planner (Enter to send, Shift+Enter for a new line)"
        onInput=${(e) => setText(e.currentTarget.value)} onKeyDown=${keydown}></textarea>
      <div class="composer-row">
        <span class="note">${busyNote}</span>
        <button type="submit" class="primary" disabled=${disabled || !text.trim()}>Send</button>
      </div>
    </form>`;
}

/** The message being sent: sending, failed (retry with the same id), or refused with 409. */
export function Outgoing({ outgoing, onRetry, onDiscard, onCancelTurn }) {
  const { text, state, error, planStatus } = outgoing;
  return html`
    <article class="turn outgoing" aria-label="Message being sent">
      <div class="msg user"><div class="who">You</div><div class="text">${text}</div></div>
      ${state === 'sending' && html`<p class="note" role="status">Sending…</p>`}
      ${state === 'failed' && html`
        <div class="problem" role="alert">
          <p>Not sent: ${error}. Retrying is safe — it reuses this message's id, so it is never stored twice.</p>
          <button onClick=${onRetry}>Retry</button> <button class="link" onClick=${onDiscard}>Discard</button>
        </div>`}
      ${state === 'conflict' && html`
        <div class="problem" role="alert">
          <p>${planStatus === 'awaiting_approval'
            ? 'A turn in this session is waiting for your decision. Decide it, or cancel that turn, then send again.'
            : 'A turn is still running in this session. Wait for it to finish, or cancel it, then send again.'}</p>
          <button onClick=${onCancelTurn}>Cancel the running turn</button>
          <button onClick=${onRetry}>Send again</button>
          <button class="link" onClick=${onDiscard}>Discard</button>
        </div>`}
      ${state === 'error' && html`
        <div class="problem" role="alert"><p>${error}</p><button class="link" onClick=${onDiscard}>Dismiss</button></div>`}
    </article>`;
}
