// The geo module's directives (ngx_http_geo_module, ngx_stream_geo_module), composed
// into the loader's table by config/directives.ts:
//
//   geo [<address>] $<variable> { [default <value>;] [include <file>;] [delete <net>;]
//        [ranges;] [proxy <net>;] [proxy_recursive;] <net> | <from>-<to> <value>; ... }
//                                                                     http, stream
//
// `proxy` and `proxy_recursive` are http's: a stream session has no X-Forwarded-For.
import type { Variables } from '../../api/variables.js';
import type { Checker, Context } from '../config/levels.js';
import type { Origin } from '../config/model.js';
import { define, type DirectiveSpec } from '../config/spec.js';
import type { Directive } from '../config/syntax.js';
import { checkAccessAddress, checkVariables } from '../config/values.js';
import { definedName, variableOf } from '../map/config.js';
import { trustedSet } from '../realip/forwarded.js';
import { httpGeoScope, streamGeoScope } from './scopes.js';
import { addressOf, geoVariable, maskOf, type GeoScope, type GeoTable, type Network } from './runtime.js';

/** `10.0.0.0/8`, `::1`, `1.2.3.4` (all its bits): a network; undefined for none. */
function networkOf(text: string): Omit<Network, 'value'> | undefined {
  const slash = text.indexOf('/');
  const a = addressOf(slash < 0 ? text : text.slice(0, slash));
  if (!a || text.slice(0, slash < 0 ? undefined : slash).startsWith('::ffff:')) return undefined;
  const max = a.v6 ? 128 : 32;
  const written = slash < 0 ? String(max) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(written) || Number(written) > max) return undefined;
  const bits = Number(written);
  // nginx warns that the low bits mean nothing, and masks them off.
  return { v6: a.v6, bits, net: a.n & maskOf(bits, a.v6) };
}

/** A `geo` block's entries, its included files' too. */
function readGeo(d: Directive, module: 'http' | 'stream', c: Checker): GeoTable | undefined {
  const networks = new Map<string, Network>();
  const ranges: Array<{ from: bigint; to: bigint; value: string }> = [];
  const proxies: string[] = [];
  let inRanges = false;
  let recursive = false;
  let fallback = '';
  let failed = false;
  const fail = (e: Directive, message: string) => {
    failed = true;
    c.error(e.origin, message);
  };
  const range = (text: string) => {
    const m = /^([\d.]+)-([\d.]+)$/.exec(text);
    const from = m && addressOf(m[1]);
    const to = m && addressOf(m[2]);
    return from && to && !from.v6 && !to.v6 && from.n <= to.n ? { from: from.n, to: to.n } : undefined;
  };
  const read = (entries: readonly Directive[]) => {
    for (const e of entries) {
      if (e.block) {
        fail(e, `unexpected "{"`);
        continue;
      }
      if (e.args.length === 0 && e.name === 'ranges') {
        inRanges = true;
        continue;
      }
      if (e.args.length === 0 && e.name === 'proxy_recursive' && module === 'http') {
        recursive = true;
        continue;
      }
      if (e.args.length !== 1) {
        fail(e, 'invalid number of the geo parameters');
        continue;
      }
      const [arg] = e.args;
      if (e.name === 'include') read(e.included ?? []);
      else if (e.name === 'default') fallback = arg;
      else if (e.name === 'proxy' && module === 'http') {
        if (checkAccessAddress(arg) === undefined && arg !== 'all') proxies.push(arg);
        else fail(e, `invalid network or address "${arg}"`);
      } else if (inRanges) {
        const target = e.name === 'delete' ? arg : e.name;
        const r = range(target);
        if (!r) fail(e, `invalid range "${target}"`);
        // A deleted range takes its addresses out of every range before it.
        else if (e.name === 'delete') ranges.push({ ...r, value: '\0' });
        else ranges.push({ ...r, value: arg });
      } else {
        const target = e.name === 'delete' ? arg : e.name;
        const n = networkOf(target);
        if (!n) fail(e, `invalid network "${target}"`);
        else if (e.name === 'delete') networks.delete(`${n.v6}/${n.net}/${n.bits}`);
        // nginx warns of a network written twice; the later value is the one.
        else networks.set(`${n.v6}/${n.net}/${n.bits}`, { ...n, value: arg });
      }
    }
  };
  read(d.block ?? []);
  if (failed) return undefined;
  return {
    networks: [...networks.values()].sort((a, b) => b.bits - a.bits),
    ...(inRanges ? { ranges: deleted(ranges) } : {}),
    default: fallback,
    ...(proxies.length ? { proxies: trustedSet(proxies, d.origin as Origin) } : {}),
    proxyRecursive: recursive,
  };
}

/** Ranges with the deleted ones cut out of those before them. */
function deleted(ranges: ReadonlyArray<{ from: bigint; to: bigint; value: string }>): Array<{ from: bigint; to: bigint; value: string }> {
  const out: Array<{ from: bigint; to: bigint; value: string }> = [];
  for (const r of ranges) {
    if (r.value !== '\0') {
      out.push(r);
      continue;
    }
    const kept = out.splice(0).flatMap((o) => {
      if (o.to < r.from || o.from > r.to) return [o];
      return [...(o.from < r.from ? [{ ...o, to: r.from - 1n }] : []), ...(o.to > r.to ? [{ ...o, from: r.to + 1n }] : [])];
    });
    out.push(...kept);
  }
  return out;
}

/** `geo` in one module. */
function geoDirective<C>(context: Context, module: 'http' | 'stream', table: Variables<C>, scope: GeoScope<C>): DirectiveSpec {
  return define({
    contexts: [context],
    args: [1, 2],
    block: true,
    multiple: true,
    declare(d) {
      const name = definedName(d.args[d.args.length - 1] ?? '');
      if (name !== undefined && !table.builtIn(name)) table.declare(name);
    },
    apply(d, _level, c) {
      const source = d.args.length === 2 ? d.args[0] : undefined;
      if (source !== undefined) {
        const unknown = checkVariables(source, table.known);
        if (unknown) return c.error(d.origin, unknown);
      }
      const name = variableOf(d, d.args[d.args.length - 1], table, c);
      if (name === undefined) return;
      const t = readGeo(d, module, c);
      if (t) table.define(name, geoVariable(name, source, t, scope));
    },
  });
}

export const geoDirectives: Readonly<Record<string, readonly DirectiveSpec[]>> = {
  geo: [geoDirective('http', 'http', httpGeoScope.table, httpGeoScope), geoDirective('stream', 'stream', streamGeoScope.table, streamGeoScope)],
};
