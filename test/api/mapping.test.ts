// The `api <path>` directive's rules 1-5 as a pure function, and what the handler does
// with a mount that exposes only a subtree.
import t from 'tap';
import { bodyText, createApi, mapRequest, type ApiMount } from '../../src/api/index.js';
import { Status } from '../../src/metrics/status.js';
import { serverZones } from '../../src/metrics/http-zones.js';
import { uniqueName } from '../helpers.js';

const map = (mounts: ApiMount[], path: string, query = '', host?: string) =>
  mapRequest(mounts, { path, query: new URLSearchParams(query), host });

t.test('rule 1: a prefix location replaces its prefix with the api path', async (t) => {
  const stats: ApiMount[] = [{ location: '/stats/', api: '/status/http/server_zones/' }];
  t.same(map(stats, '/stats/site'), { mount: stats[0], path: '/status/http/server_zones/site' }, "the spec's example");
  t.same(map(stats, '/stats/site/requests/total'), { mount: stats[0], path: '/status/http/server_zones/site/requests/total' });
  t.same(map(stats, '/stats/'), { mount: stats[0], path: '/status/http/server_zones/' });
  t.same(map(stats, '/stats'), { mount: stats[0], path: '/status/http/server_zones/' }, 'without the trailing slash');
  t.equal(map(stats, '/other/site'), undefined, 'no mount: not the API');
});

t.test('rule 2: variables in the api path', async (t) => {
  const byArg: ApiMount[] = [{ location: '/zone', exact: true, api: '/status/http/server_zones/$arg_name' }];
  t.same(map(byArg, '/zone', 'name=site'), { mount: byArg[0], path: '/status/http/server_zones/site' }, '$arg_<name>');
  const byHost: ApiMount[] = [{ location: /^\/mine\/(.*)$/, api: '/status/http/server_zones/${host}/$1' }];
  t.same(map(byHost, '/mine/requests', '', 'site:8080'), { mount: byHost[0], path: '/status/http/server_zones/site/requests' }, '$host (port dropped) and a capture');
  const byUri: ApiMount[] = [{ location: '/status/', api: '$uri' }];
  t.same(map(byUri, '/status/connections'), { mount: byUri[0], path: '/status/connections' }, '$uri: the whole path, nothing appended');
  const fixed: ApiMount[] = [{ location: '/me/', api: '/status/http/server_zones/$host' }];
  t.same(map(fixed, '/me/anything', '', 'site'), { mount: fixed[0], path: '/status/http/server_zones/site' }, 'with variables the rest of the URI is not appended, as with alias');
});

t.test('rule 3: a regex location defines the whole path, captures substituted', async (t) => {
  const re: ApiMount[] = [{ location: /^\/api\/([^/]+)\/(.*)$/, api: '/status/http/$1_zones/$2' }];
  t.same(map(re, '/api/server/site/requests'), { mount: re[0], path: '/status/http/server_zones/site/requests' }, "the spec's example");
  t.same(map(re, '/api/location/x/'), { mount: re[0], path: '/status/http/location_zones/x/' });
});

t.test('rule 4 and the order of locations: exact, then regex, then longest prefix', async (t) => {
  const mounts: ApiMount[] = [
    { location: '/s/', api: '/status/' },
    { location: '/s/http/', api: '/status/http/server_zones/' },
    { location: /^\/s\/re\/(.*)$/, api: '/status/$1' },
    { location: '/s/exact', exact: true, api: '/status/connections' },
  ];
  t.equal((map(mounts, '/s/connections') as { path: string }).path, '/status/connections', 'shortest prefix');
  t.equal((map(mounts, '/s/http/site') as { path: string }).path, '/status/http/server_zones/site', 'longest prefix');
  t.equal((map(mounts, '/s/re/server') as { path: string }).path, '/status/server', 'a regex before the prefixes');
  t.equal((map(mounts, '/s/exact') as { path: string }).path, '/status/connections', 'exact first');
});

t.test('rule 5 and safety: a mount exposes its subtree and nothing above it', async (t) => {
  const one: ApiMount[] = [{ location: '/site/', api: '/status/http/server_zones/site/' }];
  t.same(map(one, '/site/requests/total'), { mount: one[0], path: '/status/http/server_zones/site/requests/total' });
  for (const path of ['/site/../other', '/site/%2e%2e/other', '/site/%2E%2e/x', '/site/a/..', '/site/..%2F..%2Fconnections'])
    t.match(map(one, path), { error: 'BadRequest' }, `${path}: refused`);
  t.match(map(one, '/site/%zz'), { error: 'BadRequest', description: /not valid percent-encoding/ }, 'bad encoding');
  t.same(map(one, '/site/%252e%252e'), { mount: one[0], path: '/status/http/server_zones/site/%2e%2e' }, 'decoded once only');
  const arg: ApiMount[] = [{ location: '/z', exact: true, api: '/status/http/server_zones/$arg_name' }];
  t.match(map(arg, '/z', 'name=../../connections'), { error: 'BadRequest' }, 'a variable cannot climb out either');
});

t.test('the handler: one zone exposed, build shown only when set', async (t) => {
  const status = Status.create(
    { server: { version: '9.9', build: 'nightly' }, http: { serverZones: [{ name: 'site' }, { name: 'other' }] } },
    { workers: 1, writer: true, instance: uniqueName('map') },
  );
  t.teardown(() => status.remove());
  serverZones.recorder(status, 'site').requestStarted();
  const api = createApi({ status, mounts: [{ location: '/site/', api: '/status/http/server_zones/site/' }, { location: '/status/', api: '/status/' }] });
  const get = (path: string) => {
    const r = api({ method: 'GET', path, query: '', address: '127.0.0.1' })!;
    return { status: r.status, body: JSON.parse(bodyText(r)) };
  };
  t.same(get('/site/requests'), { status: 200, body: { total: 1, processing: 1, discarded: 0 } });
  t.equal(get('/site/../other').status, 400, 'the other zone is out of reach');
  t.same(get('/status/server').body.build, 'nightly', 'build appears when set');
  t.same(get('/status/server').body.version, '9.9');
});
