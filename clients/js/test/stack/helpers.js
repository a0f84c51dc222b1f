// The local stack, as tests/clients/test_js_package.py describes it in PARLEY_STACK (URLs,
// the anon key, users with their tokens), and a network the tests control between supabase-js
// and the local Realtime server.

import { createHmac } from 'node:crypto';
import { createClient } from '@supabase/supabase-js';
import WebSocket from 'ws'; // Node 20 has no WebSocket of its own
import { ParleyClient } from '../../src/index.js';

export const stack = process.env.PARLEY_STACK ? JSON.parse(process.env.PARLEY_STACK) : null;
/** For `test(name, { skip }, …)`: these tests need the stack pytest starts. */
export const skip = stack
  ? false
  : 'PARLEY_STACK is not set: run these through pytest (tests/clients/test_js_package.py), which starts the local stack';

/** @param {{ token: string }} user */
export function parleyFor(user, options = {}) {
  return new ParleyClient({
    chat: stack.chat, planner: stack.planner, executor: stack.executor, accessToken: user.token, ...options,
  });
}

/** A supabase-js client holding the user's token, as a browser app would have it
 * (`user.token` is read afresh each time supabase-js asks: change it to refresh). */
export function supabaseFor(user, network = new Network()) {
  return createClient(stack.supabaseUrl, stack.anonKey, {
    accessToken: async () => user.token,
    realtime: { transport: network.transport, heartbeatIntervalMs: 1000, reconnectAfterMs: () => 100 },
  });
}

/** A user signed up now through the stack's Auth (with the demo data the local stack gives a new
 * account): `{ id, token }`, as `stack.users` has them. */
export async function newUser() {
  const response = await fetch(`${stack.supabaseUrl}/auth/v1/signup`, {
    method: 'POST',
    headers: { apikey: stack.anonKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `watch-${crypto.randomUUID()}@example.com`, password: 'choose-a-password' }),
  });
  const session = await response.json();
  if (!response.ok) throw new Error(`sign-up: ${response.status} ${JSON.stringify(session)}`);
  return { id: session.user.id, token: session.access_token };
}

/** A supabase-js client with no user signed in: it holds the project's anon (publishable) key. */
export function anonymousSupabase(network = new Network()) {
  return createClient(stack.supabaseUrl, stack.anonKey, {
    auth: { persistSession: false, autoRefreshToken: false },
    realtime: { transport: network.transport, heartbeatIntervalMs: 1000, reconnectAfterMs: () => 100 },
  });
}

/** A user's access token, HS256 with the stack's JWT secret, valid for `seconds`: its `exp`
 * (epoch seconds) too. */
export function mintToken(userId, seconds) {
  const now = Math.floor(Date.now() / 1000);
  const part = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = { iss: 'parley-local', role: 'authenticated', aud: 'authenticated', sub: userId, iat: now, exp: now + seconds };
  const unsigned = `${part({ alg: 'HS256', typ: 'JWT' })}.${part(claims)}`;
  const signature = createHmac('sha256', stack.jwtSecret).update(unsigned).digest('base64url');
  return { token: `${unsigned}.${signature}`, exp: claims.exp };
}

/**
 * The sockets between supabase-js and Realtime: `cut()` drops them and keeps the network down
 * until `offline` is false; `shuffleReplay` hands a replay to the client in reverse order (as
 * hosted Realtime may, its events sharing one insertion time), and `holdBack(test)` keeps the
 * replayed events matching `test` until `release()`.
 */
export class Network {
  offline = false;
  shuffleReplay = false;
  /** Take replay out of every join (as when the events passed Realtime's retention). */
  noReplay = false;
  /** Keep every `token` broadcast from the client until `releaseTokens()`. */
  holdTokens = false;
  heldTokens = [];
  sockets = new Set();
  /** Replayed events in the order the client was handed them. */
  replayedOrder = [];
  #holdBack = null;
  /** What `holdBack` kept, by seq: a copy replayed again (two joins' replays) replaces the first. */
  #kept = new Map();

  get transport() {
    const network = this;
    return class ControlledSocket extends WebSocket {
      #batch = [];
      #deliver = null;

      constructor(url, protocols) {
        super(network.offline ? 'ws://127.0.0.1:9/' : url, protocols); // 9: nothing listens
        network.sockets.add(this);
        this.on('close', () => network.sockets.delete(this));
      }

      send(data, ...rest) {
        if (network.noReplay && typeof data === 'string' && data.includes('"phx_join"')) {
          const frame = JSON.parse(data);
          delete frame[4]?.config?.broadcast?.replay;
          data = JSON.stringify(frame);
        }
        super.send(data, ...rest);
      }

      set onmessage(handler) {
        this.#deliver = handler;
        super.onmessage = (message) => this.#receive(message);
      }

      get onmessage() {
        return this.#deliver;
      }

      #receive(message) {
        if (network.holdTokens && broadcastEvent(message.data)?.type === 'token') {
          network.heldTokens.push(() => this.#deliver?.(message));
          return;
        }
        const replayed = replayedEvent(message.data);
        if (replayed && network.#holdBack?.(replayed)) {
          network.#kept.set(replayed.seq, () => this.#pass(message, replayed));
        } else if (replayed && network.shuffleReplay) {
          this.#batch.push([message, replayed]); // the batch ends at the next other frame
        } else {
          const batch = this.#batch.reverse();
          this.#batch = [];
          for (const [held, event] of batch) this.#pass(held, event);
          this.#pass(message, replayed);
        }
      }

      #pass(message, replayed) {
        if (replayed) network.replayedOrder.push(replayed.seq);
        this.#deliver?.(message);
      }
    };
  }

  /** Keep replayed events matching `test` from the client until `release()`. */
  holdBack(test) {
    this.#holdBack = test;
  }

  /** Hand the client what `holdBack` kept (one copy of each event); returns how many. */
  release() {
    this.#holdBack = null;
    const kept = [...this.#kept.values()];
    this.#kept.clear();
    kept.forEach((pass) => pass());
    return kept.length;
  }

  /** Hand the client the token batches kept so far; returns how many. */
  releaseTokens() {
    this.holdTokens = false;
    const held = this.heldTokens.splice(0);
    held.forEach((pass) => pass());
    return held.length;
  }

  cut() {
    this.offline = true;
    for (const socket of this.sockets) socket.terminate();
  }
}

/** The Parley event a frame carries if it is a replayed broadcast (either serializer). */
export function replayedEvent(data) {
  const broadcast = broadcastOf(data);
  return broadcast?.meta?.replayed ? broadcast.event : null;
}

/** The Parley event a frame carries if it is a broadcast, replayed or live. */
export function broadcastEvent(data) {
  return broadcastOf(data)?.event ?? null;
}

function broadcastOf(data) {
  if (typeof data === 'string') {
    const frame = JSON.parse(data);
    const payload = Array.isArray(frame) ? frame[4] : frame.payload;
    const event = Array.isArray(frame) ? frame[3] : frame.event;
    return event === 'broadcast' && payload?.payload ? { event: payload.payload, meta: payload.meta } : null;
  }
  // serializer 2.0.0's user broadcast (kind 4), which broadcasts sent from the database are:
  // u8 kind | u8 topic length | u8 event length | u8 meta length | u8 encoding, the strings,
  // the meta (JSON), the payload
  const bytes = new Uint8Array(data);
  if (bytes[0] !== 4 || bytes[4] !== 1) return null;
  const metaAt = 5 + bytes[1] + bytes[2];
  const text = (from, to) => new TextDecoder().decode(bytes.slice(from, to));
  const meta = bytes[3] ? JSON.parse(text(metaAt, metaAt + bytes[3])) : null;
  return { event: JSON.parse(text(metaAt + bytes[3])), meta };
}

/**
 * What a watch delivered, with `waitFor(test)`: resolves once `test()` holds, checked whenever
 * the watch reports a change (no sleeping).
 */
export function recorder() {
  const seen = {
    events: [], snapshots: [], ends: [], waiting: new Set(),
    get seqs() {
      return this.events.map((e) => e.seq);
    },
  };
  const changed = () => {
    for (const waiter of [...seen.waiting]) {
      if (waiter.test()) {
        seen.waiting.delete(waiter);
        waiter.resolve();
      }
    }
  };
  return Object.assign(seen, {
    handlers: {
      onEvent: (event) => seen.events.push(event),
      onSnapshot: (snapshot) => seen.snapshots.push(snapshot),
      onTurnEnd: (end) => seen.ends.push(end),
      onChange: changed,
    },
    waitFor(test) {
      return test() ? Promise.resolve() : new Promise((resolve) => seen.waiting.add({ test, resolve }));
    },
  });
}

/** A `fetch` whose requests wait while the gate is closed (a slow network to the functions). */
export class Gate {
  closed = false;
  held = 0;
  #waiting = [];

  fetch = (url, init) => {
    if (!this.closed) return fetch(url, init);
    this.held += 1;
    return new Promise((resolve) => this.#waiting.push(() => resolve(fetch(url, init))));
  };

  open() {
    this.closed = false;
    this.#waiting.splice(0).forEach((go) => go());
  }
}

export function assertIncreasing(assert, seqs) {
  for (let i = 1; i < seqs.length; i++) {
    assert.ok(seqs[i] > seqs[i - 1], `seq ${seqs[i]} was delivered after ${seqs[i - 1]}: ${seqs.join(' ')}`);
  }
}
