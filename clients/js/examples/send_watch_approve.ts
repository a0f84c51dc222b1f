import { createClient } from '@supabase/supabase-js';
import { ParleyClient, watchSession } from '@parley/client';

declare const SUPABASE_URL: string, SUPABASE_ANON_KEY: string, CHAT_URL: string, PLANNER_URL: string;
declare const EMAIL: string, PASSWORD: string;

// Sign in with Supabase Auth: supabase-js gives Realtime the token; ParleyClient asks it for one.
const supabase = createClient(SUPABASE_URL, SUPABASE_ANON_KEY);
const { error } = await supabase.auth.signInWithPassword({ email: EMAIL, password: PASSWORD });
if (error) throw error;
const accessToken = async () => (await supabase.auth.getSession()).data.session?.access_token ?? null;
const parley = new ParleyClient({ chat: CHAT_URL, planner: PLANNER_URL, accessToken });

const session = await parley.chat.createSession({ title: 'My week' });
const watch = watchSession({
  client: parley, supabase, sessionId: session.id,
  onEvent: (event) => { if (event.type === 'token') process.stdout.write(event.data.text); },
});
await watch.ready;

const message = 'Plan my week: list my tasks and my calendar, then delete the first calendar event';
const { plan_id } = await parley.send({ session_id: session.id, message });
let end = await watch.turnEnd(plan_id);
while (end.status === 'awaiting_approval') {
  for (const approval of end.plan.approvals.filter((a) => a.status === 'pending')) {
    await parley.planner.decideApproval(plan_id, approval.id, { decision: 'approve' });
  }
  end = await watch.turnEnd(plan_id, end.seq);
}
console.log(`\n${end.status}:`, end.done?.data.answer);
watch.close();
