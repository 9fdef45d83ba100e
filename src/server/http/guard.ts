// What runs before a location's content: `allow`/`deny`, then basic auth, as nginx's
// access phase orders them. 0 lets the request through; 403 and 401 are the answers.
// With `satisfy any`, either one lets it through, and when neither does, basic auth's
// answer is the request's (nginx keeps a 401 over a 403: the client may log in).
import { resolve } from 'node:path';
import { apiError } from '../../api/errors.js';
import type { ApiResponse } from '../../api/types.js';
import type { Inherited, LimitExceptConfig } from '../config/model.js';
import { accessChecker } from '../access/runtime.js';
import { basicChallenge, BasicAuth } from '../auth-basic/runtime.js';
import { compileValue } from '../config/variables.js';
import type { HttpContext } from './variables.js';

/** The user files a guard with a variable `auth_basic_user_file` keeps read, each with
 * its own cache: enough for the files of a site, bounded whatever requests name. */
const FILES_KEPT = 64;

export type Verdict = 0 | 401 | 403 | 500;

export class Guard {
  private readonly allowed?: (remoteAddress: string) => boolean;
  private readonly auth?: BasicAuth;
  /** `auth_basic_user_file` with variables: the file a request names, and those read. */
  private readonly userFile?: (c: HttpContext) => string;
  private readonly files = new Map<string, BasicAuth>();
  /** `limit_except`: the methods that pass as the location says, and the guard of the others. */
  private readonly except?: { readonly methods: ReadonlySet<string>; readonly guard: Guard };

  constructor(private readonly settings: Inherited & { readonly limitExcept?: LimitExceptConfig }) {
    const limit = settings.limitExcept;
    if (limit) this.except = { methods: new Set(limit.methods), guard: new Guard(limit) };
    if (settings.access.length > 0) this.allowed = accessChecker(settings.access);
    const basic = settings.authBasic;
    if (basic && basic.userFile.includes('$')) {
      // nginx's ngx_get_full_name: a value that is not absolute is against the main
      // file's directory (an empty one is the directory, which cannot be read).
      const value = compileValue(basic.userFile);
      const base = basic.userFileBase ?? '/';
      this.userFile = (c) => resolve(base, value(c));
    } else if (basic) this.auth = new BasicAuth(basic);
  }

  /** The guard a request of `method` passes: `limit_except`'s for a method it does not list. */
  for(method: string | undefined): Guard {
    const except = this.except;
    return except === undefined || except.methods.has(method ?? '') ? this : except.guard;
  }

  /** Whether anything is checked: a request in an open location skips the guard. */
  get open(): boolean {
    return !this.allowed && !this.auth && !this.userFile;
  }

  /** `c`: the request, for a user file its variables name (the admin listener has none:
   * no file, so no user). */
  check(remoteAddress: string, authorization: string | undefined, c?: HttpContext): Verdict | Promise<Verdict> {
    if (this.allowed) {
      const allowed = this.allowed(remoteAddress);
      if (allowed && this.settings.satisfy === 'any') return 0;
      if (!allowed && this.settings.satisfy !== 'any') return 403;
      if (!allowed && !this.auth && !this.userFile) return 403;
    }
    if (!this.auth && !this.userFile) return 0;
    const auth = this.userFile ? this.authOf(c ? this.userFile(c) : '') : this.auth;
    if (!auth) return 401;
    return auth.verdict(authorization);
  }

  /** The checker of the user file a request named; none for no name (an admin
   * listener's, which has no request to evaluate the name with). */
  private authOf(file: string): BasicAuth | undefined {
    if (file === '') return undefined;
    let auth = this.files.get(file);
    if (!auth) {
      if (this.files.size >= FILES_KEPT) this.files.delete(this.files.keys().next().value!);
      this.files.set(file, (auth = new BasicAuth({ ...this.settings.authBasic!, userFile: file })));
    }
    return auth;
  }

  /** The WWW-Authenticate value of a 401. */
  challenge(): string {
    if (this.auth) return this.auth.challenge();
    return this.settings.authBasic ? basicChallenge(this.settings.authBasic.realm) : 'Basic';
  }

  /** A refusal as the API words its errors: what API locations and admin listeners answer. */
  refusal(verdict: Exclude<Verdict, 0>, head: boolean): ApiResponse {
    if (verdict === 500) return apiError(500, 'InternalError', 'The user file cannot be read.', head);
    if (verdict === 403) return apiError(403, 'Forbidden', 'Access to the requested API element is forbidden.', head);
    return apiError(401, 'Unauthorized', 'Valid credentials are required for the requested API element.', head, { 'WWW-Authenticate': this.challenge() });
  }
}
