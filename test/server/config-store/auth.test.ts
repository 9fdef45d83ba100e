// config_store with etcd's password auth (issue 34: `user=`, `password_file=`): a real
// etcd member with auth enabled; an instance with the right password connects, seeds
// and writes; one with a wrong password does not, and says why.
import t from 'tap';
import { EtcdCluster } from '../../helpers/etcd.js';
import { freePorts, getJson, Zonal } from '../zonal.js';
import { until } from './fleet.js';

const etcd = await EtcdCluster.start(1);
t.teardown(() => etcd.close());
const b64 = (s: string) => Buffer.from(s).toString('base64');
// Auth on, as an operator sets it up (etcdctl role add / user add / user grant-role /
// auth enable), through the member's gateway.
for (const [path, body] of [
  ['/v3/auth/role/add', { name: 'root' }],
  ['/v3/auth/user/add', { name: 'root', password: 'sesame' }],
  ['/v3/auth/user/grant', { user: 'root', role: 'root' }],
  ['/v3/auth/enable', {}],
] as const)
  if (!(await etcd.call(0, path, body))) throw new Error(`etcd refused ${path}`);

t.test('etcd refuses a client without a token', async (t) => {
  t.notOk(await etcd.call(0, '/v3/kv/put', { key: b64('/x'), value: b64('1') }));
});

const conf = (admin: number, password: string) => ({
  'zonal.conf': `config_store etcd://${etcd.endpoints}/auth user=root password_file=password timeout=1s cache=c.json;
http { upstream u { zone u 64k; server 127.0.0.1:1; } server { listen 127.0.0.1:${admin} admin; location / { api /; } } }\n`,
  password: `${password}\n`,
});

t.test('the right password: connected, seeded, writes', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start(conf(admin, 'sesame'));
  t.teardown(() => z.stop());
  t.ok((await until(async () => (await getJson(`http://127.0.0.1:${admin}/status/config_store`)).body.connected === true, 5000)) >= 0, 'connected');
  const w = await fetch(`http://127.0.0.1:${admin}/config/http/upstreams/u/servers/127.0.0.1:2`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(w.status, 201, 'a write is committed');
  t.match(w.headers.get('etag'), /^"r\d+"$/);
});

t.test('a wrong password: not connected, and the error says so', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start(conf(admin, 'open says me'));
  t.teardown(() => z.stop());
  const status = (await getJson(`http://127.0.0.1:${admin}/status/config_store`)).body;
  t.equal(status.connected, false);
  t.match(status.last_error?.message, /authentication failed/i, `the error: ${status.last_error?.message}`);
  const w = await fetch(`http://127.0.0.1:${admin}/config/http/upstreams/u/servers/127.0.0.1:3`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(w.status, 503, 'a write is refused');
});
