// /status/config_store: zonal's extension after the spec's members, present when the
// configuration keeps its upstreams in a store (`config_store`, issue 34). One process
// writes it, the primary, which holds the store's client and watch: a seqlocked record of
// the status zone carries the whole member, so that a worker serving /status reads the
// primary's last word without asking it, and never half of one state and half of another.
import { group, leaf, time, type Group } from './shape.js';
import { STATUS_ZONE, type StatusStore } from './store.js';
import { LiveNode, type StatusNode } from './tree.js';

/** The member as the primary publishes it. */
export interface ConfigStoreState {
  /** The endpoint the client uses (`127.0.0.1:2379`), or the first configured until one answered. */
  readonly endpoint: string;
  readonly connected: boolean;
  /** The store's revision of the last change applied (0: none yet). */
  readonly revision: number;
  readonly watchEvents: number;
  readonly failedWrites: number;
  readonly reconnects: number;
  readonly lastError: { readonly message: string; readonly time: number } | null;
}

const KEY = 'config_store';
const recordOf = (status: StatusStore) => status.record(STATUS_ZONE, KEY);

export const configStoreFields: Group<ConfigStoreState> = group('', [
  leaf('endpoint', 'The endpoint of the configuration store in use.', (s) => s.endpoint),
  leaf('connected', 'Whether the configuration store answers.', (s) => s.connected, 'gauge'),
  leaf('revision', "The store's revision of the last change applied.", (s) => s.revision, 'gauge'),
  leaf('watch_events', 'Changes the watch of the store delivered.', (s) => s.watchEvents, 'counter'),
  leaf('failed_writes', '/config writes the store did not commit (unreachable, no quorum).', (s) => s.failedWrites, 'counter'),
  leaf('reconnects', 'Times the store answered again after it did not.', (s) => s.reconnects, 'counter'),
  group(
    'last_error',
    [leaf('message', 'The last error of the store.', (s) => s.lastError?.message), time('time', 'Time of the last error of the store.', (s) => s.lastError?.time ?? 0)],
    (s) => s.lastError !== null,
  ),
]);

const NONE: ConfigStoreState = { endpoint: '', connected: false, revision: 0, watchEvents: 0, failedWrites: 0, reconnects: 0, lastError: null };

/** The member as last published (before the primary's first word: not connected, nothing applied). */
export function readConfigStore(status: StatusStore): ConfigStoreState {
  return recordOf(status).readJSON<ConfigStoreState>() ?? NONE;
}

/** Publishes the member whole (the primary only). */
export function publishConfigStore(status: StatusStore, state: ConfigStoreState): void {
  if (!recordOf(status).writeJSON(state)) throw new Error('the status zone has no room for /status/config_store');
}

/** /status/config_store: the fields read from the record each time it is walked; in
 * the text format under their path's names (`zonal_config_store_connected`). */
export function configStoreNode(status: StatusStore): StatusNode {
  return new LiveNode(configStoreFields, () => readConfigStore(status));
}
