// Who is signed in, and the one supabase-js client (Realtime, and Auth on a real project).
//
// * "supabase" mode: Supabase Auth (email + password, or a magic link). supabase-js keeps the
//   session, refreshes it, and hands each new access token to Realtime by itself.
// * "local" mode (the local stack has no Supabase Auth): the stack mints the demo user's token,
//   or you paste an access token; supabase-js asks us for it through `accessToken`.

const STORE = 'parley.console.session';

/** The claims of a JWT (not verified here: the functions and Realtime verify it). */
export function claimsOf(token) {
  const part = String(token).split('.')[1];
  if (!part) throw new Error('That is not a JWT');
  const json = atob(part.replace(/-/g, '+').replace(/_/g, '/'));
  return JSON.parse(decodeURIComponent(escape(json)));
}

function sessionFromToken(token) {
  const claims = claimsOf(token);
  if (!claims.sub || !claims.exp) throw new Error('The token has no user (sub) or no expiry (exp)');
  if (claims.exp * 1000 <= Date.now()) throw new Error('The token has expired');
  return {
    token,
    expiresAt: claims.exp * 1000,
    user: { id: claims.sub, email: claims.email || null },
    operator: claims.app_metadata?.parley_role === 'operator',
  };
}

export class Auth {
  constructor(config) {
    this.config = config;
    this.session = null;
    this.listeners = new Set();
    const { createClient } = window.supabase;
    if (config.auth.mode === 'supabase') {
      this.client = createClient(config.supabaseUrl, config.supabaseAnonKey);
    } else {
      this.client = createClient(config.supabaseUrl, config.supabaseAnonKey, {
        accessToken: async () => this.session?.token ?? config.supabaseAnonKey,
      });
    }
  }

  async start() {
    if (this.config.auth.mode === 'supabase') {
      const { data } = await this.client.auth.getSession();
      this.#fromSupabase(data.session);
      this.client.auth.onAuthStateChange((_event, session) => this.#fromSupabase(session));
      return;
    }
    const saved = localStorage.getItem(STORE);
    if (saved) {
      try {
        this.#set(sessionFromToken(saved));
      } catch {
        localStorage.removeItem(STORE);
      }
    }
  }

  get token() {
    return this.session?.token ?? null;
  }

  onChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Local stack: the stack mints the demo user's token. */
  async signInAsDemoUser() {
    const response = await fetch(this.config.auth.demoSession, { method: 'POST' });
    if (!response.ok) throw new Error(`The local stack refused the demo sign-in (${response.status})`);
    const { access_token: token } = await response.json();
    this.#useToken(token);
  }

  /** Local stack: any user's access token (e.g. one minted with the project's JWT secret). */
  signInWithToken(token) {
    this.#useToken(token.trim());
  }

  async signInWithPassword(email, password) {
    const { error } = await this.client.auth.signInWithPassword({ email, password });
    if (error) throw error;
  }

  async sendMagicLink(email) {
    const redirect = window.location.href.split('#')[0];
    const { error } = await this.client.auth.signInWithOtp({
      email,
      options: { emailRedirectTo: redirect, shouldCreateUser: false },
    });
    if (error) throw error;
  }

  async signOut() {
    await this.client.removeAllChannels();
    if (this.config.auth.mode === 'supabase') {
      await this.client.auth.signOut();
    } else {
      localStorage.removeItem(STORE);
      this.#set(null);
    }
  }

  #useToken(token) {
    const session = sessionFromToken(token);
    localStorage.setItem(STORE, token);
    this.#set(session);
  }

  #fromSupabase(session) {
    this.#set(session ? sessionFromToken(session.access_token) : null);
  }

  #set(session) {
    const changedUser = session?.user.id !== this.session?.user.id;
    this.session = session;
    if (changedUser) this.listeners.forEach((listener) => listener(session));
  }
}
