// An admin listener bound to 0.0.0.0 (uWebSockets.js, in the primary) reports the address
// each connection came to as `address`, as a data-plane API location (node:http) does,
// and its Host rule sees that address: `curl 127.0.0.1:<port>` is answered. The test
// binds the wildcard but connects only to loopback addresses.
import t from 'tap';
import { request } from 'node:http';
import { freePorts, Zonal } from './zonal.js';

const [site, admin] = await freePorts(2);
const zonal = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 0.0.0.0:${site};
        location /status/ { api /status/; }
    }
    server {
        listen 0.0.0.0:${admin} admin;
        location / { api /; }
    }
}
`,
});
t.teardown(() => zonal.stop());

/** GET with the Host a client sends for `ip`. */
function get(ip: string, port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: ip, port, path, agent: false, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.end();
  });
}

t.test('address on wildcard listeners: the local address of the connection, on both transports', async (t) => {
  for (const [name, port] of [['admin listener (uWS)', admin], ['API location (node:http)', site]] as const)
    for (const ip of ['127.0.0.1', '127.0.0.2', '127.0.0.3']) {
      const r = await get(ip, port, '/status/server/address');
      t.equal(r.status, 200, `${name}, to ${ip}: answered (its Host names the address it came to)`);
      t.equal(JSON.parse(r.body), ip, `${name}, to ${ip}: address`);
    }
  const root = await get('127.0.0.2', admin, '/status/');
  t.equal(JSON.parse(root.body).server.address, '127.0.0.2', 'in the whole tree too');
  t.equal((await get('127.0.0.2', admin, '/status/server?format=prometheus')).body, 'generation 0\n');
});
