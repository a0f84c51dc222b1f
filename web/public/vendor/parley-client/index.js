// @parley/client — Parley from JavaScript and TypeScript, with no build step.
//
//   ParleyClient   typed calls for every route of the chat, planner and executor functions
//   watchSession   a session's events from Supabase Realtime, in seq order, caught up from the
//                  tables, with each turn's end
//   Sequencer      the ordering rules alone (for a transport of your own)

export { ApiError, NetworkError, ParleyClient } from './client.js';
export { EventStream, messages as sseMessages } from './sse.js';
export { Sequencer } from './sequencer.js';
export { SessionWatch, watchSession } from './watch.js';
export { routes } from './generated/routes.js';
