// @parley/client — Parley from JavaScript and TypeScript, with no build step.
//
//   ParleyClient   typed calls for every route of the chat, planner and executor functions
//   watchSession   a session's events from Supabase Realtime, in seq order, caught up from the
//                  tables, with each turn's end
//   Sequencer      the ordering rules alone (for a transport of your own)

export { ApiError, NetworkError, ParleyClient, isProblem } from './client.js';
export { problemTypes } from './generated/problems.js';
export { EventStream, messages as sseMessages } from './sse.js';
export { Sequencer } from './sequencer.js';
export { StreamedTexts } from './texts.js';
export { RealtimeError, SessionWatch, watchSession } from './watch.js';
export { routes } from './generated/routes.js';
