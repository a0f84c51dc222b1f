// The plan as a graph: steps in columns by dependency depth (a step sits right of everything
// it waits for), arrows from each dependency, who runs each step, and its status in words and
// symbols as well as colour. The steps are a list of buttons, so the graph works with the
// keyboard and a screen reader; the arrows are decoration over it.

import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { html } from '../html.js';
import { state, usage as usageText } from '../format.js';
import { layeredSteps } from '../session_state.js';
import { Badge } from './badge.js';

export function PlanGraph({ plan, onPickStep }) {
  const waiting = new Set([...plan.approvals.values()].filter((a) => a.status === 'pending').map((a) => a.stepId));
  const layered = layeredSteps(plan);
  const box = useRef(null);
  const [edges, setEdges] = useState([]);
  const shape = layered.map(({ step }) => `${step.number}:${step.status}:${step.dependsOn}`).join('|');

  useLayoutEffect(() => {
    const measure = () => setEdges(box.current ? arrows(box.current, layered) : []);
    measure();
    const observer = new ResizeObserver(measure);
    if (box.current) observer.observe(box.current);
    return () => observer.disconnect();
  }, [shape]);

  if (layered.length === 0) return null;
  const columns = Math.max(...layered.map((l) => l.depth)) + 1;
  return html`
    <figure class="plan-graph">
      <figcaption>Plan${plan.goal ? `: ${plan.goal}` : ''}</figcaption>
      <div class="graph" ref=${box} style=${`--columns:${columns}`}>
        <svg class="edges" aria-hidden="true">
          <defs><marker id="arrow" viewBox="0 0 8 8" refX="7" refY="4" markerWidth="7" markerHeight="7" orient="auto">
            <path d="M0,0 L8,4 L0,8 z" /></marker></defs>
          ${edges.map((e) => html`<path key=${e.key} d=${e.d} class=${`edge ${e.status}`} marker-end="url(#arrow)" />`)}
        </svg>
        <ol class="nodes" aria-label="Plan steps">
          ${layered.map(({ step, depth }) => html`
            <li key=${step.number} style=${`grid-column:${depth + 1}`}>
              <${StepNode} step=${step} waiting=${waiting.has(step.id)} onPick=${() => onPickStep(step)} />
            </li>`)}
        </ol>
      </div>
    </figure>`;
}

function StepNode({ step, waiting, onPick }) {
  const status = waiting && ['running', 'pending'].includes(step.status) ? 'awaiting_approval' : step.status;
  const [, word] = state(status);
  const who = step.assignee === 'planner' ? 'planner' : 'executor';
  return html`
    <button class="step" data-step=${step.number} data-status=${status} onClick=${onPick}
      aria-label=${`Step ${step.number}, ${who}, ${word}: ${step.description}`}>
      <span class="step-head"><strong>Step ${step.number}</strong> · ${who}${step.model ? ` · ${step.model}` : ''}</span>
      <span class="step-text">${step.description}</span>
      <span class="step-foot">
        <${Badge} status=${status} />
        ${step.dependsOn.length > 0 && html`<span>after ${step.dependsOn.join(', ')}</span>`}
        ${step.usage && html`<span class="cost">${usageText(step.usage)}</span>`}
      </span>
    </button>`;
}

/** SVG paths from each dependency's right edge to the step's left edge, in the box's frame. */
function arrows(box, layered) {
  const frame = box.getBoundingClientRect();
  const rect = (n) => box.querySelector(`[data-step="${n}"]`)?.getBoundingClientRect();
  const paths = [];
  for (const { step } of layered) {
    const to = rect(step.number);
    for (const dep of step.dependsOn) {
      const from = rect(dep);
      if (!from || !to) continue;
      const x1 = from.right - frame.left, y1 = from.top + from.height / 2 - frame.top;
      const x2 = to.left - frame.left - 2, y2 = to.top + to.height / 2 - frame.top;
      const mid = (x1 + x2) / 2;
      paths.push({ key: `${dep}-${step.number}`, d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`,
                   status: step.status });
    }
  }
  return paths;
}
