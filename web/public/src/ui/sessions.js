// The sessions sidebar, and the open session's header (rename, archive, delete, totals).

import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';
import { money, usage as usageText, when } from '../format.js';

export function SessionList({ api, currentId, version }) {
  const [sessions, setSessions] = useState(null);
  const [archived, setArchived] = useState(false);
  const [error, setError] = useState(null);
  useEffect(() => {
    api.chat.listSessions({ include_archived: archived }).then((r) => { setSessions(r.sessions); setError(null); })
      .catch((e) => setError(e.message));
  }, [version, archived]);
  return html`
    <nav class="sessions" aria-label="Sessions">
      <a class="button primary" href="#/new">+ New chat</a>
      <label class="check"><input type="checkbox" checked=${archived}
        onChange=${(e) => setArchived(e.currentTarget.checked)} /> Show archived</label>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      ${sessions === null && !error && html`<p class="note">Loading…</p>`}
      ${sessions?.length === 0 && html`<p class="note">No sessions yet.</p>`}
      <ul>
        ${(sessions || []).map((s) => html`
          <li key=${s.id}>
            <a href=${`#/s/${s.id}`} aria-current=${s.id === currentId ? 'page' : undefined}>
              <span class="title">${s.title}</span>
              <span class="meta">${s.status === 'archived' ? '▣ archived · ' : ''}${when(s.last_message_at || s.created_at)} · ${money(s.cost_usd)}</span>
            </a>
          </li>`)}
      </ul>
    </nav>`;
}

export function SessionHeader({ session, api, onChanged, onDeleted, connection, syncError }) {
  const [renaming, setRenaming] = useState(false);
  const [error, setError] = useState(null);
  const act = (promise) => promise.then(onChanged).catch((e) => setError(e.message));
  const rename = (event) => {
    event.preventDefault();
    const title = new FormData(event.currentTarget).get('title').trim();
    if (title) act(api.chat.updateSession(session.id, { title }));
    setRenaming(false);
  };
  const remove = () => {
    if (!window.confirm(`Delete “${session.title}”? It disappears from every list.`)) return;
    api.chat.deleteSession(session.id).then(onDeleted).catch((e) => setError(e.message));
  };
  const archived = session.status === 'archived';
  return html`
    <header class="session-header">
      ${renaming
        ? html`<form onSubmit=${rename} class="rename">
            <label class="visually-hidden" for="session-title">Session title</label>
            <input id="session-title" name="title" defaultValue=${session.title} maxlength="200" autofocus />
            <button type="submit">Save</button> <button type="button" onClick=${() => setRenaming(false)}>Cancel</button>
          </form>`
        : html`<h2>${session.title}${archived ? ' (archived)' : ''}</h2>`}
      <div class="session-actions">
        ${!renaming && html`<button onClick=${() => setRenaming(true)}>Rename</button>`}
        <button onClick=${() => act(api.chat.updateSession(session.id, { status: archived ? 'active' : 'archived' }))}>
          ${archived ? 'Restore' : 'Archive'}</button>
        <button onClick=${remove}>Delete</button>
      </div>
      <p class="totals" title="Every model call of every turn in this session">
        Session: ${usageText(session)}
        <span class="live" data-state=${connection} role="status">${LIVE[connection] || connection}</span>
      </p>
      ${syncError && (connection === 'failed'
        ? html`<p class="error" role="alert">This session's live channel was closed (${syncError.message}):
            reload to join it again.</p>`
        : html`<p class="error" role="alert">Could not catch up (${syncError.message});
            this view may miss recent messages until the next reconnect or reload.</p>`)}
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </header>`;
}

const LIVE = {
  live: '● Live',
  connecting: '○ Connecting…',
  reconnecting: '◌ Reconnecting — will catch up',
  offline: '○ Offline',
  failed: '✗ Not live',
};
