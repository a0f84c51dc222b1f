// The SSE reader alone: messages split anywhere across chunks, CRLF or LF, comments, multi-line
// data; the events of a stream as the functions send them (`id` = seq, `event` = type).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EventStream, sseMessages } from '../src/index.js';

function body(...chunks) {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function all(iterable) {
  const found = [];
  for await (const item of iterable) found.push(item);
  return found;
}

test('messages split across chunks, in LF or CRLF, with comments and multi-line data', async () => {
  const text = ': a comment\r\nid: 7\r\nevent: token\r\ndata: {"a":\r\ndata: 1}\r\n\r\nid: 8\nevent: done\ndata:{}\n\n';
  for (let cut = 1; cut < text.length; cut++) {
    const messages = await all(sseMessages(body(text.slice(0, cut), text.slice(cut))));
    assert.deepEqual(messages, [
      { event: 'token', data: '{"a":\n1}', id: '7' },
      { event: 'done', data: '{}', id: '8' },
    ], `cut at ${cut}`);
  }
});

test('an EventStream yields the events and names the turn from its headers', async () => {
  const event = (seq, type) => JSON.stringify({ type, seq, session_id: 's', plan_id: 'p', agent_id: null, ts: '', data: {} });
  const response = new Response(body(`id: 1\nevent: token\ndata: ${event(1, 'token')}\n\n`, `id: 2\nevent: done\ndata: ${event(2, 'done')}\n\n`), {
    headers: { 'content-type': 'text/event-stream', 'x-parley-plan-id': 'p', 'x-parley-session-id': 's' },
  });
  const stream = new EventStream(response);
  assert.equal(stream.planId, 'p');
  assert.equal(stream.sessionId, 's');
  assert.equal(stream.messageId, null);
  assert.deepEqual((await stream.all()).map((e) => [e.seq, e.type]), [[1, 'token'], [2, 'done']]);
});
