// Where the spec is silent (issue 35 item 6), what bin/zonal answers, as the README says:
// the root's members in Angie's order, `data` as received then sent (zones and peers
// alike), every slab slot size listed from 8 bytes to half a page, and a write to a
// parameter path of a server that does not exist is 404 and changes nothing.
import { createServer } from 'node:http';
import t from 'tap';
import { eventually, freePorts, getJson, Zonal } from './zonal.js';

t.test("spec's silences: root order, data order, slab slots, a missing server's parameter", async (t) => {
  const [backendPort, site, admin, dnsPort] = await freePorts(4);
  const backend = createServer((_req, res) => res.end('ok'));
  await new Promise<void>((r) => backend.listen(backendPort, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => backend.close(r)));
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    resolver 127.0.0.1:${dnsPort} status_zone=dns;
    limit_req_zone $binary_remote_addr zone=perip:1m rate=100r/s;
    upstream backend {
        zone backend;
        server 127.0.0.1:${backendPort};
    }
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location / { limit_req zone=perip burst=100; proxy_pass http://backend; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  for (let i = 0; i < 3; i++) await (await fetch(`http://127.0.0.1:${site}/`)).text();
  const api = (path: string, init?: RequestInit) => getJson(`http://127.0.0.1:${admin}${path}`, init);
  t.ok(await eventually(async () => (await api('/status/http/server_zones/site/requests')).body.total === 3, 5000), 'the traffic is counted');

  const root = (await api('/status/')).body;
  t.same(Object.keys(root), ['server', 'connections', 'slabs', 'resolvers', 'http', 'stream'].filter((k) => k in root), "the root's members in Angie's order");
  t.same(Object.keys(root).slice(0, 5), ['server', 'connections', 'slabs', 'resolvers', 'http'], 'resolvers before http');
  t.same(Object.keys(root.http.server_zones.site.data), ['received', 'sent'], 'a zone: received, then sent');
  const peer = Object.values(root.http.upstreams.backend.peers)[0] as { data: object };
  t.same(Object.keys(peer.data), ['received', 'sent'], 'a peer: received, then sent, as zones (Angie writes sent first there)');

  const slots = (await api('/status/slabs/perip/slots')).body;
  const half = 4096 / 2;
  const sizes: string[] = [];
  for (let size = 8; size <= half; size *= 2) sizes.push(String(size));
  t.same(Object.keys(slots), sizes, `every slot size from 8 to half a page (${sizes.length}), used or not`);
  t.ok(Object.values(slots as Record<string, { reqs: number }>).some((s) => s.reqs === 0), 'sizes never allocated are listed too');

  const servers = '/config/http/upstreams/backend/servers';
  const before = (await api(servers)).body;
  for (const [method, body] of [
    ['PUT', '2'],
    ['PATCH', '2'],
    ['DELETE', undefined],
  ] as const) {
    const r = await api(`${servers}/127.0.0.1:9/weight`, { method, ...(body ? { headers: { 'Content-Type': 'application/json' }, body } : {}) });
    t.equal(r.status, 404, `${method} to a parameter of a server that does not exist`);
    t.match(r.body, { error: 'PathNotFound', description: /127\.0\.0\.1:9\/weight/ });
  }
  t.same((await api(servers)).body, before, 'nothing changed');
  const created = await api(`${servers}/127.0.0.1:9`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{"weight": 2}' });
  t.equal(created.status, 201, 'the server is created at its own path');
  t.equal((await api(`${servers}/127.0.0.1:9/weight`)).body, 2, 'and then its parameter path exists');
});
