// Each step's conversation with the planner: the delegation, the agent's words, its tool calls
// and results (collapsed), questions and answers, and how it ended — in `seq` order.

import { html } from '../html.js';
import { clip, pretty, usage as usageText } from '../format.js';
import { Badge } from './badge.js';

const TYPES = {
  delegation: ['→', 'Delegation'],
  status: ['…', 'Says'],
  question: ['?', 'Question'],
  answer: ['↵', 'Answer'],
  completion: ['✓', 'Completion'],
  error: ['✗', 'Error'],
  escalation: ['⇧', 'Escalation'],
  permission_denied: ['⊗', 'Permission denied'],
};

export function Threads({ plan }) {
  const byStep = [...plan.steps.values()].sort((a, b) => a.number - b.number);
  const threads = byStep.map((step) => ({ step, thread: step.threadId && plan.threads.get(step.threadId) }))
    .filter(({ thread }) => thread);
  if (threads.length === 0) return null;
  return html`
    <section class="threads" aria-label="Agent threads">
      ${threads.map(({ step, thread }) => html`<${Thread} key=${thread.id} step=${step} thread=${thread} />`)}
    </section>`;
}

function Thread({ step, thread }) {
  const messages = [...thread.messages.values()].sort((a, b) => a.seq - b.seq);
  const who = step.assignee === 'planner' ? 'Planner (its own write step)' : `Executor${step.model ? ` · ${step.model}` : ''}`;
  return html`
    <section class="thread" id=${`thread-${step.number}`} tabindex="-1" data-step=${step.number}
             aria-labelledby=${`thread-${step.number}-title`}>
      <header>
        <h3 id=${`thread-${step.number}-title`}>Step ${step.number} · ${who}</h3>
        <${Badge} status=${thread.status === 'active' ? step.status : thread.status} />
        ${step.usage && html`<span class="cost">${usageText(step.usage)}</span>`}
      </header>
      <ol class="messages">
        ${messages.map((m) => html`<li key=${m.seq} class=${`agent-msg ${m.type}`} data-type=${m.type}><${Message} m=${m} /></li>`)}
      </ol>
    </section>`;
}

function Message({ m }) {
  const from = m.sender === 'planner' ? 'planner' : m.sender;
  if (m.type === 'tool_call') {
    const args = m.toolArgs ?? m.content;
    return html`<details><summary><span class="tag">⚙ Tool call</span> <code>${m.toolName}</code> ${clip(typeof args === 'string' ? args : JSON.stringify(args), 60)}</summary>
      <pre>${pretty(args)}</pre></details>`;
  }
  if (m.type === 'tool_result') {
    return html`<details><summary><span class="tag">↩ Result</span> of <code>${m.toolName}</code>: ${clip(m.content, 60)}</summary>
      <pre>${pretty(m.content)}</pre></details>`;
  }
  const [symbol, label] = TYPES[m.type] || ['•', m.type];
  const long = m.type === 'delegation' && (m.content || '').length > 160;
  const head = html`<span class="tag">${symbol} ${label}</span> <span class="from">${from}</span>`;
  if (long) {
    return html`<details><summary>${head} ${clip(m.content, 90)}</summary><div class="text">${m.content}</div></details>`;
  }
  return html`<div>${head}</div><div class="text">${m.content}</div>`;
}
