// Parley Console: boot (config, sign-in) and the hash routes.
//   #/            the sessions (and a hint)      #/s/<id>   one session
//   #/new         a new chat                     #/ops      operators' charts
//   #/demo        the link `dev.py run` prints: signs in as the demo user (when no one is),
//                 then a new chat that sends the local stack's demo message at once

import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html } from './html.js';
import { ParleyClient } from '@parley/client';
import { Auth } from './auth.js';
import { loadConfig } from './config.js';
import { Operations } from './ui/operations.js';
import { SessionList } from './ui/sessions.js';
import { DemoTurn, NewChat, SessionView } from './ui/session_view.js';
import { SignIn } from './ui/signin.js';

function useRoute() {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const changed = () => setHash(window.location.hash);
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  const session = hash.match(/^#\/s\/([0-9a-f-]{36})$/i);
  if (session) return { view: 'session', id: session[1].toLowerCase() };
  if (hash === '#/new') return { view: 'new' };
  if (hash === '#/ops') return { view: 'ops' };
  if (hash === DEMO_ROUTE) return { view: 'demo' };
  return { view: 'home' };
}

const DEMO_ROUTE = '#/demo';

function App({ app }) {
  const [session, setSession] = useState(app.auth.session);
  const [sessionsVersion, setSessionsVersion] = useState(0);
  const route = useRoute();
  useEffect(() => app.auth.onChange(setSession), []);
  if (!session) return html`<${SignIn} config=${app.config} auth=${app.auth} demo=${route.view === 'demo'} />`;
  const changed = () => setSessionsVersion((v) => v + 1);
  return html`
    <div class="shell">
      <header class="top">
        <h1><a href="#/">Parley Console</a></h1>
        <nav aria-label="Views">
          <a href="#/" aria-current=${route.view !== 'ops' ? 'page' : undefined}>Chat</a>
          <a href="#/ops" aria-current=${route.view === 'ops' ? 'page' : undefined}>Operations</a>
        </nav>
        <span class="who" title=${session.user.id}>${session.user.email || session.user.id}
          ${app.config.label ? html` · ${app.config.label}` : ''}</span>
        <button onClick=${() => app.auth.signOut()}>Sign out</button>
      </header>
      ${route.view === 'ops'
        ? html`<${Operations} api=${app.api} operator=${session.operator} />`
        : html`
          <div class="workspace">
            <${SessionList} api=${app.api} currentId=${route.id} version=${sessionsVersion} />
            ${route.view === 'session' && html`<${SessionView} key=${route.id} app=${app} sessionId=${route.id} onSessionsChanged=${changed} />`}
            ${route.view === 'new' && html`<${NewChat} app=${app} onSessionsChanged=${changed} />`}
            ${route.view === 'demo' && html`<${DemoTurn} app=${app} onSessionsChanged=${changed} />`}
            ${route.view === 'home' && html`
              <main id="main" class="session home">
                <h2>Welcome</h2>
                <p>Open a session on the left, or <a href="#/new">start a new chat</a>.</p>
              </main>`}
          </div>`}
    </div>`;
}

async function boot() {
  const root = document.getElementById('app');
  try {
    const config = await loadConfig();
    const auth = new Auth(config);
    await auth.start();
    // Every call carries the signed-in user's current token; a 401 (expired, revoked) signs out.
    const api = new ParleyClient({
      chat: config.functions.chat,
      planner: config.functions.planner,
      accessToken: () => auth.token,
      onUnauthorized: () => auth.signOut(),
    });
    root.textContent = '';
    render(html`<${App} app=${{ config, auth, api }} />`, root);
  } catch (error) {
    root.innerHTML = '';
    render(html`<main class="signin"><h1>Parley Console</h1><p class="error" role="alert">${error.message}</p></main>`, root);
  }
}

boot();
