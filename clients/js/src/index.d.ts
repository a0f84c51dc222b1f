// @parley/client — types. The schemas come from the functions' OpenAPI documents and the
// events' JSON Schema (src/generated/, by generate.py).
import type * as Chat from './generated/chat.js';
import type * as Planner from './generated/agent_planner.js';
import type * as Events from './generated/events.js';

export { ApiError, NetworkError, ParleyClient, isProblem } from './client.js';
export type { AnyProblem, CallInit, ParleyOptions } from './client.js';
export { problemTypes } from './generated/problems.js';
export type { ProblemName, Problems } from './generated/problems.js';
export { EventStream, messages as sseMessages } from './sse.js';
export { Sequencer } from './sequencer.js';
export type { SequencerSnapshot } from './sequencer.js';
export { StreamedTexts } from './texts.js';
export type { StreamedText } from './texts.js';
export { RealtimeError, SessionWatch, watchSession } from './watch.js';
export type { RealtimeHost, Snapshot, TurnEnd, WatchOptions } from './watch.js';
export { routes } from './generated/routes.js';
export type { ChatCalls, ExecutorCalls, PlannerCalls } from './generated/routes.js';

/** Every schema of each function's OpenAPI document, by name. */
export type ChatSchemas = Chat.components['schemas'];
export type PlannerSchemas = Planner.components['schemas'];
export type * as Chat from './generated/chat.js';
export type * as Planner from './generated/agent_planner.js';
export type * as Executor from './generated/agent_executor.js';
export type * as Events from './generated/events.js';

export type Session = ChatSchemas['SessionOut'];
export type TimelineEntry = ChatSchemas['TimelineEntryOut'];
export type ChatTurnRequest = ChatSchemas['ChatTurnRequest'];
export type ChatTurnReply = ChatSchemas['ChatTurnReply'];
export type ChatTurnAccepted = ChatSchemas['ChatTurnAccepted'];
export type PlanDetail = PlannerSchemas['PlanDetail'];
export type Approval = PlannerSchemas['ApprovalOut'];
export type DecisionRequest = PlannerSchemas['DecisionRequest'];
export type DecisionReply = PlannerSchemas['DecisionReply'];
/** Any problem+json body of the functions (docs/problems.md); `Problems[kind]` is one kind's. */
export type Problem = ChatSchemas['Problem'];

/** One event of a session (docs/events.md), as its JSON Schema says: narrow it by `type`. */
export type ParleyEvent = Events.Event;
/** The event of one type: `EventOf<'done'>`. */
export type EventOf<T extends ParleyEvent['type']> = Extract<ParleyEvent, { type: T }>;
export type {
  AgentMessageEvent, DoneEvent, ErrorEvent, PermissionDeniedEvent, PlanCreatedEvent,
  StatusUpdateEvent, StepCompletedEvent, StepStartedEvent, TokenEvent, ToolCallEvent,
  ToolResultEvent, UsageEvent,
} from './generated/events.js';
