// /config: every path shape and method, every validation rule, what /status shows after
// a change, the state file, running out of zone memory, and several processes at once.
import t from 'tap';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bodyText, createApi } from '../../src/api/index.js';
import { INSTANCE_ENV } from '../../src/engine/index.js';
import type { StatusConfig } from '../../src/metrics/catalog.js';
import { parseStateFile, slowStartRefused, stateFileText } from '../../src/metrics/peers.js';
import { Status } from '../../src/metrics/status.js';
import { peer } from '../../src/metrics/upstreams.js';
import { parseUpstreamAddress } from '../../src/server/config/values.js';
import { start, uniqueName } from '../helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const CONFIG: StatusConfig = {
  http: {
    upstreams: [
      { name: 'backend', peers: [{ server: '127.0.0.1:8081', weight: 2, sid: 'a' }, { server: '127.0.0.1:8082' }] },
      { name: 'hashed', method: 'hash', peers: [{ server: '127.0.0.1:8083' }] },
    ],
  },
  stream: { upstreams: [{ name: 'sback', peers: [{ server: '127.0.0.1:9081', backup: true }] }] },
};

function setup(t: { teardown(fn: () => void): void }, config: StatusConfig = CONFIG, workers = 1) {
  const status = Status.create(config, { workers, writer: true, instance: uniqueName('config') });
  t.teardown(() => status.remove());
  const api = createApi({ status });
  const call = (method: string, path: string, body?: unknown, query = '') => {
    const raw = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    const r = api({ method, path, query, address: '127.0.0.1', body: raw, ...(raw ? { contentType: 'application/json' } : {}) })!;
    const text = bodyText(r);
    const json = text && r.headers['Content-Type'] === 'application/json';
    return { status: r.status, headers: r.headers, text, body: json ? (JSON.parse(text) as Any) : undefined };
  };
  const get = (path: string, query = '') => call('GET', path, undefined, query).body;
  return { status, api, call, get };
}

const B = '/config/http/upstreams/backend';
const P1 = `${B}/servers/127.0.0.1:8081`;

t.test('GET: every path shape, with and without defaults=on', async (t) => {
  const { call, get } = setup(t);
  const backend = { servers: { '127.0.0.1:8081': { weight: 2, sid: 'a' }, '127.0.0.1:8082': {} } };
  t.same(get('/config/'), {
    http: { upstreams: { backend, hashed: { servers: { '127.0.0.1:8083': {} } } } },
    stream: { upstreams: { sback: { servers: { '127.0.0.1:9081': { backup: true } } } } },
  });
  t.same(get('/config'), get('/config/'), 'with or without the trailing slash');
  t.same(Object.keys(get('/config/http')), ['upstreams']);
  t.same(Object.keys(get('/config/http/upstreams')), ['backend', 'hashed']);
  t.same(get(B), backend);
  t.same(get(`${B}/servers/`), backend.servers);
  t.same(get(P1), { weight: 2, sid: 'a' });
  t.equal(get(`${P1}/weight`), 2);
  t.equal(get(`${P1}/max_fails`), 1, 'a parameter path shows the default when unset');
  t.same(get(P1, 'defaults=on'), { weight: 2, max_conns: 0, max_fails: 1, fail_timeout: 10, slow_start: 0, backup: false, down: false, sid: 'a' });
  t.same(get('/config/stream/upstreams/sback/servers/127.0.0.1:9081', 'defaults=on'), {
    weight: 1, max_conns: 0, max_fails: 1, fail_timeout: 10, slow_start: 0, backup: true, down: false,
  }, 'stream peers have no sid');
  for (const path of ['/config/ftp', '/config/http/servers', '/config/http/upstreams/nope', `${B}/peers`, `${B}/servers/10.0.0.1:80`,
    `${P1}/color`, `${P1}/weight/more`, '/config/stream/upstreams/sback/servers/127.0.0.1:9081/sid']) {
    const r = call('GET', path);
    t.equal(r.status, 404, path);
    t.equal(r.body.error, 'PathNotFound');
  }
  const head = call('HEAD', P1);
  t.equal(head.status, 200);
  t.equal(head.text, '', 'HEAD has no body');
  t.equal(head.headers['Content-Length'], String(Buffer.byteLength(call('GET', P1).text)));
});

t.test('PUT, PATCH and DELETE at every writable level', async (t) => {
  const { call, get } = setup(t);
  const created = call('PUT', `${B}/servers/127.0.0.1:8090`, { weight: 3, max_conns: 10 });
  t.equal(created.status, 201);
  t.same(created.body, { success: 'Created', description: `New configuration API entity "${B}/servers/127.0.0.1:8090" was created.` });
  const replaced = call('PUT', `${B}/servers/127.0.0.1:8090`, { max_fails: 0 });
  t.equal(replaced.status, 200);
  t.same(replaced.body, { success: 'Updated', description: `Existing configuration API entity "${B}/servers/127.0.0.1:8090" was updated with replacing.` });
  t.same(get(`${B}/servers/127.0.0.1:8090`), { max_fails: 0 }, 'PUT replaces whole');

  const merged = call('PATCH', P1, { max_fails: 3, weight: null, fail_timeout: '1m' });
  t.equal(merged.status, 200);
  t.match(merged.body.description, /was updated with merging\.$/);
  t.same(get(P1), { max_fails: 3, fail_timeout: 60, sid: 'a' }, 'present members set, null deleted, others kept');
  t.equal(get(`${P1}/weight`), 1, 'a deleted member takes its default');
  t.equal(call('PATCH', `${B}/servers/127.0.0.1:8091`, { down: true }).status, 201, 'PATCH creates');

  t.equal(call('PUT', `${P1}/weight`, 7).status, 200);
  t.equal(get(`${P1}/weight`), 7);
  t.equal(call('PATCH', `${P1}/slow_start`, JSON.stringify('1500ms')).status, 200);
  t.equal(get(`${P1}/slow_start`), 1.5, 'slow_start to the millisecond');
  const reset = call('DELETE', `${P1}/weight`);
  t.same(reset.body, { success: 'Reset', description: `Configuration API entity "${P1}/weight" was reset to default.` });
  t.notOk('weight' in get(P1), 'after DELETE the parameter is unset');
  t.equal(get(P1, 'defaults=on').weight, 1, 'and shows its default');
  t.equal(call('PATCH', `${P1}/sid`, null).status, 200, 'PATCH null on a parameter resets it');
  t.notOk('sid' in get(P1));

  t.equal(call('DELETE', `${B}/servers/127.0.0.1:8091`).status, 200);
  t.notOk('127.0.0.1:8091' in get(`${B}/servers`), 'DELETE removes a server');
  t.equal(call('DELETE', `${B}/servers/127.0.0.1:8091`).status, 404, 'a missing one is not found');

  t.equal(call('PATCH', `${B}/servers`, { '127.0.0.1:8082': null, '127.0.0.1:8092': { weight: 4 } }).status, 200);
  t.same(Object.keys(get(`${B}/servers`)), ['127.0.0.1:8081', '127.0.0.1:8090', '127.0.0.1:8092']);
  t.equal(call('PUT', `${B}/servers`, { '127.0.0.1:8093': {} }).status, 200);
  t.same(get(B), { servers: { '127.0.0.1:8093': {} } }, 'PUT of servers replaces the set');
  t.equal(call('PATCH', B, { servers: { '127.0.0.1:8094': { weight: 2 } } }).status, 200);
  t.same(Object.keys(get(`${B}/servers`)), ['127.0.0.1:8093', '127.0.0.1:8094']);
  const service = call('PUT', B, { servers: { 'api@backend.local:8080': { weight: 9 } } });
  t.equal(service.status, 400, 'a service name needs a resolver');
  t.same(Object.keys(get(`${B}/servers`)), ['127.0.0.1:8093', '127.0.0.1:8094'], 'and changes nothing');
  t.equal(call('DELETE', `${B}/servers`).status, 200);
  t.same(get(B), { servers: {} });
  t.equal(call('PUT', `${B}/servers/[::1]:8080/`, {}).status, 201, 'IPv6 in brackets, trailing slash');
  t.equal(call('PUT', `${B}/servers/127.0.0.1%3A8095`, {}).status, 201, 'percent-encoded names are decoded');
  t.ok('127.0.0.1:8095' in get(`${B}/servers`));
  t.equal(call('DELETE', B).status, 200);
  t.same(get(B), { servers: {} }, 'DELETE of the upstream removes its servers');
});

t.test('server names: the forms of the configuration file, keyed <ip>:<port>', async (t) => {
  const { call, get, api } = setup(t);
  const before = JSON.stringify(get('/config/'));
  for (const name of ['localhost:8080', 'example.invalid', 'backend.local:8080', '_http._tcp@127.0.0.1:8080', 'api@backend.local', 'LOCALHOST.']) {
    const file = parseUpstreamAddress(name);
    const r = call('PUT', `${B}/servers/${name}`, {});
    if (file.error === undefined) {
      t.equal(r.status, 201, `${name}: taken, as the file takes it`);
      t.ok(file.value.address in get(`${B}/servers`), `${name}: keyed ${file.value.address}`);
      t.equal(call('DELETE', `${B}/servers/${file.value.address}`).status, 200);
      continue;
    }
    t.equal(r.status, 400, `${name}: refused, as the file refuses it`);
    t.equal(r.body.error, 'FormatError');
    t.ok(r.body.description.includes(file.error), `${name}: with the file's message: ${r.body.description}`);
    t.match(r.body.description, /needs a resolver/);
  }
  t.equal(JSON.stringify(get('/config/')), before, 'the refused names changed nothing');

  t.equal(call('PUT', `${B}/servers/localhost:8085`, { weight: 3 }).status, 201);
  t.same(get(`${B}/servers/127.0.0.1:8085`), { weight: 3 }, 'localhost is 127.0.0.1');
  t.same(get(`${B}/servers/localhost:8085`), { weight: 3 }, 'and either name finds it');
  const peers = JSON.parse(bodyText(api({ method: 'GET', path: '/status/http/upstreams/backend/peers/127.0.0.1:8085', query: '', address: '127.0.0.1' })!));
  t.equal(peers.server, 'localhost:8085', 'the status shows the server as written');
  t.equal(call('PATCH', `${B}/servers/127.0.0.1:8085`, { max_fails: 0 }).status, 200, 'the address changes it');
  t.same(get(`${B}/servers/localhost:8085`), { weight: 3, max_fails: 0 });
  t.equal(call('PUT', `${B}/servers/127.0.0.9`, {}).status, 201);
  t.ok('127.0.0.9:80' in get(`${B}/servers`), 'without a port: port 80, as nginx has it');
  t.equal(call('PUT', `${B}/servers/[0:0::1]`, {}).status, 201);
  t.ok('[::1]:80' in get(`${B}/servers`), 'IPv6 compressed, in brackets');
  const twice = call('PATCH', `${B}/servers`, { 'localhost:8086': {}, '127.0.0.1:8086': { weight: 2 } });
  t.equal(twice.status, 400, 'two names of one address in one body');
  t.match(twice.body.description, /same server 127\.0\.0\.1:8086/);
  t.notOk('127.0.0.1:8086' in get(`${B}/servers`));
});

t.test('slow_start: refused where the balancing method does not ramp weights, with the file\'s message', async (t) => {
  const methods = ['hash', 'ip_hash', 'random'] as const;
  const { call, get } = setup(t, { http: { upstreams: methods.map((method) => ({ name: method, method, peers: [{ server: '127.0.0.1:8081' }] })) } });
  const before = JSON.stringify(get('/config/'));
  for (const method of methods) {
    const U = `/config/http/upstreams/${method}/servers`;
    const file = slowStartRefused(method, 30)!;
    t.match(file, new RegExp(`^balancing method "${method}" does not support parameter "slow_start"`));
    for (const [verb, path, body] of [
      ['PUT', `${U}/127.0.0.1:8082`, { slow_start: 30 }],
      ['PATCH', `${U}/127.0.0.1:8081`, { slow_start: '500ms' }],
      ['PUT', `${U}/127.0.0.1:8081/slow_start`, '"30s"'],
      ['PATCH', U, { '127.0.0.1:8083': { weight: 2, slow_start: 1 } }],
    ] as const) {
      const r = call(verb, path, body);
      t.equal(r.status, 400, `${verb} ${path}`);
      t.equal(r.body.error, 'FormatError');
      t.equal(r.body.description, `The "slow_start" field is refused: ${file}.`, 'the configuration file\'s message');
    }
  }
  t.equal(JSON.stringify(get('/config/')), before, 'nothing changed');
  t.equal(call('PATCH', '/config/http/upstreams/hash/servers/127.0.0.1:8081', { slow_start: 0 }).status, 200, '0 is off, which every method takes');
  const { call: rr } = setup(t, { http: { upstreams: [{ name: 'rr', peers: [{ server: '127.0.0.1:8081' }] }, { name: 'lc', method: 'least_conn', peers: [{ server: '127.0.0.1:8081' }] }] } });
  t.equal(rr('PATCH', '/config/http/upstreams/rr/servers/127.0.0.1:8081', { slow_start: 30 }).status, 200, 'round robin takes it');
  t.equal(rr('PATCH', '/config/http/upstreams/lc/servers/127.0.0.1:8081', { slow_start: 30 }).status, 200, 'least_conn takes it');
});

t.test('methods: read-only above an upstream, /status stays read-only', async (t) => {
  const { call } = setup(t);
  for (const path of ['/config/', '/config/http', '/config/http/upstreams'])
    for (const method of ['PUT', 'PATCH', 'DELETE', 'POST']) {
      const r = call(method, path, {});
      t.equal(r.status, 405, `${method} ${path}`);
      t.equal(r.headers.Allow, 'GET, HEAD');
      t.equal(r.body.description, `The ${method} method is not allowed for the requested API element "${path}".`);
    }
  const post = call('POST', P1, {});
  t.equal(post.status, 405);
  t.equal(post.headers.Allow, 'GET, HEAD, PUT, PATCH, DELETE');
  for (const method of ['PUT', 'PATCH', 'DELETE']) t.equal(call(method, '/status/', {}).status, 405, `${method} /status/`);
});

t.test('validation: each rejection names the problem and changes nothing', async (t) => {
  const { call, get } = setup(t);
  const before = JSON.stringify(get('/config/'));
  const cases: Array<[string, string, unknown, number, string, RegExp]> = [
    ['PUT', P1, { color: 'red' }, 400, 'FormatError', /^The "color" field is unknown\.$/],
    ['PUT', P1, { weight: 0 }, 400, 'FormatError', /"weight" field must be a whole number from 1/],
    ['PUT', P1, { weight: '2' }, 400, 'FormatError', /"weight"/],
    ['PUT', P1, { weight: 1.5 }, 400, 'FormatError', /"weight"/],
    ['PUT', P1, { weight: 2 ** 31 }, 400, 'FormatError', /"weight"/],
    ['PUT', P1, { max_conns: -1 }, 400, 'FormatError', /"max_conns"/],
    ['PUT', P1, { max_fails: 1e300 }, 400, 'FormatError', /"max_fails"/],
    ['PUT', P1, { fail_timeout: '500ms' }, 400, 'FormatError', /"fail_timeout"/],
    ['PUT', P1, { fail_timeout: 1.5 }, 400, 'FormatError', /"fail_timeout"/],
    ['PUT', P1, { fail_timeout: '10 s' }, 400, 'FormatError', /"fail_timeout"/],
    ['PUT', P1, { slow_start: '1.5s' }, 400, 'FormatError', /"slow_start"/],
    ['PUT', P1, { slow_start: 0.0005 }, 400, 'FormatError', /"slow_start"/],
    ['PUT', P1, { down: 'yes' }, 400, 'FormatError', /"down" field must be true or false/],
    ['PUT', P1, { sid: 5 }, 400, 'FormatError', /"sid"/],
    ['PUT', P1, [1, 2], 400, 'FormatError', /JSON object/],
    ['PUT', P1, { sid: 'a', backup: true }, 400, 'FormatError', /"backup" field can be set only when the server is created/],
    ['PUT', `${P1}/backup`, true, 400, 'FormatError', /only when the server is created/],
    ['PUT', '/config/http/upstreams/hashed/servers/127.0.0.1:9', { backup: true }, 400, 'FormatError', /not supported by the "hash" balancing method/],
    ['PUT', '/config/stream/upstreams/sback/servers/127.0.0.1:9', { sid: 'x' }, 400, 'FormatError', /^The "sid" field is unknown\.$/],
    ['PUT', `${B}/servers/999.0.0.1:80`, {}, 400, 'FormatError', /server name/],
    ['PUT', `${B}/servers/host:99999`, {}, 400, 'FormatError', /server name/],
    ['PUT', `${B}/servers/[::g]:80`, {}, 400, 'FormatError', /server name/],
    ['PUT', B, { servers: {}, keepalive: 3 }, 400, 'FormatError', /^The "keepalive" field is unknown\.$/],
    ['PUT', P1, '{"weight": ', 400, 'JsonError', /not valid JSON/],
    ['PUT', P1, Buffer.from([0x7b, 0xff, 0x7d]), 400, 'JsonError', /UTF-8/],
    ['PUT', P1, Buffer.alloc(0), 400, 'JsonError', /no JSON body/],
    ['PUT', P1, Buffer.alloc(64 * 1024 + 1, 0x20), 413, 'TooLarge', /larger than 65536 bytes/],
    ['PUT', `${B}/servers/127.0.0.1:7777/weight`, 3, 404, 'PathNotFound', /doesn't exist/],
    ['PATCH', `${B}/servers/127.0.0.1:7777/weight`, 3, 404, 'PathNotFound', /doesn't exist/],
    ['DELETE', `${B}/servers/127.0.0.1:7777/weight`, undefined, 404, 'PathNotFound', /doesn't exist/],
    ['PUT', '/config/http/upstreams/nope/servers/127.0.0.1:1', {}, 404, 'PathNotFound', /doesn't exist/],
  ];
  for (const [method, path, body, code, error, description] of cases) {
    const r = call(method, path, body);
    t.equal(r.status, code, `${method} ${path} ${JSON.stringify(body)}`);
    t.equal(r.body.error, error);
    t.match(r.body.description, description);
  }
  t.equal(JSON.stringify(get('/config/')), before, 'nothing changed');
  // backup is settable when a server is created, where the method supports it
  t.equal(call('PUT', `${B}/servers/127.0.0.1:8099`, { backup: true }).status, 201);
  t.equal(get(`${B}/servers/127.0.0.1:8099/backup`), true);
  t.equal(call('PATCH', `${B}/servers/127.0.0.1:8099`, { backup: true, weight: 2 }).status, 200, 'an unchanged backup is no change');
});

t.test('/status follows /config at once', async (t) => {
  const { status, call, get } = setup(t);
  const p = peer(status, 'http', 'backend', '127.0.0.1:8082');
  p.selected();
  p.responded(200, 10, 20, 1, 2);
  p.released();
  const peers = () => get('/status/http/upstreams/backend/peers');
  t.equal(peers()['127.0.0.1:8082'].selected.total, 1);
  call('PUT', `${B}/servers/127.0.0.1:8090`, { weight: 3, max_conns: 5 });
  const added = peers()['127.0.0.1:8090'];
  t.equal(added.weight, 3);
  t.equal(added.max_conns, 5);
  t.equal(added.state, 'up');
  t.equal(added.selected.total, 0, 'a new peer starts at zero');
  call('PATCH', `${B}/servers/127.0.0.1:8090`, { down: true });
  t.equal(peers()['127.0.0.1:8090'].state, 'down', 'down: true shows state down');
  t.equal(get('/status/http/upstreams/backend/peers/127.0.0.1:8082/selected/total'), 1, 'other peers keep their counters');
  call('DELETE', `${B}/servers/127.0.0.1:8082`);
  t.notOk('127.0.0.1:8082' in peers(), 'a removed peer disappears');
  call('PUT', `${B}/servers/127.0.0.1:8082`, {});
  t.equal(peers()['127.0.0.1:8082'].selected.total, 0, 'added again, it starts from zero');
  const text = call('GET', '/status/http/upstreams/', undefined, 'format=prometheus').text;
  t.match(text, /zonal_http_upstreams_peers_state\{upstream="backend",peer="127.0.0.1:8090"\} 2/, 'and the text format too');
});

t.test('507 OutOfMemory when the zone has no room, shown in the slab statistics', async (t) => {
  const { call, get } = setup(t, { http: { upstreams: [{ name: 'small', zoneSize: 64 * 1024, peers: [{ server: '127.0.0.1:1' }] }] } }, 2);
  const failsBefore = Object.values(get('/status/slabs/small').slots as Record<string, { fails: number }>).reduce((a, s) => a + s.fails, 0);
  let answer: { status: number; body: Any } | undefined;
  let added = 0;
  for (let i = 0; i < 200; i++) {
    answer = call('PUT', `/config/http/upstreams/small/servers/127.0.0.2:${1000 + i}`, {});
    if (answer.status !== 201) break;
    added++;
  }
  t.ok(added > 0, `${added} peers fitted`);
  t.equal(answer!.status, 507);
  t.equal(answer!.body.error, 'OutOfMemory');
  const failsAfter = Object.values(get('/status/slabs/small').slots as Record<string, { fails: number }>).reduce((a, s) => a + s.fails, 0);
  const pagesFree = get('/status/slabs/small/pages/free');
  t.ok(failsAfter > failsBefore || pagesFree === 0, 'the failed allocation shows in /status/slabs');
  t.equal(Object.keys(get('/config/http/upstreams/small/servers')).length, added + 1, 'the set is as before the failed request');
  t.equal(call('PATCH', '/config/http/upstreams/small/servers/127.0.0.1:1', { weight: 2 }).status, 200, 'changes that need no memory still work');
});

t.test('state file: written atomically after each change, read at start', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-state-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const state = join(dir, 'backend.state');
  const config: StatusConfig = { http: { upstreams: [{ name: 'backend', state, peers: [{ server: '127.0.0.1:8081' }] }] } };
  {
    const { status, call } = setup(t, config);
    call('PUT', `${B}/servers/127.0.0.1:8090`, { weight: 3, fail_timeout: '30s', slow_start: '1500ms', down: true });
    call('PATCH', `${B}/servers/127.0.0.1:8081`, { sid: 'one', max_fails: 0 });
    t.equal(readFileSync(state, 'utf8'), 'server 127.0.0.1:8081 max_fails=0 sid=one;\nserver 127.0.0.1:8090 weight=3 fail_timeout=30s slow_start=1500ms down;\n');
    status.remove();
  }
  const restarted = setup(t, config);
  const kept = {
    '127.0.0.1:8081': { max_fails: 0, sid: 'one' },
    '127.0.0.1:8090': { weight: 3, fail_timeout: 30, slow_start: 1.5, down: true },
  };
  t.same(restarted.get(`${B}/servers`), kept, 'a restart takes the state file over the configured servers');
  restarted.status.reload(config);
  t.same(restarted.get(`${B}/servers`), kept, 'and so does a reload');
  t.same(parseStateFile(stateFileText([{ server: '10.0.0.1', backup: true, maxConns: 4 }, { server: 'localhost:81', name: '127.0.0.1:81' }])), [
    { server: '10.0.0.1', name: '10.0.0.1:80', maxConns: 4, backup: true },
    { server: 'localhost:81', name: '127.0.0.1:81' },
  ], 'a state file is read with the forms and keys of the configuration file');
  t.throws(() => parseStateFile('server http@10.0.0.1:80;\n', 's'), /s:1: .*needs a resolver/, 'a service needs a resolver there too');
  t.throws(() => parseStateFile('server backend.local:80;\n', 's'), /s:1: .*needs a resolver/);
  t.throws(() => parseStateFile('server 10.0.0.1 colour=red;\n', 's'), /s:1: unknown parameter "colour=red"/);
  writeFileSync(state, 'upstream x;\n');
  t.throws(() => Status.create(config, { workers: 1, instance: uniqueName('badstate') }), /expected "server/);
});

t.test('a writer in one process, readers in two others: never a torn set', async (t) => {
  // Each cycle of sets adds four peers anew (removed ones keep their memory a while).
  const { status } = setup(t, { http: { upstreams: [{ name: 'u', zoneSize: 8 << 20, peers: [{ server: '127.0.0.1:9000' }] }] } }, 4);
  const env = { [INSTANCE_ENV]: status.zone.instance };
  const readers = [start('config-worker.mjs', ['read', '1500'], env), start('config-worker.mjs', ['read', '1500'], env)];
  const writer = start('config-worker.mjs', ['write', '1000'], env);
  t.equal(await writer.line(/done|Error/, 20000), 'done', 'the writer published 1,000 sets');
  for (const r of readers) {
    const line = await r.line(/^(ok|torn)/, 20000);
    t.match(line, /^ok \d+ \d+$/, `reader: ${line}`);
    t.ok(Number(line.split(' ')[2]) > 1, 'the reader saw the set change');
  }
});

t.test('a worker SIGKILLed mid-update leaves the old or the new set, and the others go on', async (t) => {
  const { status, call, get } = setup(t, { http: { upstreams: [{ name: 'u', peers: [{ server: '127.0.0.1:9000' }] }] } }, 4);
  const env = { [INSTANCE_ENV]: status.zone.instance };
  const path = '/config/http/upstreams/u/servers/127.0.0.1:9000';
  let killed = 0;
  for (let writes = 1; writes <= 40; writes++) {
    call('DELETE', `${path}/weight`);
    const child = start('config-worker.mjs', ['stall', String(writes)], env);
    const outcome = await Promise.race([child.stderrLine(/stalled/).then(() => 'stalled'), child.line(/completed/).then(() => 'completed')]);
    if (outcome === 'completed') {
      await child.exit();
      t.equal(get(`${path}/weight`), 5, 'an update that completes is seen');
      break;
    }
    child.proc.kill('SIGKILL');
    await child.exit();
    killed++;
    const weight = get(`${path}/weight`); // takes the mutex if a reader must: recovers
    if (weight !== 1 && weight !== 5) t.fail(`killed after ${writes} writes: weight ${weight}`);
    t.equal(status.zoneNamed('u').check(), '', `killed after ${writes} writes: the zone is consistent`);
    t.equal(call('PATCH', path, { max_fails: writes }).status, 200, 'the next update goes through');
  }
  t.ok(killed > 0, `${killed} updates killed at each of their writes`);
});

t.test('10,000 generated bad requests: each a 4xx JSON error, nothing changes', async (t) => {
  const { call, get } = setup(t);
  let seed = 42;
  const rand = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  const pick = <T>(xs: readonly T[]): T => xs[rand(xs.length)];
  const names = ['weight', 'max_conns', 'max_fails', 'fail_timeout', 'slow_start', 'backup', 'down', 'sid', 'color', '', '__proto__', 'constructor'];
  // Values no parameter takes (strings are bad values except for sid, which gets others).
  const badValues: unknown[] = [-1, 0.0001, 2 ** 53, 1e308, -0.1, 'ten', '10x', '-5s', '', [], { a: 1 }, 'x'.repeat(300), '1.5s', [[[]]]];
  const badFor = (name: string): unknown => {
    const v = pick(badValues);
    return name === 'sid' && typeof v === 'string' && v.length <= 255 ? 5 : v;
  };
  const member = () => {
    const name = pick(names);
    return [name, badFor(name)] as const;
  };
  const paths = [P1, `${B}/servers`, B, `${P1}/weight`, `${P1}/fail_timeout`, `${B}/servers/..`, `${B}/servers/%2e%2e`, `${B}//servers`,
    '/config/http/upstreams/backend/servers/%2E%2E/x', `${B}/servers/a b`, `${B}/servers/1.2.3.4:0`, `${P1}/sid/x`, '/config/%zz'];
  const body = (): unknown => {
    switch (rand(9)) {
      case 0: return Buffer.from([0xff, ...Array.from({ length: rand(40) }, () => rand(256))]); // never UTF-8
      case 1: return '['.repeat(rand(5000) + 1);
      case 2: return '{"weight":' + '9'.repeat(rand(400) + 11) + '}';
      case 3: return Buffer.alloc(64 * 1024 + 1 + rand(1000), 0x7b);
      case 4: return Object.fromEntries([member(), member()]);
      case 5: return { servers: { [pick(['bad name', '999.1.1.1', 'x:0', '[1::2::3]'])]: {} } };
      case 6: return { servers: { '127.0.0.1:8081': Object.fromEntries([member()]) } };
      case 7: return JSON.stringify({ weight: 1 }).slice(0, rand(10));
      default: return pick(badValues);
    }
  };
  const before = JSON.stringify(get('/config/'));
  let ok = 0;
  const wrong: string[] = [];
  for (let i = 0; i < 10000; i++) {
    const method = pick(['PUT', 'PATCH', 'POST', 'DELETE']);
    let path = pick(paths);
    // DELETE has no bad body: send it to paths that do not exist or are read-only.
    if (method === 'DELETE') path = pick([`${B}/servers/..`, `${P1}/color`, '/config/http', `${B}/servers/10.9.9.9:1`, '/config/%zz']);
    let r: { status: number; body: Any };
    try {
      r = call(method, path, method === 'DELETE' ? undefined : body());
    } catch (e) {
      wrong.push(`${method} ${path}: threw ${(e as Error).message}`);
      continue;
    }
    if (r.status >= 400 && r.status < 500 && typeof r.body?.error === 'string' && typeof r.body?.description === 'string') ok++;
    else if (wrong.length < 8) wrong.push(`${method} ${path}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
  }
  t.same(wrong, [], 'no request was accepted or crashed the handler');
  t.equal(ok, 10000, 'every answer is a 4xx JSON error');
  t.equal(JSON.stringify(get('/config/')), before, 'the configuration is unchanged');
});
