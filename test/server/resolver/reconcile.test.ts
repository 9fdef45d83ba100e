// How a name's answer changes the live set: kept peers keep what /config set on them,
// new ones take the server's parameters, addresses another server has stay its own, and
// an answer that changes nothing changes nothing.
import t from 'tap';
import { parseStateFile, stateFileText, type PeerEntry } from '../../../src/metrics/peers.js';
import { defaultPeer } from '../../../src/server/config/values.js';
import { reconcile, sourceOf, srvName } from '../../../src/server/resolver/peers.js';

const origin = { file: 'zonal.conf', line: 1 };
const params = { ...defaultPeer('app.test:80', { host: 'app.test', port: 80, address: 'app.test:80' }, origin), resolve: true, maxFails: 3 };
const server = sourceOf(params);

t.test('reconcile', async (t) => {
  const peers: PeerEntry[] = [
    { id: 0, server: '10.0.0.9:80' },
    { id: 1, server: 'app.test:80', name: '10.0.0.1:80', maxFails: 3, weight: 5 },
    { id: 2, server: 'app.test:80', name: '10.0.0.2:80', maxFails: 3 },
  ];
  t.same(
    reconcile(peers, server, [{ address: '10.0.0.1:80' }, { address: '10.0.0.3:80' }, { address: '10.0.0.9:80' }]),
    [
      { server: '10.0.0.9:80' },
      { server: 'app.test:80', name: '10.0.0.1:80', maxFails: 3, weight: 5 },
      { server: 'app.test:80', name: '10.0.0.3:80', maxFails: 3 },
    ],
    'one kept with its /config weight, one gone, one new with the parameters, the address written by hand left alone',
  );
  t.equal(reconcile(peers, server, [{ address: '10.0.0.2:80' }, { address: '10.0.0.1:80' }]), undefined, 'the same addresses: no update');
  t.same(reconcile(peers, server, []), [{ server: '10.0.0.9:80' }], 'no address: no peers of the name');
  const srv = sourceOf({ ...params, server: 'svc.test', host: 'svc.test', address: 'svc.test', port: 0, service: '_http._tcp' });
  t.same(
    reconcile([], srv, [{ address: '10.0.0.1:81', weight: 3, backup: false }, { address: '10.0.0.2:82', weight: 1, backup: true }]),
    [
      { server: 'svc.test', service: '_http._tcp', name: '10.0.0.1:81', maxFails: 3, weight: 3 },
      { server: 'svc.test', service: '_http._tcp', name: '10.0.0.2:82', maxFails: 3, backup: true },
    ],
    'SRV: weight and backup from the records',
  );
  t.equal(srvName(srv), '_http._tcp.svc.test');
  t.equal(srvName({ ...srv, service: 'http' }), '_http._tcp.svc.test', 'nginx short form');
});

t.test('a state file keeps the peers written by address: a name\'s come from the configuration', async (t) => {
  const text = stateFileText([
    { server: '10.0.0.9:80', weight: 2 },
    { server: 'localhost:81', name: '127.0.0.1:81' },
    { server: 'app.test:80', name: '10.0.0.1:80', maxFails: 3 },
    { server: 'svc.test', service: '_http._tcp', name: '10.0.0.2:82' },
  ]);
  t.equal(text, 'server 10.0.0.9:80 weight=2;\nserver localhost:81;\n');
  t.same(parseStateFile(text), [{ server: '10.0.0.9:80', weight: 2 }, { server: 'localhost:81', name: '127.0.0.1:81' }], 'and reads back');
});
