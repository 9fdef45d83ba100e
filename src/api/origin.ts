// Who may talk to the API from a browser. A web page the operator opens can send requests
// to the API's address (a form, or a fetch that needs no preflight), and DNS rebinding
// makes such a request same-origin: its Host header still names the attacker's domain.
// So the API answers only Host names it knows, and takes writes only from its own origin
// or from origins the operator listed. Clients that are not browsers (curl, scripts)
// send no Origin and are not concerned.

/** `scheme://host[:port]` as browsers send it, lowercase, with the scheme's default port
 * left out; undefined when `text` is no http(s) origin. */
export function normaliseOrigin(text: string): string | undefined {
  const m = /^(https?):\/\/(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::(\d{1,5}))?\/?$/.exec(text.trim());
  if (!m) return undefined;
  const scheme = m[1].toLowerCase();
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port !== undefined && (port < 1 || port > 65535)) return undefined;
  const host = m[2].toLowerCase();
  const defaultPort = scheme === 'https' ? 443 : 80;
  return port === undefined || port === defaultPort ? `${scheme}://${host}` : `${scheme}://${host}:${port}`;
}

/** A Host header split into its name (lowercase; an IPv6 literal keeps its brackets) and
 * port; undefined when it is not `name[:port]`. */
export function splitHost(host: string): { name: string; port?: number } | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+?)\.?(?::(\d{1,5}))?$/.exec(host);
  if (!m) return undefined;
  const name = m[1].toLowerCase();
  return m[2] === undefined ? { name } : { name, port: Number(m[2]) };
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/** Names that only ever mean this machine. */
export const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/** An address literal (`127.0.0.1`, `[::1]`): no DNS answer stands behind it, so a page
 * cannot rebind it. */
export function isAddressLiteral(name: string): boolean {
  return IPV4.test(name) || (name.startsWith('[') && name.endsWith(']'));
}

/** The default Host rule of the embedding API: an address literal or `localhost`, any port. */
export function literalOrLocalhost(host: string): boolean {
  const h = splitHost(host);
  return h !== undefined && (h.name === 'localhost' || isAddressLiteral(h.name));
}

/**
 * Whether a write carrying `origin` may go on: no Origin header at all, the request's own
 * origin (its scheme and Host), or one of `allowed` (normalised). `Origin: null` (a
 * sandboxed or file page) is never its own.
 */
export function originAllowed(origin: string | undefined, host: string | undefined, secure: boolean, allowed: readonly string[]): boolean {
  if (origin === undefined) return true;
  const o = normaliseOrigin(origin);
  if (o === undefined) return false;
  if (host !== undefined && o === normaliseOrigin(`${secure ? 'https' : 'http'}://${host}`)) return true;
  return allowed.includes(o);
}
