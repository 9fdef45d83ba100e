// What runs before a location's content: `allow`/`deny`, then basic auth, as nginx's
// access phase orders them. 0 lets the request through; 403 and 401 are the answers.
import { apiError } from '../../api/errors.js';
import type { ApiResponse } from '../../api/types.js';
import type { Inherited } from '../config/model.js';
import { accessChecker } from '../access/runtime.js';
import { BasicAuth } from '../auth-basic/runtime.js';

export type Verdict = 0 | 401 | 403;

export class Guard {
  private readonly allowed?: (remoteAddress: string) => boolean;
  private readonly auth?: BasicAuth;

  constructor(settings: Inherited) {
    if (settings.access.length > 0) this.allowed = accessChecker(settings.access);
    if (settings.authBasic) this.auth = new BasicAuth(settings.authBasic);
  }

  /** Whether anything is checked: a request in an open location skips the guard. */
  get open(): boolean {
    return !this.allowed && !this.auth;
  }

  check(remoteAddress: string, authorization: string | undefined): Verdict | Promise<Verdict> {
    if (this.allowed && !this.allowed(remoteAddress)) return 403;
    if (!this.auth) return 0;
    return this.auth.check(authorization).then((ok) => (ok ? 0 : 401));
  }

  /** The WWW-Authenticate value of a 401. */
  challenge(): string {
    return this.auth?.challenge() ?? 'Basic';
  }

  /** A refusal as the API words its errors: what API locations and admin listeners answer. */
  refusal(verdict: 401 | 403, head: boolean): ApiResponse {
    if (verdict === 403) return apiError(403, 'Forbidden', 'Access to the requested API element is forbidden.', head);
    return apiError(401, 'Unauthorized', 'Valid credentials are required for the requested API element.', head, { 'WWW-Authenticate': this.challenge() });
  }
}
