// The audit of /config: every write that reached the API, applied or refused, as one line
// of the primary's log. Workers send theirs to the primary, so that one log has them all.
import type { ApiRequest, ConfigChange } from '../api/index.js';
import type { Log } from './log.js';

export interface AuditLine {
  readonly level: 'notice' | 'warn';
  readonly message: string;
}

/** `config: PATCH /config/... from 127.0.0.1 user "ops": 200 Updated {"weight":5}`, at
 * notice when applied, at warn with the reason when refused. */
export function auditLine(change: ConfigChange, request: ApiRequest): AuditLine {
  const who = `from ${request.remoteAddress || 'unknown'}${request.user !== undefined ? ` user ${JSON.stringify(request.user)}` : ''}`;
  const what = `config: ${change.method} ${change.path} ${who}`;
  if (change.status < 300) return { level: 'notice', message: `${what}: ${change.status}${change.value !== undefined ? ` ${change.value}` : ''}` };
  return { level: 'warn', message: `${what}: refused ${change.status}: ${change.description}` };
}

export function logAudit(log: Log, line: AuditLine): void {
  log(line.level, line.message);
}
