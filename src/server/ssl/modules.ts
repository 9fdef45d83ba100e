// Node's TLS modules, loaded when a configuration first uses TLS (a listen with ssl, a
// proxy_pass https://) rather than with every worker: node:tls and node:https are the
// largest of Node's own modules a worker would load, and a worker's start is mostly
// loading (issue 32). require() of a built-in is synchronous, and cached after the first.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const nodeTls = (): typeof import('node:tls') => require('node:tls') as typeof import('node:tls');
export const nodeHttps = (): typeof import('node:https') => require('node:https') as typeof import('node:https');
