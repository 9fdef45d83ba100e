// What the primary and its workers say to each other over node:cluster's channel.
import type { AuditLine } from './audit.js';

export type FromPrimary =
  /** The configuration: the main file and the text of every file it read. */
  | { type: 'start'; file: string; files: Record<string, string>; secrets?: Record<string, string>; prefix: string; globals?: string; ticketKeys: string; cacheKeeper: boolean }
  /** Stop accepting, finish what is in flight, exit. */
  | { type: 'drain' }
  /** A fast stop: exit now. */
  | { type: 'exit' }
  /** USR1: reopen the log files (log/process.ts handles it). */
  | { type: 'reopen' }
  | ConfigAnswer;

export type ToPrimary =
  /** The worker listens for messages: cluster's own 'online' comes before the worker's
   * module runs, and a message sent then would be lost. */
  | { type: 'waiting' }
  | { type: 'ready' }
  | { type: 'failed'; message: string }
  /** A /config write through an API location of the worker, for the primary's log. */
  | { type: 'audit'; line: AuditLine }
  | ConfigWrite;

/** A /config write an API location of a worker took, for the primary to commit to the
 * configuration store (`config_store`, config-store/forward.ts). */
export interface ConfigWrite {
  readonly type: 'config-write';
  readonly id: number;
  readonly method: string;
  readonly segments: readonly string[];
  readonly path: string;
  readonly query: string;
  /** Base64. */
  readonly body?: string;
  readonly contentType?: string;
  readonly ifMatch?: string;
  readonly ifNoneMatch?: string;
}

/** The primary's answer to the ConfigWrite of the same id. */
export interface ConfigAnswer {
  readonly type: 'config-answer';
  readonly id: number;
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: string;
}
