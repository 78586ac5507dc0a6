/**
 * What every console API handler gets as its route context (`call.ctx`), built once by registerConsole (app.ts).
 */
import type { Granary } from '../context.js';
import type { ConsoleHistory } from './history.js';
import type { RequestRateSampler } from './request-rates.js';
import type { ConsoleSessions, SignInThrottle } from './sessions.js';

/** What every console API module gets. */
export interface ConsoleApi {
  g: Granary;
  sessions: ConsoleSessions;
  signIns: SignInThrottle;
  /** Request and error rates for the Overview (absent when the Granary has no metrics). */
  rates?: RequestRateSampler;
  /** Whether the single-page app was built (`dist/console-ui/index.html` exists). */
  uiBuilt: boolean;
  /** The Overview's graphs: traffic and storage history kept in the metadata (history.ts). */
  history: ConsoleHistory;
}
