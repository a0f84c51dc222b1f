import type { ParleyEvent } from './index.js';

/** What a catch-up read from the tables, at the session's `last_seq` (`seq`). */
export interface SequencerSnapshot {
  seq: number;
  plans?: Array<{ id: string; status: string }>;
}

/** The statuses a plan ends in: `completed`, `failed`, `cancelled`. */
export declare const TERMINAL: ReadonlySet<string>;

/**
 * A session's events in `seq` order, whatever order they arrive in (see sequencer.js): each
 * delivered once, every one with a higher `seq` than the one before; a stored event at or below
 * the last snapshot's seq that arrives after it is dropped (the snapshot holds it); one that
 * arrives after a higher seq was delivered goes to `onLate` (read the tables again).
 */
export declare class Sequencer<S extends SequencerSnapshot = SequencerSnapshot> {
  constructor(handlers: {
    onEvent: (event: ParleyEvent) => void;
    onSnapshot?: (snapshot: S) => void;
    onLate?: (event: ParleyEvent) => void;
  });
  /** The highest seq delivered. */
  readonly high: number;
  /** The last snapshot's seq. */
  readonly covered: number;
  /** How many replayed events wait for `flushReplay`. */
  readonly pendingReplay: number;
  live(event: ParleyEvent): void;
  replayed(event: ParleyEvent): void;
  flushReplay(): void;
  hold(): void;
  release(snapshot: S | null): void;
}
