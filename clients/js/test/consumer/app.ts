// An app's use of @parley/client, type-checked against the installed tarball's `exports` and
// declarations: both entry points, the problem kinds, the watch, the hook.
import { createClient } from '@supabase/supabase-js';
import { ApiError, ParleyClient, isProblem, problemTypes, watchSession } from '@parley/client';
import type { ParleyEvent, ProblemName, StreamedText, TurnEnd } from '@parley/client';
import { ParleyProvider, useParleySession } from '@parley/client/react';
import type { ParleySession, ParleyTurn } from '@parley/client/react';

export async function app(url: string, key: string, chat: string, planner: string): Promise<string | null> {
  const supabase = createClient(url, key);
  const parley = new ParleyClient({ chat, planner, accessToken: async () => (await supabase.auth.getSession()).data.session?.access_token ?? null });
  const session = await parley.chat.createSession({ title: 'typed' });
  const texts: StreamedText[][] = [];
  const watch = watchSession({ client: parley, supabase, sessionId: session.id, onText: (_plan, t) => { texts.push(t); } });
  await watch.ready;
  try {
    const { plan_id } = await parley.send({ session_id: session.id, message: 'hello' });
    const end: TurnEnd = await watch.turnEnd(plan_id);
    const pending = end.plan.approvals.filter((a) => a.status === 'pending');
    if (pending[0]) await parley.decide(plan_id, pending[0].id, { decision: 'approve' });
    return end.done?.data.answer ?? null;
  } catch (error) {
    if (isProblem(error, 'turn-running')) {
      const running: string = error.problem.plan_id; // narrowed: the running turn
      const status: 'pending' | 'executing' | 'awaiting_approval' | 'completed' | 'failed' | 'cancelled' = error.problem.plan_status;
      return `${running} ${status}`;
    }
    if (isProblem(error, 'client-message-id-reused')) return error.problem.message_id;
    if (error instanceof ApiError) {
      const kind: ProblemName | null = error.kind;
      return kind ?? problemTypes['not-found'].type;
    }
    throw error;
  } finally {
    watch.close();
  }
}

export function useTurns(sessionId: string | null): ParleyTurn[] {
  const view: ParleySession = useParleySession(sessionId);
  const events: ParleyEvent[] = view.events;
  return events.length ? view.turns : [];
}

export const provider: typeof ParleyProvider = ParleyProvider;
