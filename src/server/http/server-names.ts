// Virtual server selection for one listen address, in nginx's order
// (ngx_http_find_virtual_server): exact name, longest leading wildcard, longest trailing
// wildcard, first regex, then the address's default server.
import type { SecureContext } from 'node:tls';
import { compileRegex } from '../config/regex.js';
import type { ListenConfig, VirtualServerConfig } from '../config/model.js';

export type ListenAddress = Pick<ListenConfig, 'host' | 'port'>;

interface NameRegex {
  readonly regex: RegExp;
  readonly server: VirtualServerConfig;
}

export class ServerNames {
  /** The server for a Host no name matches: the `default_server` of the address, else the
   * first server listening on it. */
  readonly defaultServer: VirtualServerConfig;
  private readonly exact = new Map<string, VirtualServerConfig>();
  /** `*.example.com` and `.example.com`, keyed `example.com`. */
  private readonly head = new Map<string, VirtualServerConfig>();
  /** `www.example.*`, keyed `www.example.` (with the dot). */
  private readonly tail = new Map<string, VirtualServerConfig>();
  private readonly regexes: NameRegex[] = [];

  /** `servers`: those listening on `address`, in configuration order. */
  constructor(servers: readonly VirtualServerConfig[], address: ListenAddress) {
    const first = servers[0];
    if (first === undefined) throw new Error(`no server listens on ${address.host}:${address.port}`);
    this.defaultServer = servers.find((server) => server.listens.some((listen) => listen.defaultServer && sameAddress(listen, address))) ?? first;
    for (const server of servers) {
      for (const name of server.names) this.add(name, server);
    }
  }

  /** The server for a request's Host header (absent or empty: the `""` name). */
  select(host: string | undefined): VirtualServerConfig {
    return this.find(host === undefined ? '' : normaliseHost(host)) ?? this.defaultServer;
  }

  /** The server for a TLS client's SNI servername, whose certificate the handshake uses.
   * Without SNI nginx keeps the default server: the `""` name is not looked up. */
  selectServername(servername: string | undefined): VirtualServerConfig {
    if (servername === undefined || servername === '') return this.defaultServer;
    return this.find(normaliseHost(servername)) ?? this.defaultServer;
  }

  /** The server whose `server_name` matches a normalised host, if any. */
  find(name: string): VirtualServerConfig | undefined {
    const exact = this.exact.get(name);
    if (exact !== undefined) return exact;
    // nginx tries no wildcard or regex for a request without a host.
    if (name === '') return undefined;

    if (this.head.size > 0) {
      // Left to right over the dots: the first suffix found is the longest.
      for (let dot = name.indexOf('.'); dot >= 0; dot = name.indexOf('.', dot + 1)) {
        const server = this.head.get(name.slice(dot + 1));
        if (server !== undefined) return server;
      }
    }
    if (this.tail.size > 0) {
      // Right to left: the first prefix found is the longest; `*` stands for one label or more.
      for (let dot = name.lastIndexOf('.', name.length - 2); dot > 0; dot = name.lastIndexOf('.', dot - 1)) {
        const server = this.tail.get(name.slice(0, dot + 1));
        if (server !== undefined) return server;
      }
    }
    for (const { regex, server } of this.regexes) {
      if (regex.test(name)) return server;
    }
    return undefined;
  }

  private add(written: string, server: VirtualServerConfig): void {
    if (written.startsWith('~')) {
      this.regexes.push({ regex: nameRegex(written.slice(1)), server });
      return;
    }
    let name = written.toLowerCase();
    if (name.length > 1 && name.endsWith('.')) name = name.slice(0, -1);
    // The empty name as written in the file, should the quotes have stayed on it: no Host
    // can hold quotes, so reading it as `""` loses nothing.
    if (name === '""') name = '';
    // A name given twice is a configuration warning in nginx ("conflicting server name"):
    // the first server keeps it.
    if (name.startsWith('*.')) {
      setFirst(this.head, name.slice(2), server);
    } else if (name.startsWith('.')) {
      setFirst(this.exact, name.slice(1), server);
      setFirst(this.head, name.slice(1), server);
    } else if (name.endsWith('.*')) {
      setFirst(this.tail, name.slice(0, -1), server);
    } else {
      setFirst(this.exact, name, server);
    }
  }
}

/** Host as nginx compares it: lowercase, without `:port` (an IPv6 literal keeps its
 * brackets) and without one trailing dot. */
export function normaliseHost(host: string): string {
  let end = host.length;
  if (host.charCodeAt(0) === 0x5b /* [ */) {
    const close = host.indexOf(']');
    if (close > 0) end = close + 1;
  } else {
    const colon = host.indexOf(':');
    if (colon >= 0) end = colon;
  }
  if (end > 0 && host.charCodeAt(end - 1) === 0x2e /* . */) end--;
  const name = end === host.length ? host : host.slice(0, end);
  return hasUpperCase(name) ? name.toLowerCase() : name;
}

/** An SNICallback for node:tls that hands over the context of the server the servername
 * selects; `contextOf` returning undefined keeps the listener's default context. */
export function sniCallback(names: ServerNames, contextOf: (server: VirtualServerConfig) => SecureContext | undefined) {
  return (servername: string, callback: (error: Error | null, context?: SecureContext) => void): void => {
    callback(null, contextOf(names.selectServername(servername)));
  };
}

function hasUpperCase(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x41 && c <= 0x5a) return true;
    // Leave the rest of Unicode to toLowerCase.
    if (c > 0x7f) return true;
  }
  return false;
}

/** nginx compiles a server_name regex caseless when it holds an uppercase letter (hosts are
 * lowercased, so it could never match otherwise); compileRegex reads PCRE's spellings, as
 * the configuration check does. */
export function nameRegex(source: string): RegExp {
  return compileRegex(source, /[A-Z]/.test(source));
}

function sameAddress(listen: ListenAddress, address: ListenAddress): boolean {
  return listen.port === address.port && bare(listen.host) === bare(address.host);
}

function bare(host: string): string {
  return (host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host).toLowerCase();
}

function setFirst(map: Map<string, VirtualServerConfig>, key: string, server: VirtualServerConfig): void {
  if (!map.has(key)) map.set(key, server);
}
