/**
 * The MetaStore contract (meta-store.contract.ts) against the embedded SQLite store and the PostgreSQL store (a
 * throw-away PostgreSQL 15 started by this file, test/helpers/meta-stores.ts).
 */
import { metaStoreKinds } from '../helpers/meta-stores.js';
import { metaStoreContract } from './meta-store.contract.js';

metaStoreContract(metaStoreKinds());
