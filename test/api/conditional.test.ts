// /config writes that a browser cannot forge and operators cannot lose: a JSON
// Content-Type or 415, entity tags on every read, If-Match / If-None-Match checked inside
// the write's compare-and-swap, and the audit hook told of every write.
import t from 'tap';
import { bodyText, createApi, type ApiRequest, type ConfigChange } from '../../src/api/index.js';
import type { StatusConfig } from '../../src/metrics/catalog.js';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

const CONFIG: StatusConfig = {
  http: {
    upstreams: [
      { name: 'backend', peers: [{ server: '127.0.0.1:8081', weight: 2 }, { server: '127.0.0.1:8082' }] },
      { name: 'other', peers: [{ server: '127.0.0.1:8091' }] },
    ],
  },
};
const B = '/config/http/upstreams/backend';
const P1 = `${B}/servers/127.0.0.1:8081`;
const P2 = `${B}/servers/127.0.0.1:8082`;

function setup(t: { teardown(fn: () => void): void }) {
  const status = Status.create(CONFIG, { workers: 1, writer: true, instance: uniqueName('conditional') });
  t.teardown(() => status.remove());
  const changes: Array<{ change: ConfigChange; request: ApiRequest }> = [];
  const api = createApi({ status, onConfigChange: (change, request) => changes.push({ change, request }) });
  const call = (method: string, path: string, more: Partial<ApiRequest> & { json?: unknown } = {}) => {
    const { json, ...rest } = more;
    const body = json === undefined ? rest.body : Buffer.from(JSON.stringify(json));
    const r = api({ method, path, query: '', address: '127.0.0.1', ...(json !== undefined ? { contentType: 'application/json' } : {}), ...rest, ...(body ? { body } : {}) })!;
    const text = bodyText(r);
    return { status: r.status, headers: r.headers, body: text ? (JSON.parse(text) as Any) : undefined };
  };
  return { status, call, changes };
}

t.test('a write must declare a JSON body: 415 otherwise, and nothing changes', async (t) => {
  const { call } = setup(t);
  const before = call('GET', '/config/').body;
  const body = Buffer.from('{"weight":7}');
  for (const [method, contentType] of [
    ['PUT', undefined],
    ['PUT', 'text/plain'],
    ['PUT', 'application/x-www-form-urlencoded'],
    ['PUT', 'multipart/form-data; boundary=x'],
    ['PUT', 'application/merge-patch+json'],
    ['PATCH', 'text/plain;charset=UTF-8'],
    ['PATCH', 'application/jsonx'],
  ] as const) {
    const r = call(method, P1, { body, ...(contentType ? { contentType } : {}) });
    t.equal(r.status, 415, `${method} with ${contentType ?? 'no Content-Type'}`);
    t.equal(r.body.error, 'UnsupportedMediaType');
    if (method === 'PATCH') t.equal(r.headers['Accept-Patch'], 'application/json, application/merge-patch+json', 'a PATCH refusal says what it takes');
  }
  t.same(call('GET', '/config/').body, before, 'nothing changed');
  t.equal(call('PUT', P1, { body, contentType: 'application/json; charset=utf-8' }).status, 200, 'JSON with a charset is JSON');
  t.equal(call('PATCH', P1, { body: Buffer.from('{"weight":3}'), contentType: 'Application/Merge-Patch+JSON' }).status, 200, 'a merge patch, any case');
  t.equal(call('GET', `${P1}/weight`).body, 3);
  t.equal(call('DELETE', `${P1}/weight`).status, 200, 'DELETE carries no body and needs no type');
});

t.test('every /config read has an ETag that moves with its entity and only with it', async (t) => {
  const { call } = setup(t);
  const paths = ['/config/', '/config/http', '/config/http/upstreams', B, `${B}/servers`, P1, `${P1}/weight`, P2];
  const tags = new Map(paths.map((p) => [p, call('GET', p).headers.ETag]));
  for (const [p, tag] of tags) t.match(tag, /^"[A-Za-z0-9_-]{22}"$/, `${p} has a strong tag`);
  t.equal(call('HEAD', P1).headers.ETag, tags.get(P1), 'HEAD gives the same tag');
  t.equal(call('GET', P1, { query: 'defaults=on' }).headers.ETag, tags.get(P1), 'defaults=on shows more, of the same entity');
  t.equal(new Set(tags.values()).size, tags.size, 'different entities, different tags');

  t.equal(call('PATCH', P2, { json: { max_fails: 5 } }).status, 200);
  const after = new Map(paths.map((p) => [p, call('GET', p).headers.ETag]));
  for (const p of ['/config/', '/config/http', '/config/http/upstreams', B, `${B}/servers`, P2]) t.not(after.get(p), tags.get(p), `${p}: changed below, a new tag`);
  for (const p of [P1, `${P1}/weight`]) t.equal(after.get(p), tags.get(p), `${p}: untouched, the same tag`);
  t.equal(call('GET', '/config/http/upstreams/other').headers.ETag, call('GET', '/config/http/upstreams/other').headers.ETag, 'stable between reads');
});

t.test('If-Match: applied when it matches, 412 and unchanged when it does not', async (t) => {
  const { call } = setup(t);
  const tag = call('GET', P1).headers.ETag;
  const stale = call('GET', P2).headers.ETag;
  for (const method of ['PUT', 'PATCH'] as const) {
    const r = call(method, P1, { json: { weight: 9 }, ifMatch: stale });
    t.equal(r.status, 412, `${method} with another entity's tag`);
    t.equal(r.body.error, 'PreconditionFailed');
  }
  t.equal(call('DELETE', P1, { ifMatch: stale }).status, 412, 'DELETE too');
  t.equal(call('PATCH', P1, { json: { weight: 9 }, ifMatch: 'W/' + tag }).status, 412, 'a weak tag never matches If-Match');
  t.equal(call('GET', P1).headers.ETag, tag, 'nothing changed');

  const ok = call('PATCH', P1, { json: { weight: 9 }, ifMatch: `"nope", ${tag}` });
  t.equal(ok.status, 200, 'one of the listed tags matches');
  t.equal(ok.headers.ETag, call('GET', P1).headers.ETag, "the answer carries the entity's new tag");
  t.not(ok.headers.ETag, tag);
  t.equal(call('PATCH', P1, { json: { weight: 10 }, ifMatch: ok.headers.ETag }).status, 200, 'and that tag serves the next write');
  t.equal(call('PATCH', `${B}/servers/127.0.0.1:9999`, { json: { weight: 1 }, ifMatch: '*' }).status, 412, 'If-Match: * needs the entity to exist');
  t.equal(call('PATCH', P1, { json: { weight: 11 }, ifMatch: '*' }).status, 200, 'and holds when it does');
  t.equal(call('GET', `${P1}/weight`).body, 11);
});

t.test('If-None-Match: * creates only what does not exist', async (t) => {
  const { call } = setup(t);
  const N = `${B}/servers/127.0.0.1:8083`;
  t.equal(call('PUT', N, { json: { weight: 4 }, ifNoneMatch: '*' }).status, 201, 'created');
  t.equal(call('PUT', N, { json: { weight: 5 }, ifNoneMatch: '*' }).status, 412, 'not replaced');
  t.equal(call('GET', `${N}/weight`).body, 4);
});

t.test('two operators read, then both write with If-Match: exactly one wins', async (t) => {
  const { call } = setup(t);
  for (const path of [P1, B, `${B}/servers`]) {
    const tag = call('GET', path).headers.ETag;
    const body = path === P1 ? { weight: 3 } : path === B ? { servers: { '127.0.0.1:8081': { weight: 4 } } } : { '127.0.0.1:8082': { weight: 5 } };
    const first = call('PATCH', path, { json: body, ifMatch: tag });
    const second = call('PATCH', path, { json: path === P1 ? { down: true } : body, ifMatch: tag });
    t.same([first.status, second.status], [200, 412], `${path}: the first write wins, the second is told`);
  }
  t.notOk(call('GET', P1).body.down, "the loser's change is not there");
});

t.test('the audit hook hears every write that reached the configuration, with its outcome', async (t) => {
  const { call, changes } = setup(t);
  call('GET', P1);
  call('PATCH', P1, { json: { weight: 5 }, remoteAddress: '127.0.0.9', user: 'ops' });
  call('PUT', P1, { body: Buffer.from('{"weight":'), contentType: 'application/json' });
  call('PUT', P1, { body: Buffer.from('{}'), contentType: 'text/plain' });
  call('DELETE', P2);
  call('PUT', `${B}/servers/127.0.0.1:8088`, { json: { weight: 1, sid: 'x'.repeat(300) } });
  t.same(
    changes.map((c) => [c.change.method, c.change.status]),
    [
      ['PATCH', 200],
      ['PUT', 400],
      ['PUT', 415],
      ['DELETE', 200],
      ['PUT', 400],
    ],
    'reads are not told; refusals are, with their status',
  );
  const [patch, bad] = changes;
  t.equal(patch.change.path, P1);
  t.equal(patch.change.value, '{"weight":5}');
  t.match(patch.change.description, /updated with merging/);
  t.equal(patch.request.remoteAddress, '127.0.0.9', 'the request is there for the address');
  t.equal(patch.request.user, 'ops', 'and the user');
  t.match(bad.change.description, /not valid JSON/, 'a refusal says why');
  t.equal(changes[3].change.value, undefined, 'DELETE has no value');
  t.ok(changes[4].change.value!.length <= 203 && changes[4].change.value!.endsWith('...'), 'a long value is cut short');
});
