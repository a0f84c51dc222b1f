// For operators: cost per day and model, and executor step durations (p50 / p95), from the
// SQL dashboard views (`GET /dashboards/daily`), charted with uPlot. Each chart has the same
// figures as a table below it, and its series differ by dash pattern as well as colour.

import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from '../html.js';
import { duration, money, tokens } from '../format.js';

const COLOURS = ['#2563eb', '#d97706', '#059669', '#db2777', '#7c3aed', '#0891b2'];
const DASHES = [[], [8, 4], [2, 3], [12, 3, 2, 3]];
const DAY = 86400;

export function Operations({ api, operator }) {
  const [days, setDays] = useState(30);
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    setError(null);
    api.chat.getDailyDashboards({ days }).then(setData).catch(setError);
  }, [days]);
  return html`
    <main id="main" class="operations">
      <h2>Operations</h2>
      <p class="note">Every user's executions, from the views${' '}
        <code>execution_stats_daily</code> and <code>plan_outcomes_daily</code> (UTC days).</p>
      <label>Period <select value=${days} onChange=${(e) => setDays(Number(e.currentTarget.value))}>
        ${[7, 30, 90].map((n) => html`<option value=${n}>last ${n} days</option>`)}
      </select></label>
      ${error && html`<p class="error" role="alert">${error.status === 403
        ? 'These charts are for operators: ask for "parley_role": "operator" in your app_metadata.'
        : error.message}</p>`}
      ${!error && !operator && !data && html`<p class="note">Checking your access…</p>`}
      ${data && html`<${Dashboards} data=${data} />`}
    </main>`;
}

function Dashboards({ data }) {
  const days = dayAxis(data.days);
  const rows = data.executions;
  const models = [...new Set(rows.map((r) => r.model))].sort();
  const costSeries = models.map((model, i) => ({
    label: model, colour: i, dash: DASHES[i % DASHES.length],
    values: days.map((day) => sum(rows.filter((r) => r.model === model && isoDay(r.day) === day), 'cost_usd')),
  }));
  const steps = rows.filter((r) => r.agent_role === 'executor');
  const stepModels = [...new Set(steps.map((r) => r.model))].sort();
  const durationSeries = stepModels.flatMap((model, i) => ['p50', 'p95'].map((p) => ({
    label: `${model} ${p}`, colour: i, dash: p === 'p95' ? [8, 4] : [], filled: p === 'p95',
    values: days.map((day) => {
      const row = steps.find((r) => r.model === model && isoDay(r.day) === day);
      return row && row[`${p}_duration_ms`] !== null ? Number(row[`${p}_duration_ms`]) : null;
    }),
  })));
  const totals = {
    cost: sum(rows, 'cost_usd'), runs: sum(rows, 'executions'), prompt: sum(rows, 'prompt_tokens'),
    cached: sum(rows, 'cache_hit_tokens'), completed: sum(rows, 'completed'), failed: sum(rows, 'failed'),
  };
  const plans = data.plans.reduce((n, p) => n + p.plans, 0);
  return html`
    <dl class="tiles">
      <div><dt>Cost</dt><dd>${money(totals.cost)}</dd></div>
      <div><dt>Turns</dt><dd>${tokens(plans)}</dd></div>
      <div><dt>Agent runs</dt><dd>${tokens(totals.runs)} (${tokens(totals.failed)} failed)</dd></div>
      <div><dt>Prompt tokens</dt><dd>${tokens(totals.prompt)} (${percent(totals.cached, totals.prompt)} cache hits)</dd></div>
    </dl>
    <${Chart} title="Cost per day, by model (USD)" days=${days} series=${costSeries}
      format=${(v) => money(v)} />
    <${Table} caption="Cost per day, by model" rows=${rows} columns=${[
      ['Day', (r) => isoDay(r.day)], ['Model', (r) => r.model], ['Role', (r) => r.agent_role],
      ['Runs', (r) => r.executions], ['Tokens in (cached)', (r) => `${tokens(r.prompt_tokens)} (${tokens(r.cache_hit_tokens)})`],
      ['Tokens out', (r) => tokens(r.completion_tokens)], ['Cost', (r) => money(r.cost_usd)]]} />
    <${Chart} title="Executor step duration per day: p50 (solid line, hollow points) and p95 (dashed, filled)" days=${days}
      series=${durationSeries} format=${(v) => duration(v)} />
    <${Table} caption="Executor step durations" rows=${steps} columns=${[
      ['Day', (r) => isoDay(r.day)], ['Model', (r) => r.model], ['Steps', (r) => r.executions],
      ['p50', (r) => duration(r.p50_duration_ms)], ['p95', (r) => duration(r.p95_duration_ms)],
      ['Success', (r) => r.success_rate === null ? '—' : percent(Number(r.success_rate), 1)]]} />`;
}

function Chart({ title, days, series, format }) {
  const box = useRef(null);
  useLayoutEffect(() => {
    if (!box.current || series.length === 0) return undefined;
    const xs = days.map((d) => Date.parse(`${d}T00:00:00Z`) / 1000);
    const plot = new uPlot({
      width: box.current.clientWidth || 600,
      height: 240,
      scales: {
        x: { time: true, range: [xs[0] - DAY / 2, xs.at(-1) + DAY / 2] },
        y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.15 : 1] },
      },
      axes: [{}, { values: (_u, ticks) => ticks.map(format), size: 70 }],
      series: [
        { value: (_u, ts) => (ts === null ? '—' : new Date(ts * 1000).toISOString().slice(0, 10)) },
        ...series.map((s) => ({
          label: s.label,
          stroke: COLOURS[s.colour % COLOURS.length],
          dash: s.dash,
          width: 2,
          points: { show: true, size: 8, fill: s.filled ? COLOURS[s.colour % COLOURS.length] : undefined },
          value: (_u, v) => (v === null ? '—' : format(v)),
        })),
      ],
    }, [xs, ...series.map((s) => s.values)], box.current);
    const observer = new ResizeObserver(() => plot.setSize({ width: box.current.clientWidth, height: 240 }));
    observer.observe(box.current);
    return () => { observer.disconnect(); plot.destroy(); };
  }, [JSON.stringify(series), days.length]);
  return html`
    <figure class="chart">
      <figcaption>${title}</figcaption>
      ${series.length === 0 ? html`<p class="note">No executions in this period.</p>`
                            : html`<div ref=${box} class="chart-box" role="img" aria-label=${`${title}; the table below has the figures`}></div>`}
    </figure>`;
}

function Table({ caption, rows, columns }) {
  if (rows.length === 0) return null;
  return html`
    <details class="table">
      <summary>${caption}: the figures (${rows.length} rows)</summary>
      <table>
        <caption class="visually-hidden">${caption}</caption>
        <thead><tr>${columns.map(([name]) => html`<th scope="col">${name}</th>`)}</tr></thead>
        <tbody>${rows.map((r) => html`<tr>${columns.map(([, cell]) => html`<td>${cell(r)}</td>`)}</tr>`)}</tbody>
      </table>
    </details>`;
}

function dayAxis(count) {
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  return Array.from({ length: count }, (_, i) => new Date(today - (count - 1 - i) * DAY * 1000).toISOString().slice(0, 10));
}

function isoDay(day) {
  return String(day).slice(0, 10);
}

function sum(rows, field) {
  return rows.reduce((n, r) => n + Number(r[field] || 0), 0);
}

function percent(part, whole) {
  return whole ? `${Math.round((100 * part) / whole)}%` : '—';
}
