// The browser example's script: sign in with Supabase Auth, create a session, watch it, send,
// decide, and show the planner's texts as they stream — with @parley/client as plain ES modules.
import { ParleyClient, isProblem, watchSession } from '@parley/client';

const $ = (id) => document.getElementById(id);
const config = await (await fetch('config.json')).json(); // the local stack's values

const supabase = window.supabase.createClient(config.supabaseUrl, config.supabaseAnonKey);
const { error } = await supabase.auth.signInWithPassword({ email: config.email, password: config.password });
if (error) throw error;
const accessToken = async () => (await supabase.auth.getSession()).data.session?.access_token ?? null;
const parley = new ParleyClient({ chat: config.chat, planner: config.planner, accessToken });

const session = await parley.chat.createSession({ title: 'Browser example' });
let planId = null;
const watch = watchSession({
  client: parley, supabase, sessionId: session.id,
  onText: (plan, texts) => {
    if (plan !== planId) return;
    $('texts').replaceChildren(...texts.map((t) => {
      const block = document.createElement('p');
      block.className = `text${t.final ? ' final' : ''}`;
      block.textContent = t.text;
      return block;
    }));
  },
  onChange: (w) => { $('status').value = w.error ? `failed: ${w.error.message}` : w.connection; },
});
await watch.ready;
$('message').value = config.demoMessage;

$('send').addEventListener('submit', async (event) => {
  event.preventDefault();
  $('problem').hidden = true;
  try {
    ({ plan_id: planId } = await parley.send({ session_id: session.id, message: $('message').value }));
    await follow(await watch.turnEnd(planId));
  } catch (failure) {
    $('problem').hidden = false;
    $('problem').textContent = isProblem(failure, 'turn-running')
      ? `A turn is still running (${failure.problem.plan_status}): decide or wait.`
      : failure.message;
  }
});

/** Show a turn's pause for approval (buttons that decide), or its end. */
async function follow(end) {
  const pending = end.plan.approvals.filter((a) => a.status === 'pending');
  $('approvals').hidden = pending.length === 0;
  $('pending').replaceChildren(...pending.map((approval) => {
    const item = document.createElement('li');
    item.textContent = `${approval.tool_name} ${JSON.stringify(approval.tool_args)} `;
    for (const decision of ['approve', 'reject']) {
      const button = document.createElement('button');
      button.textContent = decision === 'approve' ? 'Approve' : 'Reject';
      button.addEventListener('click', async () => {
        $('approvals').hidden = true;
        await parley.decide(end.planId, approval.id, { decision }); // answered at once
        await follow(await watch.turnEnd(end.planId, end.seq));
      });
      item.append(button);
    }
    return item;
  }));
  if (end.status !== 'awaiting_approval') {
    $('answer').hidden = false;
    $('answer-text').textContent = `${end.status}: ${end.done?.data.answer ?? ''}`;
  }
}
