import { html } from '../html.js';
import { state } from '../format.js';

/** A status as a symbol and a word (colour is added by CSS, never relied on). */
export function Badge({ status }) {
  const [symbol, word] = state(status);
  return html`<span class="badge" data-status=${status}>${symbol} ${word}</span>`;
}
