// supabase-js's Auth against the local stack, driven by tests/auth/test_supabase_js.py: sign up,
// sign in, refresh, use the session with Parley's functions and a private Realtime channel, sign
// out; and the errors a frontend meets. Prints one JSON object: what each step saw.
import { createClient } from '@supabase/supabase-js'
import WebSocket from 'ws' // Node 20 has no native WebSocket

const cfg = JSON.parse(process.argv[2])
const supabase = createClient(cfg.url, cfg.key, {
  auth: { persistSession: false, autoRefreshToken: false },
  realtime: { transport: WebSocket },
})
const error = (e) => e && { name: e.name, status: e.status, code: e.code, message: e.message }
const out = {}

const signUp = await supabase.auth.signUp({ email: cfg.email, password: cfg.password })
out.signUp = { error: error(signUp.error), user: signUp.data.user, hasSession: !!signUp.data.session }
out.signUpAgain = error((await supabase.auth.signUp({ email: cfg.email, password: cfg.password })).error)
out.weakPassword = error((await supabase.auth.signUp({ email: 'weak-' + cfg.email, password: '123' })).error)
await supabase.auth.signOut({ scope: 'local' })

out.wrongPassword = error((await supabase.auth.signInWithPassword({ email: cfg.email, password: 'not-it' })).error)
out.unknownUser = error((await supabase.auth.signInWithPassword({ email: 'nobody-' + cfg.email, password: cfg.password })).error)

const signIn = await supabase.auth.signInWithPassword({ email: cfg.email, password: cfg.password })
out.signIn = { error: error(signIn.error), userId: signIn.data.user?.id }
const first = signIn.data.session

const refreshed = await supabase.auth.refreshSession()
out.refresh = { error: error(refreshed.error), rotated: refreshed.data.session?.refresh_token !== first.refresh_token }
const second = refreshed.data.session
await supabase.auth.refreshSession() // second is now revoked and no longer the live token's parent
out.reused = error((await supabase.auth.refreshSession({ refresh_token: first.refresh_token })).error)

// A fresh sign-in (reuse revoked that session), its token used as a frontend uses it.
const live = (await supabase.auth.signInWithPassword({ email: cfg.email, password: cfg.password })).data.session
const headers = { Authorization: `Bearer ${live.access_token}`, 'Content-Type': 'application/json' }
const created = await fetch(`${cfg.functions}/chat/sessions`, { method: 'POST', headers, body: '{"title": "from supabase-js"}' })
const chat = await created.json()
out.functions = { status: created.status, sessionId: chat.id }
out.getUser = (await supabase.auth.getUser()).data.user?.id

out.channel = await new Promise((resolve) => {
  const channel = supabase.channel(`session:${chat.id}`, { config: { private: true } })
  channel.subscribe((status, err) => {
    if (status === 'SUBSCRIBED' || status === 'CHANNEL_ERROR' || status === 'TIMED_OUT') {
      resolve({ status, error: err ? String(err) : null })
    }
  })
})
await supabase.removeAllChannels()

const signOut = await supabase.auth.signOut()
out.signOut = error(signOut.error)
out.afterSignOut = error((await supabase.auth.getUser(live.access_token)).error)
out.secondToken = second.access_token
process.stdout.write(JSON.stringify(out) + '\n')
process.exit(0)
