import type { ParleyEvent, TimelineEntry } from './index.js';

/** One planner message's text: the words before its tool calls, or its answer. */
export interface StreamedText {
  planId: string;
  /** The stored message it is (`chat_messages` id); null while it still streams. */
  messageId: string | null;
  /** Where it stands in the session: its first batch's `seq` (its row's, with no batch) — below
   * the events that follow it (its tool calls, its `done`). */
  seq: number;
  /** What arrived of it, each batch in its place; the stored text once the tables were read. */
  text: string;
  /** The stored text: it will not change. */
  final: boolean;
}

/**
 * The planner's streamed texts, message by message, whatever order the token batches arrive
 * in, and the stored text once a timeline entry holds it (see texts.js). `watchSession()` runs
 * one; use it alone with a transport of your own.
 */
export declare class StreamedTexts {
  constructor(handlers?: { onText?: (planId: string, texts: StreamedText[]) => void });
  /** A `token` event, in any order. */
  token(event: ParleyEvent): void;
  /** A durable event (`tool_call`, `done` and `error` name the message they follow). */
  event(event: ParleyEvent): void;
  /** A timeline entry: an assistant row's text is the stored text of its message. */
  entry(entry: TimelineEntry): void;
  /** The plan's texts in order. */
  texts(planId: string): StreamedText[];
}
