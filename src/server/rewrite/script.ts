// nginx's rewrite phases at run time: a block's rewrite directives compiled once into
// steps, and run per request in the order written. The server's run before locations are
// searched; a location's after, and a URI they change (without `break`) has the locations
// searched again, ten times at most (nginx's NGX_HTTP_MAX_URI_CHANGES), then 500.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RewriteSettings, RewriteStep } from '../config/model.js';
import { compileValue } from '../config/variables.js';
import type { Condition, ConditionContext } from '../http/conditions.js';
import { absoluteLocation, encodePath, requestOrigin, Return } from '../http/pages.js';
import type { Place, Route } from '../http/place.js';
import { retarget, rewrittenHere, type HttpContext } from '../http/variables.js';
import { errorLogOf, mainErrorLog, type ErrorLog, type ErrorLogTarget } from '../log/error-log.js';
import { logForRequest } from '../log/request-error.js';
import { setGroups, setVariable, warnUninitialized } from './variables.js';
import { setRequestRate } from '../http/pace.js';
import { parseSize } from '../config/values.js';

declare module '../http/place.js' {
  interface Place {
    /** Its rewrite directives (`if` blocks among them), run before anything else answers;
     * a `return` alone is `return`. */
    readonly script?: Script;
  }
}

/** A rewrite directive ready to run. An `if` step's block is a place of its own, whose
 * script holds the block's directives. */
export type Step =
  | { readonly kind: 'set'; readonly run: (c: ConditionContext) => void }
  | { readonly kind: 'rewrite'; readonly rewrite: Rewrite }
  | { readonly kind: 'break' }
  | { readonly kind: 'return'; readonly answer: Return }
  | { readonly kind: 'if'; readonly condition: Condition; readonly place: Place };

export interface Script {
  readonly steps: readonly Step[];
  /** `rewrite_log on`: where its notices go. */
  readonly log?: ErrorLog;
  /** Where the place's errors go (the cycle's, an empty URI's). */
  readonly errors: ErrorLog;
}

/** The block's steps; `ifBlock` makes the place of one of its `if` blocks. */
export function compileScript(
  steps: readonly RewriteStep[],
  settings: RewriteSettings | undefined,
  errorLogs: readonly ErrorLogTarget[] | undefined,
  ifBlock: (index: number) => { condition: Condition; place: Place },
): Script {
  const errors = errorLogOf(errorLogs);
  return {
    steps: steps.map((s): Step => {
      switch (s.kind) {
        case 'set':
          return { kind: 'set', run: setter(s.variable, compileValue(s.value)) };
        case 'rewrite':
          return { kind: 'rewrite', rewrite: new Rewrite(s) };
        case 'return':
          return { kind: 'return', answer: new Return(s.value) };
        case 'if':
          return { kind: 'if', ...ifBlock(s.index) };
        case 'break':
          return s;
      }
    }),
    ...(settings?.log ? { log: errors } : {}),
    errors,
  };
}

function setter(name: string, value: (c: HttpContext) => string): (c: ConditionContext) => void {
  // `$args` is nginx's one variable of its own that `set` changes: the request's arguments.
  if (name === 'args')
    return (c) => {
      const url = c.req.url ?? '/';
      const q = url.indexOf('?');
      retarget(c.req, (q < 0 ? url : url.slice(0, q)) + '?' + value(c));
    };
  // `$limit_rate`: the rate of the request's answer (an invalid one is 0, no limit).
  if (name === 'limit_rate') return (c) => setRequestRate(c.req, parseSize(value(c)) ?? 0);
  return (c) => setVariable(c.req, name, value(c));
}

const percent = (ch: string) => [...Buffer.from(ch)].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** What nginx escapes in a capture copied into arguments, when the request's URI came
 * escaped (NGX_ESCAPE_ARGS)... */
const escapeArgs = (s: string): string => s.replace(/[\x00-\x20"#%&'+;<>?\x7f-\u{10ffff}]/gu, percent);
/** ... and into the path of a redirect (as nginx 1.22 answers: a space or `%` escaped, a
 * `?` or `+` not). */
const escapeRedirect = (s: string): string => s.replace(/[\x00-\x20"%'\x7f-\u{10ffff}]/gu, percent);

class Rewrite {
  readonly regex: RegExp;
  readonly source: string;
  /** `redirect` (302), `permanent` (301), or 0: the URI is rewritten. */
  readonly status: 0 | 301 | 302;
  readonly flag?: 'last' | 'break';
  private readonly path: (c: HttpContext) => string;
  /** The replacement's arguments (after its first `?`); undefined: none. */
  private readonly args?: (c: HttpContext) => string;
  /** The request's arguments are appended (the replacement does not end with `?`). */
  private readonly keepArgs: boolean;
  /** The answer of a redirect, its Location made by `location()`. */
  readonly answer?: Return;

  constructor(s: Extract<RewriteStep, { kind: 'rewrite' }>) {
    const r = s.regex;
    this.regex = r.global || r.sticky ? new RegExp(r.source, r.flags.replace(/[gy]/g, '')) : r;
    this.source = s.source;
    this.status = s.flag === 'redirect' ? 302 : s.flag === 'permanent' ? 301 : 0;
    if (s.flag === 'last' || s.flag === 'break') this.flag = s.flag;
    let text = s.replacement;
    this.keepArgs = !text.endsWith('?');
    if (!this.keepArgs) text = text.slice(0, -1);
    const q = text.indexOf('?');
    this.path = compileValue(q < 0 ? text : text.slice(0, q));
    if (q >= 0) this.args = compileValue(text.slice(q + 1));
    if (this.status) this.answer = new Return({ code: this.status, text: '' }, (c) => this.location(c));
  }

  /** The new URI and arguments (undefined: none), from the captures in `c`. */
  target(c: ConditionContext, redirect: boolean): { path: string; args: string | undefined } {
    const quoted = c.captures && /[%+]/.test(c.req.url ?? '');
    const escaped = quoted ? { ...c, captures: c.captures!.map(escapeArgs) } : c;
    const path = this.path(redirect && quoted ? { ...c, captures: c.captures!.map(escapeRedirect) } : c);
    const url = c.req.url ?? '';
    const q = url.indexOf('?');
    const old = this.keepArgs && q >= 0 ? url.slice(q + 1) : undefined;
    const own = this.args?.(escaped);
    const args = own === undefined ? old : old ? `${own}&${old}` : own;
    return { path, args };
  }

  /** A redirect's Location: absolute, as nginx's header filter makes one that begins with `/`. */
  location(c: ConditionContext): string {
    const { path, args } = this.target(c, true);
    const target = args ? `${path}?${args}` : path;
    return target.startsWith('/') ? absoluteLocation(target, requestOrigin(c.req)) : target;
  }
}

/** Where a request is in the rewrite phases. */
export interface Rewriting {
  uri: string;
  place: Place;
  captures: readonly string[] | undefined;
}

/** How the steps of a block ended: all run; stopped (`break`, `rewrite ... break`);
 * stopped for a new search (`rewrite ... last`); answered (`return`, a redirect). */
type End = 'next' | 'stop' | 'last' | 'answer';

const INTERNAL_ERROR = new Return({ code: 500 });

/** Runs a script: how it ended, and whether it changed the URI (without `break`: the
 * locations are searched again). */
function runScript(script: Script, r: Rewriting, req: IncomingMessage, res: ServerResponse): { end: End; changed: boolean } {
  const state = { changed: false };
  const end = steps(script, r, req, res, state);
  return { end, changed: state.changed };
}

function steps(script: Script, r: Rewriting, req: IncomingMessage, res: ServerResponse, state: { changed: boolean }): End {
  let c: ConditionContext = { req, res, uri: r.uri, ...(r.captures ? { captures: r.captures } : {}) };
  for (const step of script.steps) {
    switch (step.kind) {
      case 'set':
        step.run(c);
        break;
      case 'return':
        r.place = { ...r.place, return: step.answer };
        return 'answer';
      case 'break':
        if (state.changed) rewrittenHere(req);
        state.changed = false;
        return 'stop';
      case 'if': {
        if (!step.condition(c)) break;
        r.captures = c.captures;
        r.place = step.place;
        warnUninitialized(req, r.place.warn);
        const inner = step.place.script;
        // A block whose one directive is `return` has it as its answer.
        if (!inner) {
          if (step.place.return) return 'answer';
          break;
        }
        const end = steps(inner, r, req, res, state);
        if (end !== 'next') return end;
        c = { req, res, uri: r.uri, ...(r.captures ? { captures: r.captures } : {}) };
        break;
      }
      case 'rewrite': {
        const rw = step.rewrite;
        const log = script.log;
        const m = rw.regex.exec(r.uri);
        if (m === null) {
          if (log) logForRequest(log, 'notice', `"${rw.source}" does not match "${r.uri}"`, req, res);
          break;
        }
        if (log) logForRequest(log, 'notice', `"${rw.source}" matches "${r.uri}"`, req, res);
        const captures = m.slice(1).map((g) => g ?? '');
        setGroups(req, m.groups);
        r.captures = captures;
        c = { req, res, uri: r.uri, captures };
        if (rw.answer) {
          if (log) logForRequest(log, 'notice', `rewritten redirect: "${rw.location(c)}"`, req, res);
          r.place = { ...r.place, return: rw.answer };
          return 'answer';
        }
        const { path, args } = rw.target(c, false);
        if (log) logForRequest(log, 'notice', `rewritten data: "${path}", args: "${args ?? ''}"`, req, res);
        if (path === '') {
          logForRequest(script.errors, 'error', `the rewritten URI has a zero length`, req, res);
          r.place = { ...r.place, return: INTERNAL_ERROR };
          return 'answer';
        }
        retarget(req, encodePath(path) + (args !== undefined && args !== '' ? `?${args}` : ''));
        r.uri = path;
        c = { req, res, uri: path, captures };
        if (rw.flag === 'break') {
          rewrittenHere(req);
          state.changed = false;
          return 'stop';
        }
        state.changed = true;
        if (rw.flag === 'last') return 'last';
        break;
      }
    }
  }
  return 'next';
}

/** What answers a request once the rewrite phases ran: its place and URI, or the path of
 * a location's auto redirect (nginx redirects as it finds the location). */
export interface Rewritten extends Rewriting {
  readonly redirect?: string;
}

/** What the phases need of the virtual server (site.ts's Site). */
export interface Rewriter {
  /** The server's own place: its script runs before locations are searched. */
  readonly place: Place;
  route(uri: string): Route;
}

const CYCLES = Symbol('zonal.uriChanges');
type Counted = IncomingMessage & { [CYCLES]?: number };
/** nginx's NGX_HTTP_MAX_URI_CHANGES: the searches of a rewritten URI, internal redirects
 * and jumps to named locations a request may make, together. */
const MAX_URI_CHANGES = 10;

/** Counts a change of the request's URI; true, with nginx's error, past the limit. */
export function uriChanged(req: IncomingMessage, res: ServerResponse, what: string, log: ErrorLog = mainErrorLog()): boolean {
  const counted = req as Counted;
  counted[CYCLES] = (counted[CYCLES] ?? 0) + 1;
  if (counted[CYCLES] <= MAX_URI_CHANGES) return false;
  logForRequest(log, 'error', `rewrite or internal redirection cycle while ${what}`, req, res);
  return true;
}

/** The server's rewrite phase: its script, run on the request's URI; `answered` when it
 * ends with a `return` or a redirect. */
export function rewriteServer(site: Rewriter, req: IncomingMessage, res: ServerResponse, uri: string): Rewriting & { answered: boolean } {
  const r: Rewriting = { uri, place: site.place, captures: undefined };
  warnUninitialized(req, site.place.warn);
  const script = site.place.script;
  if (!script) return { ...r, answered: false };
  const { end } = runScript(script, r, req, res);
  return { ...r, answered: end === 'answer' };
}

/** The location's rewrite phase, from the location `route` found for `uri`: a changed URI
 * searches the locations again and runs the new one's, until none changes it. */
export function rewriteLocation(site: Rewriter, route: Route, req: IncomingMessage, res: ServerResponse, uri: string): Rewritten {
  const r: Rewriting = { uri, place: route.place, captures: route.captures };
  setGroups(req, route.groups);
  for (;;) {
    warnUninitialized(req, r.place.warn);
    const script = r.place.script;
    if (!script) return r;
    const { end, changed } = runScript(script, r, req, res);
    if (end === 'answer' || !changed) return r;
    if (uriChanged(req, res, `processing "${r.uri}"`, script.errors)) return { ...r, place: { ...r.place, return: INTERNAL_ERROR } };
    const found = site.route(r.uri);
    if (found.redirect !== undefined) return { uri: r.uri, place: found.place, captures: undefined, redirect: found.redirect };
    r.place = found.place;
    r.captures = found.captures;
    setGroups(req, found.groups);
  }
}
