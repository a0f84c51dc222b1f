// Sign-in with Supabase Auth: email and password, a new account ("Sign up"), or a magic link,
// as config.json's `auth.methods` allow. On the local stack, also the demo user in one click
// (the demo link `#/demo` signs in with it by itself): the same Auth, with the demo user's
// credentials from config.json.

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
  const methods = config.auth.methods || ['password', 'magic_link'];
  return html`
    <main id="main" class="signin">
      <h1>Parley Console</h1>
      <p>Chat with Parley's planner and watch its executors work — ${config.label || 'your project'}.</p>
      ${config.auth.demoUser && html`<${DemoUser} auth=${auth} user=${config.auth.demoUser} run=${run} busy=${busy} demo=${demo} />`}
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
        ${methods.includes('signup') && html`
          <details>
            <summary>Create an account</summary>
            <form aria-label="Sign up" onSubmit=${run(async (form) => {
              const signedIn = await auth.signUp(form.get('email'), form.get('password'));
              if (!signedIn) setNote('Check your email to confirm your account, then sign in.');
            })}>
              <label>Email <input name="email" type="email" autocomplete="username" required /></label>
              <label>New password <input name="password" type="password" autocomplete="new-password" required /></label>
              <button type="submit" disabled=${busy}>Sign up</button>
            </form>
          </details>`}
      </section>
      ${note && html`<p role="status">${note}</p>`}
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </main>`;
}

function DemoUser({ auth, user, run, busy, demo }) {
  const signIn = run(() => auth.signInAsDemoUser());
  // The demo link (`#/demo`, printed by the local stack) signs in by itself: whoever ran the
  // stack opened it.
  useEffect(() => { if (demo) signIn(); }, [demo]);
  return html`
    <section aria-label="Demo user">
      <button class="primary big" disabled=${busy} onClick=${signIn}>
        Sign in as the demo user
      </button>
      <p class="note">Local stack: the demo user is ${user.email}, password ${user.password}.</p>
    </section>`;
}
