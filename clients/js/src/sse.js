// A streamed answer (`text/event-stream`): one SSE message per event — `id` its `seq`,
// `event` its type, `data` the event as JSON (docs/events.md) — read as an async iterable.

/**
 * The events of a streaming response, in the order the function sent them.
 * `for await (const event of stream) …`; `stream.sessionId` / `planId` / `messageId` come from
 * the response's `X-Parley-*` headers (null when the route sends none).
 */
export class EventStream {
  /** @param {Response} response */
  constructor(response) {
    this.response = response;
    this.sessionId = response.headers.get('x-parley-session-id');
    this.planId = response.headers.get('x-parley-plan-id');
    this.messageId = response.headers.get('x-parley-message-id');
  }

  async *[Symbol.asyncIterator]() {
    for await (const message of messages(this.response.body)) {
      if (message.data) yield JSON.parse(message.data);
    }
  }

  /** Read to the end: every event. */
  async all() {
    const events = [];
    for await (const event of this) events.push(event);
    return events;
  }
}

/**
 * The SSE messages of a byte stream (the WHATWG event-stream format: fields `event`, `data`,
 * `id`; a blank line ends a message; lines starting with `:` are comments).
 * @param {ReadableStream<Uint8Array>} body
 */
export async function* messages(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let message = { event: 'message', data: '', id: null };
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.search(/\r\n|\r|\n/)) >= 0) {
        if (end === buffer.length - 1 && buffer[end] === '\r') break; // its \n may follow
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + (buffer.startsWith('\r\n', end) ? 2 : 1));
        if (line === '') {
          if (message.data) yield { ...message, data: message.data.replace(/\n$/, '') };
          message = { event: 'message', data: '', id: null };
        } else if (!line.startsWith(':')) {
          const colon = line.indexOf(':');
          const field = colon < 0 ? line : line.slice(0, colon);
          const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
          if (field === 'data') message.data += `${value}\n`;
          else if (field === 'event') message.event = value;
          else if (field === 'id') message.id = value;
        }
      }
    }
  } finally {
    reader.releaseLock();
  }
}
