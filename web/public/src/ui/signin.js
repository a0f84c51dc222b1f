// Sign-in: Supabase Auth (email + password, or a magic link) against a real project; on the
// local stack, the demo user (the stack mints its token) or any access token you paste.

import { useEffect, useState } from 'preact/hooks';
import { html } from '../html.js';

export function SignIn({ config, auth, demo }) {
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const [busy, setBusy] = useState(false);
  const run = (action) => async (event) => {
    event?.preventDefault();
    const form = event?.currentTarget instanceof HTMLFormElement ? new FormData(event.currentTarget) : null;
    setBusy(true);
    setError(null);
    try {
      await action(form);
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  return html`
    <main id="main" class="signin">
      <h1>Parley Console</h1>
      <p>Chat with Parley's planner and watch its executors work — ${config.label || 'your project'}.</p>
      ${config.auth.mode === 'local' ? html`<${Local} auth=${auth} run=${run} busy=${busy} demo=${demo} />`
                                     : html`<${Supabase} auth=${auth} config=${config} run=${run} busy=${busy} setNote=${setNote} />`}
      ${note && html`<p role="status">${note}</p>`}
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </main>`;
}

function Local({ auth, run, busy, demo }) {
  const signIn = run(() => auth.signInAsDemoUser());
  // The demo link (`#/demo`, printed by the local stack) signs in by itself: whoever ran the
  // stack opened it.
  useEffect(() => { if (demo) signIn(); }, [demo]);
  return html`
    <section aria-label="Local sign-in">
      <button class="primary big" disabled=${busy} onClick=${signIn}>
        Sign in as the demo user
      </button>
      <p class="note">The local stack has no Supabase Auth: it mints the demo user's token.</p>
      <details>
        <summary>Use an access token</summary>
        <form onSubmit=${run((form) => auth.signInWithToken(String(form.get('token') || '')))}>
          <label>Access token (a JWT signed with the project's secret)
            <textarea name="token" rows="3" required></textarea></label>
          <button type="submit" disabled=${busy}>Sign in with this token</button>
        </form>
      </details>
    </section>`;
}

function Supabase({ auth, config, run, busy, setNote }) {
  const methods = config.auth.methods || ['password', 'magic_link'];
  return html`
    <section aria-label="Sign in">
      ${methods.includes('password') && html`
        <form onSubmit=${run((form) => auth.signInWithPassword(form.get('email'), form.get('password')))}>
          <label>Email <input name="email" type="email" autocomplete="username" required /></label>
          <label>Password <input name="password" type="password" autocomplete="current-password" required /></label>
          <button class="primary" type="submit" disabled=${busy}>Sign in</button>
        </form>`}
      ${methods.includes('magic_link') && html`
        <form onSubmit=${run(async (form) => {
          await auth.sendMagicLink(form.get('email'));
          setNote('Check your email: the link signs you in here.');
        })}>
          <label>Email <input name="email" type="email" required /></label>
          <button type="submit" disabled=${busy}>Email me a sign-in link</button>
        </form>`}
    </section>`;
}
