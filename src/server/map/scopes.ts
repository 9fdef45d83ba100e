// Where the variables the configuration defines (map, geo) are evaluated: an http
// request, whose values are kept on its IncomingMessage (every phase's context reads the
// same one), and a stream session's record.
import type { HttpContext } from '../http/variables.js';
import type { StreamRecord } from '../stream/variables.js';
import { httpVariables, streamVariables } from '../config/variables.js';
import type { Scope } from './runtime.js';

/** The context with other captures, its getters (what a phase decides) still its own. */
const withCaptures = <C extends object>(c: C, groups: readonly string[]): C => Object.create(c, { captures: { value: groups } }) as C;

export const httpScope: Scope<HttpContext> = { table: httpVariables, owner: (c) => c.req, withCaptures };

export const streamScope: Scope<StreamRecord> = { table: streamVariables, owner: (r) => r.session ?? r, withCaptures };
