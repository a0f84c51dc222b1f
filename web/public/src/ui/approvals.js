// Decisions the plan waits for: a destructive tool call (Approve / Reject) or an executor's
// escalation (Answer / Reject). Deciding resumes the plan; its progress arrives over Realtime.

import { useState } from 'preact/hooks';
import { html } from '../html.js';
import { pretty } from '../format.js';

export function Approvals({ plan, decide }) {
  const pending = [...plan.approvals.values()].filter((a) => a.status === 'pending');
  if (pending.length === 0) return null;
  const stepOf = (id) => [...plan.steps.values()].find((s) => s.id === id);
  return html`
    <section class="approvals" aria-label="Waiting for your decision">
      ${pending.map((a) => html`<${Card} key=${a.id} approval=${a} step=${stepOf(a.stepId)}
                                   decide=${(decision, text) => decide(plan.id, a.id, decision, text)} />`)}
    </section>`;
}

function Card({ approval, step, decide }) {
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(null);
  const [error, setError] = useState(null);
  const where = step ? `step ${step.number} (${step.assignee})` : 'the planner';
  const act = async (decision) => {
    setBusy(decision);
    setError(null);
    try {
      await decide(decision, text.trim() || undefined);
    } catch (e) {
      setError(e.message);
      setBusy(null);
    }
  };
  const escalation = approval.kind === 'escalation';
  const title = escalation
    ? `⇧ An executor asks you: ${where}`
    : `‖ Approval needed: ${where} wants to run ${approval.toolName}`;
  return html`
    <article class="approval" role="group" aria-labelledby=${`approval-${approval.id}`} data-kind=${approval.kind}>
      <h3 id=${`approval-${approval.id}`}>${title}</h3>
      ${escalation
        ? html`<p class="text">${approval.reason}</p>`
        : html`<p>This tool is destructive: it runs only if you approve it.</p><pre>${pretty(approval.args)}</pre>`}
      <label>
        ${escalation ? 'Your answer' : 'Reason (optional, told to the agent if you reject)'}
        <textarea rows="2" value=${text} onInput=${(e) => setText(e.currentTarget.value)} disabled=${!!busy}></textarea>
      </label>
      <div class="actions">
        ${escalation
          ? html`<button class="primary" disabled=${!!busy || !text.trim()} onClick=${() => act('answer')}>Answer</button>`
          : html`<button class="primary" disabled=${!!busy} onClick=${() => act('approve')}>Approve</button>`}
        <button disabled=${!!busy} onClick=${() => act('reject')}>Reject</button>
        ${busy && html`<span role="status">${busy === 'reject' ? 'Rejected' : busy === 'answer' ? 'Answered' : 'Approved'} — the plan is resuming…</span>`}
      </div>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </article>`;
}
