// proxy_pass with variables whose host is a name no upstream has: the location's
// resolver (its own, else the server's or http's) looks it up, against dnsmasq, and the
// request goes to the addresses found, in turn (nginx's ngx_http_proxy_module: "the
// server name is searched among the described server groups, and, if not found, is
// determined using a resolver"). A name that does not resolve is a 502, logged in nginx's
// words; the answer is kept for its TTL.
import { createServer, type Server } from 'node:http';
import t from 'tap';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { startDnsmasq } from './dns-servers.js';

/** An HTTP backend on a loopback address that answers with that address and the Host it got. */
async function backend(host: string, port: number): Promise<Server> {
  const s = createServer((req, res) => res.end(JSON.stringify({ at: host, host: req.headers.host, url: req.url })));
  await new Promise<void>((r) => s.listen(port, host, r));
  return s;
}

t.test('a name in proxy_pass with variables is looked up by the location resolver', async (t) => {
  const [port, site, admin] = await freePorts(3);
  const backends = await Promise.all(['127.0.0.2', '127.0.0.3'].map((h) => backend(h, port)));
  t.teardown(() => Promise.all(backends.map((b) => new Promise((r) => b.close(r)))));
  const dns = await startDnsmasq({ hosts: '127.0.0.2 app.test\n127.0.0.3 app.test\n', ttl: 60 });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
http {
    resolver 127.0.0.1:${dns.port} ipv6=off status_zone=dns;
    resolver_timeout 2s;
    server {
        listen 127.0.0.1:${site};
        location /app/ {
            set $backend app.test:${port};
            proxy_pass http://$backend;
        }
        location /arg/ {
            proxy_pass http://$arg_host:${port}/there;
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${site}${path}`);
    return { status: res.status, text: await res.text() };
  };

  const seen = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const r = await get('/app/x?y=1');
    t.equal(r.status, 200);
    const body = JSON.parse(r.text);
    t.equal(body.host, `app.test:${port}`, 'Host is $proxy_host: the name and port of the URL');
    t.equal(body.url, '/app/x?y=1', 'without a URI part the request URI goes as it came');
    seen.add(body.at);
  }
  t.same([...seen].sort(), ['127.0.0.2', '127.0.0.3'], 'both addresses of the name serve, in turn');

  const r = await get('/arg/?host=APP.test');
  t.equal(r.status, 200);
  t.equal(JSON.parse(r.text).url, '/there', 'a name from the request, caseless, with a URI part');

  // One query per name while its answer lives (TTL 60 s): the zone counts the lookups.
  const zone = (await getJson(`http://127.0.0.1:${admin}/status/resolvers/dns`)).body;
  t.equal(zone.queries.name, 1, 'one lookup of app.test for all these requests (its answer is cached)');
  t.equal(zone.responses.success, 1);

  const missing = await get('/arg/?host=nowhere.test');
  t.equal(missing.status, 502, 'a name that does not resolve: 502');
  await zonal.waitLog(/nowhere\.test could not be resolved \(3: Host not found\)/, 5000);
  t.pass('logged as nginx logs it');
  t.ok(await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/status/resolvers/dns`)).body.responses.not_found === 1), 'counted as not found');
});

t.test('a resolver of the server serves its locations; one of none gives 502', async (t) => {
  const [port, site, other] = await freePorts(3);
  const b = await backend('127.0.0.2', port);
  t.teardown(() => new Promise((r) => b.close(r)));
  const dns = await startDnsmasq({ hosts: '127.0.0.2 svc.test\n', ttl: 1 });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
http {
    server {
        listen 127.0.0.1:${site};
        resolver 127.0.0.1:${dns.port} ipv6=off;
        location / { proxy_pass http://svc.test:${port}$request_uri; }
    }
    server {
        listen 127.0.0.1:${other};
        location / { proxy_pass http://svc.test:${port}$request_uri; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const ok = await fetch(`http://127.0.0.1:${site}/a`);
  t.equal(ok.status, 200, "the server's resolver");
  t.equal(JSON.parse(await ok.text()).at, '127.0.0.2');
  const none = await fetch(`http://127.0.0.1:${other}/a`);
  await none.text();
  t.equal(none.status, 502, 'no resolver: 502');
  await zonal.waitLog(/no resolver defined to resolve svc\.test/, 5000);
  t.pass('logged as nginx logs it');
});
