// clients/js/examples/send_watch_approve.ts
// With `python3 dev.py run` serving, in clients/js: npm run example (Node 20 or newer).
import { createClient } from '@supabase/supabase-js';
import WebSocket from 'ws'; // Node 20 has no WebSocket of its own (in a browser or Node 22+, leave it out)
import { ParleyClient, watchSession } from '@parley/client';

/** A setting from the environment: `npm run example` reads the local stack's from .parley/client.env. */
function env(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: start the local stack (python3 dev.py run), which writes .parley/client.env`);
  return value;
}

// Sign in with Supabase Auth: supabase-js gives Realtime the token; ParleyClient asks it for one.
const transport = WebSocket as unknown as typeof globalThis.WebSocket; // ws's typings differ from supabase-js's
const supabase = createClient(env('SUPABASE_URL'), env('SUPABASE_ANON_KEY'), { realtime: { transport } });
const { error } = await supabase.auth.signInWithPassword({ email: env('PARLEY_EMAIL'), password: env('PARLEY_PASSWORD') });
if (error) throw error;
const accessToken = async () => (await supabase.auth.getSession()).data.session?.access_token ?? null;
const parley = new ParleyClient({ chat: env('PARLEY_CHAT_URL'), planner: env('PARLEY_PLANNER_URL'), accessToken });

const session = await parley.chat.createSession({ title: 'My week' });
const printed = new Set<string>();
const watch = watchSession({
  client: parley, supabase, sessionId: session.id,
  // The planner's texts — its words before each tool call, then its answer — each once complete.
  onText: (planId, texts) => {
    for (const text of texts.filter((t) => t.final && !printed.has(t.messageId!))) {
      printed.add(text.messageId!);
      console.log(`planner: ${text.text}`);
    }
  },
});
await watch.ready; // rejects with Realtime's reason if the channel is refused

const message = 'Plan my week: list my tasks and my calendar, then delete the first calendar event';
const { plan_id } = await parley.send({ session_id: session.id, message });
let end = await watch.turnEnd(plan_id);
while (end.status === 'awaiting_approval') {
  for (const approval of end.plan.approvals.filter((a) => a.status === 'pending')) {
    console.log(`approving ${approval.tool_name} ${JSON.stringify(approval.tool_args)}`);
    await parley.decide(plan_id, approval.id, { decision: 'approve' }); // answered at once
  }
  end = await watch.turnEnd(plan_id, end.seq);
}
console.log(`${end.status}: ${end.done?.data.answer}`);
watch.close();
process.exit(end.status === 'completed' ? 0 : 1); // supabase-js's timers would keep Node up a while
