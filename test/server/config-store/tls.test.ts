// config_store over TLS (issue 34: `ca=`, `cert=`, `key=`): a real etcd member that
// speaks only TLS and asks for a client certificate of a test authority (made with
// openssl). With the authority and the client certificate the instance connects, seeds
// and writes; without the client certificate etcd refuses it, and the status says so.
import t from 'tap';
import { EtcdCluster } from '../../helpers/etcd.js';
import { freePorts, getJson, Zonal } from '../zonal.js';
import { until } from './fleet.js';

const etcd = await EtcdCluster.start(1, { tls: true });
t.teardown(() => etcd.close());
const tls = etcd.tls!;

const conf = (admin: number, params: string) => ({
  'zonal.conf': `config_store etcd://${etcd.endpoints}/tls ${params} timeout=1s cache=c.json;
http { upstream u { zone u 64k; server 127.0.0.1:1; } server { listen 127.0.0.1:${admin} admin; location / { api /; } } }\n`,
});

t.test('the authority and a client certificate: connected, seeded, writes', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start(conf(admin, `ca=${tls.ca} cert=${tls.clientCert} key=${tls.clientKey}`));
  t.teardown(() => z.stop());
  t.ok((await until(async () => (await getJson(`http://127.0.0.1:${admin}/status/config_store`)).body.connected === true, 5000)) >= 0, 'connected');
  const w = await fetch(`http://127.0.0.1:${admin}/config/http/upstreams/u/servers/127.0.0.1:2`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(w.status, 201, 'a write is committed');
  t.same((await etcd.get('/tls/http/upstreams/u'))?.value, { servers: { '127.0.0.1:1': {}, '127.0.0.1:2': {} } }, 'etcd has it');
});

t.test('no client certificate: etcd refuses the connection', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start(conf(admin, `ca=${tls.ca}`));
  t.teardown(() => z.stop());
  const status = (await getJson(`http://127.0.0.1:${admin}/status/config_store`)).body;
  t.equal(status.connected, false, 'not connected');
  t.ok(status.last_error, `the error: ${status.last_error?.message}`);
});
