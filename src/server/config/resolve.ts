// From what each block says to what each location means: nginx's merge of the inherited
// settings down http -> server -> location -> nested location, into the model.
import type { At, Checker, HttpLevel, InheritableLevel, LocationLevel, ServerLevel } from './levels.js';
import type { AccessRule, HttpBlockConfig, Inherited, LocationConfig, VirtualServerConfig } from './model.js';

/** nginx's default `ssl_handshake_timeout`. */
const SSL_HANDSHAKE_TIMEOUT_MS = 60_000;

/** The inherited settings at one level, realm and user file still apart: nginx merges
 * them separately, so a location may add the file to a realm set outside. */
interface Merged {
  readonly root?: string;
  readonly access: readonly AccessRule[];
  readonly authBasic?: At<string | false>;
  readonly authUserFile?: string;
}

function merge(outer: Merged, level: InheritableLevel): Merged {
  const root = level.root ?? outer.root;
  const authBasic = level.authBasic ?? outer.authBasic;
  const authUserFile = level.authUserFile ?? outer.authUserFile;
  return {
    access: level.access.length ? level.access : outer.access,
    ...(root !== undefined ? { root } : {}),
    ...(authBasic ? { authBasic } : {}),
    ...(authUserFile !== undefined ? { authUserFile } : {}),
  };
}

class Resolver {
  /** `auth_basic` directives already reported, once each however many levels inherit them. */
  private readonly unpaired = new Set<At<string | false>>();

  constructor(private readonly c: Checker) {}

  private settle(m: Merged): Inherited {
    const out: { -readonly [K in keyof Inherited]: Inherited[K] } = { access: m.access };
    if (m.root !== undefined) out.root = m.root;
    const realm = m.authBasic?.value;
    if (m.authBasic && realm !== false && realm !== undefined) {
      if (m.authUserFile !== undefined) out.authBasic = { realm, userFile: m.authUserFile };
      else if (!this.unpaired.has(m.authBasic)) {
        this.unpaired.add(m.authBasic);
        this.c.error(m.authBasic.origin, `"auth_basic" has no "auth_basic_user_file" where it applies`);
      }
    }
    return out;
  }

  http(http: HttpLevel): HttpBlockConfig {
    const top = merge({ access: [] }, http);
    return { servers: http.servers.map((s) => this.server(s, top)), upstreams: [] };
  }

  private server(s: ServerLevel, outer: Merged): VirtualServerConfig {
    const merged = merge(outer, s);
    const ssl =
      s.listens.some((l) => l.ssl) && s.sslCertificate !== undefined && s.sslCertificateKey !== undefined
        ? { certificate: s.sslCertificate, key: s.sslCertificateKey, handshakeTimeout: s.sslHandshakeTimeout ?? SSL_HANDSHAKE_TIMEOUT_MS }
        : undefined;
    return {
      ...this.settle(merged),
      listens: s.listens,
      names: s.names,
      ...(s.statusZone !== undefined ? { statusZone: s.statusZone } : {}),
      ...(ssl ? { ssl } : {}),
      admin: s.listens.some((l) => l.admin),
      ...(s.return ? { return: s.return.value } : {}),
      locations: s.locations.map((l) => this.location(l, merged, undefined, false)),
      origin: s.directive.origin,
    };
  }

  /** `zone`: the enclosing location's zone, already undefined under `status_zone off`. */
  private location(l: LocationLevel, outer: Merged, zone: string | undefined, apiConfigFiles: boolean): LocationConfig {
    const merged = merge(outer, l);
    const statusZone = l.statusZone === false ? undefined : l.statusZone ?? zone;
    const configFiles = l.apiConfigFiles ?? apiConfigFiles;
    return {
      ...this.settle(merged),
      modifier: l.modifier,
      path: l.path,
      ...(l.regex ? { regex: l.regex } : {}),
      ...(statusZone !== undefined ? { statusZone } : {}),
      ...(l.return ? { return: l.return.value } : {}),
      ...(l.api ? { api: l.api.value } : {}),
      apiConfigFiles: configFiles,
      locations: l.locations.map((n) => this.location(n, merged, statusZone, configFiles)),
      origin: l.origin,
    };
  }
}

export const resolveHttp = (http: HttpLevel, c: Checker): HttpBlockConfig => new Resolver(c).http(http);
