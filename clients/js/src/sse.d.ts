import type { ParleyEvent } from './index.js';

/** The events of a streaming (SSE) answer, in the order the function sent them. */
export declare class EventStream implements AsyncIterable<ParleyEvent> {
  constructor(response: Response);
  readonly response: Response;
  /** From the `X-Parley-Session-Id` header (null when the route sends none). */
  readonly sessionId: string | null;
  /** From the `X-Parley-Plan-Id` header. */
  readonly planId: string | null;
  /** From the `X-Parley-Message-Id` header: the stored user message. */
  readonly messageId: string | null;
  [Symbol.asyncIterator](): AsyncIterator<ParleyEvent>;
  /** Read to the end: every event. */
  all(): Promise<ParleyEvent[]>;
}

/** The raw SSE messages of a byte stream. */
export declare function messages(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ event: string; data: string; id: string | null }>;
