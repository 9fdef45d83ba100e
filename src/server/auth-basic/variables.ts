// The variable of nginx's auth_basic module.
import type { VariableTable } from '../../api/variables.js';
import { header, type HttpContext } from '../http/variables.js';
import { parseAuthorization } from './runtime.js';

export const authBasicVariables: VariableTable<HttpContext> = {
  names: {
    /** The user the Authorization header names (checked or not, as nginx's). */
    remote_user: (c) => parseAuthorization(header(c.req, 'authorization'))?.user,
  },
};
