// How numbers, money and states read on screen. Every state has a word and a symbol, so
// nothing depends on colour alone.

const integer = new Intl.NumberFormat('en');

export function tokens(n) {
  return integer.format(Number(n) || 0);
}

/** Money arrives as a decimal string ("0.000123"): exact on the wire, rounded only here. */
export function money(value) {
  const n = Number(value) || 0;
  if (n === 0) return '$0';
  if (n < 0.0001) return '<$0.0001';
  return `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
}

export function duration(ms) {
  if (ms === null || ms === undefined) return '—';
  const n = Number(ms);
  return n < 1000 ? `${Math.round(n)} ms` : `${(n / 1000).toFixed(n < 10000 ? 1 : 0)} s`;
}

export function when(iso) {
  if (!iso) return '';
  const date = new Date(iso);
  const today = new Date().toDateString() === date.toDateString();
  return today
    ? date.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })
    : date.toLocaleDateString([], { month: 'short', day: 'numeric' });
}

/** "1,234 in (800 cached) · 56 out · $0.0012" */
export function usage(u) {
  if (!u) return '';
  const cached = Number(u.cache_hit_tokens) ? ` (${tokens(u.cache_hit_tokens)} cached)` : '';
  return `${tokens(u.prompt_tokens)} in${cached} · ${tokens(u.completion_tokens)} out · ${money(u.cost_usd)}`;
}

const STATES = {
  pending: ['○', 'pending'],
  thinking: ['◔', 'thinking'],
  executing: ['◐', 'running'],
  running: ['◐', 'running'],
  active: ['◐', 'running'],
  awaiting_approval: ['‖', 'waiting for you'],
  completed: ['✓', 'completed'],
  failed: ['✗', 'failed'],
  timeout: ['◷', 'timed out'],
  abandoned: ['✗', 'abandoned'],
  skipped: ['↷', 'skipped'],
  cancelled: ['⊘', 'cancelled'],
};

/** [symbol, word] for a plan, step or thread status. */
export function state(status) {
  return STATES[status] || ['•', String(status || 'unknown').replaceAll('_', ' ')];
}

export function clip(text, n) {
  const flat = String(text || '').replace(/\s+/g, ' ').trim();
  return flat.length <= n ? flat : `${flat.slice(0, n - 1)}…`;
}

export function pretty(value) {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}
