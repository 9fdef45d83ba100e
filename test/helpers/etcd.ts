// A real etcd cluster for the config_store tests (issue 34): the launcher `bench fleet`
// uses too (bench/etcd.ts: members of Debian's etcd-server on free loopback ports, short
// heartbeat and election times, members killed, stopped, continued and restarted).
import { existsSync } from 'node:fs';
import { ETCD } from '../../bench/etcd.js';

export * from '../../bench/etcd.js';

/** Why the etcd tests cannot run here, or false: they are skipped, saying so, as the
 * prometheus and chromium tests are when their program is missing. */
export const ETCD_MISSING = !existsSync(ETCD) && `etcd is not installed (${ETCD}: .ci/run installs Debian's etcd-server): the config_store cases are not run`;
