// The console's configuration: `config.json` beside index.html (served by the local stack, or
// copied from config.example.json for a deployment). It holds no secrets: the anon key is public
// (so are the local stack's demo user's credentials, `auth.demoUser`: local only).

export async function loadConfig() {
  const response = await fetch('config.json', { cache: 'no-store' });
  if (!response.ok) {
    throw new Error(
      `config.json could not be loaded (HTTP ${response.status}). ` +
        'Copy config.example.json to config.json beside index.html and fill it in.',
    );
  }
  const config = await response.json();
  const missing = ['supabaseUrl', 'supabaseAnonKey', 'functions', 'auth'].filter((k) => !config[k]);
  if (missing.length) throw new Error(`config.json lacks ${missing.join(', ')}`);
  if (config.auth.mode !== 'supabase') {
    throw new Error('config.json: auth.mode must be "supabase" (the local stack serves Supabase Auth too)');
  }
  const base = new URL('.', window.location.href);
  const resolve = (url) => new URL(url, base).href.replace(/\/+$/, '');
  config.functions = { chat: resolve(config.functions.chat), planner: resolve(config.functions.planner) };
  return config;
}
