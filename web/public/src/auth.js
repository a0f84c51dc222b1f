// Who is signed in, and the one supabase-js client (Auth and Realtime).
//
// Supabase Auth signs users in — email and password (and sign-up), or a magic link — on a
// hosted project and on the local stack alike (the stack serves Supabase Auth's API at
// /auth/v1). supabase-js keeps the session, refreshes it, and hands each new access token to
// Realtime by itself; `token` is what the functions get.

export class Auth {
  constructor(config) {
    this.config = config;
    this.session = null;
    this.listeners = new Set();
    const { createClient } = window.supabase;
    this.client = createClient(config.supabaseUrl, config.supabaseAnonKey);
  }

  async start() {
    const { data } = await this.client.auth.getSession();
    this.#fromSupabase(data.session);
    this.client.auth.onAuthStateChange((_event, session) => this.#fromSupabase(session));
  }

  get token() {
    return this.session?.token ?? null;
  }

  onChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async signInWithPassword(email, password) {
    const { error } = await this.client.auth.signInWithPassword({ email, password });
    if (error) throw error;
  }

  /** A new account; true when it is signed in at once (no email confirmation asked). */
  async signUp(email, password) {
    const { data, error } = await this.client.auth.signUp({ email, password });
    if (error) throw error;
    return Boolean(data.session);
  }

  /** The local stack's demo user, whose credentials its config.json gives (`auth.demoUser`). */
  async signInAsDemoUser() {
    const { email, password } = this.config.auth.demoUser;
    await this.signInWithPassword(email, password);
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
    await this.client.auth.signOut();
    this.#set(null);
  }

  // supabase-js's session carries its user (from the same Auth response as the token), so
  // nothing here decodes the token.
  #fromSupabase(session) {
    this.#set(session ? {
      token: session.access_token,
      user: { id: session.user.id, email: session.user.email || null },
      operator: session.user.app_metadata?.parley_role === 'operator',
    } : null);
  }

  #set(session) {
    const changedUser = session?.user.id !== this.session?.user.id;
    this.session = session;
    if (changedUser) this.listeners.forEach((listener) => listener(session));
  }
}
