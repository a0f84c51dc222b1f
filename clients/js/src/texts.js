// The planner's streamed text, message by message, whatever order its batches arrive in — and
// the stored text once the tables hold it. Pure: no I/O, no timers (watch.js drives it).
//
// A planner call streams its words as `token` batches over Realtime's REST endpoint, numbered
// from a block of `seq`s reserved before the call; then the statement that stores the message
// (the words before its tool calls, or the answer) takes the next numbers. So every batch of a
// message has a `seq` below that message's row and above the plan's message before it:
//
//   … 2 status_update · 3 4 5 token · 18 assistant row (M1) · 19 tool_call{message_id: M1} …
//   … 31 tool_result · 32 33 token · 48 assistant row (M2) · 50 done{message_id: M2}
//
// Batches travel apart from the durable events, so one may arrive after later events (the
// sequencer then drops it from `onEvent`: it would break seq order), or not at all (a socket
// that dropped; batches are never replayed). Here each batch goes to its message by its `seq`,
// in place, whenever it arrives; and a message whose row was read has the stored text, which
// is the truth: a lost batch leaves no hole once the tables are read.
//
// What tells a message's bounds: its row (a timeline entry: `seq`, `message_id`, `content`),
// or before the row is read, the first durable event naming it (`tool_call`, `done`, `error`
// with `data.message_id`: numbered after the row, and before the next message's batches).

/**
 * @typedef {object} StreamedText
 * @property {string} planId
 * @property {string | null} messageId the stored message it is (null: still streaming)
 * @property {number} seq where it stands in the session: its first batch's `seq` (or, with no
 *   batch, its row's): below the events that follow it (its tool calls, its `done`)
 * @property {string} text what arrived of it, in order; the stored text once read
 * @property {boolean} final the stored text (it will not change)
 */

export class StreamedTexts {
  /** @param {{ onText?: (planId: string, texts: StreamedText[]) => void }} [handlers] */
  constructor({ onText = () => {} } = {}) {
    this.onText = onText;
    this.plans = new Map(); // plan id → { batches: Map(seq → text), bounds: Map(message id → { seq, stored }) }
    this.shown = new Map(); // plan id → the texts last announced (JSON)
  }

  #plan(planId) {
    if (!this.plans.has(planId)) this.plans.set(planId, { batches: new Map(), bounds: new Map() });
    return this.plans.get(planId);
  }

  /** A `token` event, in any order, any number of times. */
  token(event) {
    if (!event.plan_id || typeof event.data?.text !== 'string') return;
    const plan = this.#plan(event.plan_id);
    if (plan.batches.has(event.seq)) return;
    plan.batches.set(event.seq, event.data.text);
    this.#changed(event.plan_id);
  }

  /** A durable event: one that names a stored planner message bounds that message's batches. */
  event(event) {
    const messageId = event.data?.message_id;
    if (!event.plan_id || !messageId || !['tool_call', 'done', 'error'].includes(event.type)) return;
    this.#bound(event.plan_id, messageId, event.seq, undefined);
  }

  /** A timeline entry (`GET /sessions/{id}/timeline`): a planner message's row and its text. */
  entry(entry) {
    if (entry.source !== 'chat' || entry.kind !== 'assistant' || !entry.plan_id) return;
    this.#bound(entry.plan_id, entry.message_id, entry.seq, entry.content);
  }

  #bound(planId, messageId, seq, stored) {
    const plan = this.#plan(planId);
    const known = plan.bounds.get(messageId);
    const next = {
      seq: Math.min(known?.seq ?? Infinity, seq),
      stored: stored ?? known?.stored ?? null,
    };
    if (known && known.seq === next.seq && known.stored === next.stored) return;
    plan.bounds.set(messageId, next);
    this.#changed(planId);
  }

  /**
   * The plan's texts in order: each stored message's (those that have words), then the one
   * streaming, if any.
   * @param {string} planId
   * @returns {StreamedText[]}
   */
  texts(planId) {
    const plan = this.plans.get(planId);
    if (!plan) return [];
    const bounds = [...plan.bounds].map(([messageId, b]) => ({ messageId, ...b })).sort((a, b) => a.seq - b.seq);
    const batches = [...plan.batches].sort(([a], [b]) => a - b);
    const texts = [];
    let after = -Infinity;
    for (const bound of [...bounds, { messageId: null, seq: Infinity, stored: null }]) {
      const mine = batches.filter(([seq]) => seq > after && seq < bound.seq);
      const text = bound.stored ?? mine.map(([, words]) => words).join('');
      const seq = mine[0]?.[0] ?? bound.seq;
      if (text !== '') texts.push({ planId, messageId: bound.messageId, seq, text, final: bound.stored !== null });
      after = bound.seq;
    }
    return texts;
  }

  #changed(planId) {
    const texts = this.texts(planId);
    const shown = JSON.stringify(texts);
    if (this.shown.get(planId) === shown) return;
    this.shown.set(planId, shown);
    this.onText(planId, texts);
  }
}
