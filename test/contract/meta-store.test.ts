/**
 * The MetaStore contract (meta-store.contract.ts; its console sessions' part: console-sessions.contract.ts; the
 * console history's: console-samples.contract.ts) against
 * the embedded SQLite store and the PostgreSQL store (a throw-away PostgreSQL 15 started by this file,
 * test/helpers/meta-stores.ts).
 */
import { metaStoreKinds } from '../helpers/meta-stores.js';
import { consoleSamplesContract } from './console-samples.contract.js';
import { consoleSessionsContract } from './console-sessions.contract.js';
import { metaStoreContract } from './meta-store.contract.js';

const kinds = metaStoreKinds();
metaStoreContract(kinds);
consoleSessionsContract(kinds);
consoleSamplesContract(kinds);
