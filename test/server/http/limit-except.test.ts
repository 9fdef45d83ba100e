// `limit_except` (ngx_http_core_module) and `include` in every block, from nginx's
// documentation: "Limits allowed HTTP methods inside a location... Allowing the GET method
// makes the HEAD method also allowed. Access to other methods can be limited using the
// ngx_http_access_module [and] ngx_http_auth_basic_module directives"; and `include`
// "Context: any".
import t from 'tap';
import { checkConfig, freePorts, getJson, Zonal } from '../zonal.js';

const [port, admin] = await freePorts(2);

const conf = `events {}
http {
  upstream u { include ups.conf; }
  server {
    listen 127.0.0.1:${port};
    if ($arg_s) { include sif.conf; }
    location / { if ($arg_l) { include lif.conf; } return 200 "root\\n"; }
    location /lmt { limit_except GET { include lmt.conf; } return 200 "lmt\\n"; }
    location /auth {
      deny 127.0.0.2;
      limit_except GET POST { auth_basic "writers"; auth_basic_user_file users; }
      return 200 "auth\\n";
    }
    location /inherit { deny all; limit_except GET { } return 200 "inherit\\n"; }
    location /proxy { add_header X-IP $upstream_addr always; proxy_pass http://u/backend; }
    location /backend { return 200 "backend\\n"; }
  }
  server {
    listen 127.0.0.1:${admin} admin;
    location /api/ { limit_except GET { deny all; } api /; }
  }
}
`;

const zonal = await Zonal.start({
  'zonal.conf': conf,
  'sif.conf': 'return 200 SIF;',
  'lif.conf': 'return 200 LIF;',
  'lmt.conf': 'deny all;',
  'ups.conf': `server 127.0.0.1:${port};`,
  users: 'writer:{PLAIN}secret\n',
});
t.teardown(() => zonal.stop());

const request = async (method: string, path: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers });
  return { status: res.status, body: await res.text(), headers: res.headers };
};

t.test('include in a server if, a location if, limit_except and an upstream', async (t) => {
  t.equal((await request('GET', '/?s=1')).body, 'SIF');
  t.equal((await request('GET', '/?l=1')).body, 'LIF');
  t.equal((await request('POST', '/lmt')).status, 403, 'the included deny applies to POST');
  const proxied = await request('GET', '/proxy');
  t.equal(proxied.body, 'backend\n');
  t.equal(proxied.headers.get('x-ip'), `127.0.0.1:${port}`, 'the included server is the upstream peer');
  t.equal((await request('GET', '/')).body, 'root\n', 'without the conditions, no included return applies');
});

t.test('the listed methods pass as the location says; GET brings HEAD', async (t) => {
  t.equal((await request('GET', '/lmt')).status, 200);
  t.equal((await request('HEAD', '/lmt')).status, 200);
  for (const method of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) t.equal((await request(method, '/lmt')).status, 403, `${method} is denied by the block`);
});

t.test("the others are checked against the block's auth_basic, with its realm", async (t) => {
  t.equal((await request('GET', '/auth')).status, 200);
  t.equal((await request('POST', '/auth')).status, 200, 'POST is listed');
  const refused = await request('DELETE', '/auth');
  t.equal(refused.status, 401);
  t.equal(refused.headers.get('www-authenticate'), 'Basic realm="writers"');
  const basic = `Basic ${Buffer.from('writer:secret').toString('base64')}`;
  t.equal((await request('DELETE', '/auth', { Authorization: basic })).status, 200, 'with the credentials');
});

t.test("a block without rules of its own keeps its location's", async (t) => {
  t.equal((await request('GET', '/inherit')).status, 403, 'GET: the location denies all');
  t.equal((await request('POST', '/inherit')).status, 403, "POST: the block inherits the location's deny");
});

t.test('on an admin listener, limit_except GET makes the API read-only', async (t) => {
  t.equal((await getJson(`http://127.0.0.1:${admin}/api/status/connections`)).status, 200);
  const write = await getJson(`http://127.0.0.1:${admin}/api/config/http/upstreams/u/servers/x`, { method: 'DELETE' });
  t.equal(write.status, 403);
  t.equal(write.body.error, 'Forbidden');
});

t.test('-t refuses what nginx refuses', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['limit_except FOO { deny all; }', /invalid method "FOO"/],
    ['limit_except GET { deny all; } limit_except POST { deny all; }', /"limit_except" directive is duplicate/],
    ['limit_except GET { return 200; }', /"return" directive is not allowed here/],
    ['limit_except GET;', /directive "limit_except" has no opening "\{"/],
  ];
  for (const [line, message] of cases) {
    const r = await checkConfig(`events {} http { server { listen 127.0.0.1:${port}; location / { ${line} } } }`);
    t.equal(r.code, 1, line);
    t.match(r.err, message, line);
  }
  const inServer = await checkConfig(`events {} http { server { listen 127.0.0.1:${port}; limit_except GET { deny all; } } }`);
  t.match(inServer.err, /"limit_except" directive is not allowed here/);
});
