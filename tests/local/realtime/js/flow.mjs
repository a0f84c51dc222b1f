// supabase-js against the local Realtime server, driven by tests/realtime/test_js_client.py.
// Prints one JSON object per line; reads commands ({"cmd": "send" | "quit", ...}) from stdin.
import { createClient } from '@supabase/supabase-js'
import WebSocket from 'ws' // Node 20 has no native WebSocket
import readline from 'node:readline'

const cfg = JSON.parse(process.argv[2])
const out = (obj) => process.stdout.write(JSON.stringify(obj) + '\n')

const supabase = createClient(cfg.url, cfg.anonKey, {
  realtime: {
    transport: WebSocket,
    vsn: cfg.vsn,
    heartbeatIntervalMs: cfg.heartbeatMs,
    heartbeatCallback: (status) => out({ kind: 'heartbeat', status }),
  },
})
supabase.realtime.setAuth(cfg.userToken)

// cfg.config: the channel's config (default: broadcast self + ack); cfg.sessionId: also follow
// that session's agent_chat_messages with postgres_changes.
const channel = supabase.channel(cfg.topic, { config: cfg.config ?? { broadcast: { self: true, ack: true } } })
channel.on('broadcast', { event: '*' }, (msg) =>
  out({ kind: 'broadcast', event: msg.event, payload: msg.payload, meta: msg.meta }))
if (cfg.sessionId) {
  channel.on('postgres_changes',
    { event: '*', schema: 'public', table: 'agent_chat_messages', filter: `session_id=eq.${cfg.sessionId}` },
    (change) => out({ kind: 'change', eventType: change.eventType, new: change.new, old: change.old,
                      commit_timestamp: change.commit_timestamp, errors: change.errors }))
}
channel
  .on('system', {}, (payload) => out({ kind: 'system', payload }))
  .subscribe((status, err) => out({ kind: 'status', status, error: err ? String(err) : null }))

readline.createInterface({ input: process.stdin }).on('line', async (line) => {
  const command = JSON.parse(line)
  if (command.cmd === 'send') {
    const result = await channel.send({ type: 'broadcast', event: command.event, payload: command.payload })
    out({ kind: 'sent', result })
  } else if (command.cmd === 'quit') {
    await supabase.removeAllChannels()
    out({ kind: 'bye' })
    process.exit(0)
  }
})
