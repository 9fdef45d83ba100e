// How the redirects zonal makes write their Location, from nginx's documentation of
// absolute_redirect, server_name_in_redirect and port_in_redirect (ngx_http_core_module):
// a directory's redirect, a location's auto redirect (a prefix location that proxies) and
// a `return` to a path are absolute by default, from the Host header and the local port;
// `absolute_redirect off` leaves the path alone; `server_name_in_redirect on` takes the
// server's first name; `port_in_redirect off` drops the port. Each inherits on its own.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../../zonal.js';
import { exchange } from '../raw.js';
import { loadConfig } from '../../../../src/server/config/load.js';

const [port] = await freePorts(1);
const docs = mkdtempSync(join(tmpdir(), 'zonal-redirects-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
mkdirSync(join(docs, 'dir'));

/** The same locations in each server, as nginx's own test writes them. */
const locations = `
        root ${docs};
        location / { }
        location /auto/ { proxy_pass http://127.0.0.1:${port}; }
        location /return301 { return 301 /redirect; }
        location /return302 { return 302 /to?$args; }
        location /url { return 301 http://elsewhere.example/x; }
        location /i/ { alias ${docs}/; }`;

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    absolute_redirect off;
    server { listen 127.0.0.1:${port}; server_name on; absolute_redirect on; ${locations} }
    server { listen 127.0.0.1:${port}; server_name off; ${locations} }
    server {
        listen 127.0.0.1:${port}; server_name named.example alias.example;
        absolute_redirect on; server_name_in_redirect on; ${locations}
        location /noport/ { port_in_redirect off; location /noport/dir { alias ${docs}/dir; } }
    }
}
`,
});
t.teardown(() => z.stop());

/** The Location of an HTTP/1.0 request's answer to `host`. */
async function location(host: string, uri: string): Promise<string | undefined> {
  const r = await exchange(port, `GET ${uri} HTTP/1.0\r\nHost: ${host}\r\n\r\n`);
  return /^Location: (.*)$/m.exec(r.text)?.[1]?.trim();
}

t.test('absolute_redirect on: the scheme, the Host and the port, then the path', async (t) => {
  t.equal(await location('on', '/dir'), `http://on:${port}/dir/`, 'directory');
  t.equal(await location('on', '/i/dir'), `http://on:${port}/i/dir/`, 'directory through alias');
  t.equal(await location('on', '/auto'), `http://on:${port}/auto/`, "a location's auto redirect");
  t.equal(await location('on', '/auto?a=b'), `http://on:${port}/auto/?a=b`, 'with its arguments');
  t.equal(await location('on', '/return301'), `http://on:${port}/redirect`, 'return to a path');
  t.equal(await location('on', '/return302?k=v'), `http://on:${port}/to?k=v`, 'return to a path with variables');
  t.equal(await location('on', '/url'), 'http://elsewhere.example/x', 'a URL stays as written');
});

t.test('absolute_redirect off (inherited from http): the path alone', async (t) => {
  t.equal(await location('off', '/dir'), '/dir/');
  t.equal(await location('off', '/i/dir'), '/i/dir/');
  t.equal(await location('off', '/auto'), '/auto/');
  t.equal(await location('off', '/auto?a=b'), '/auto/?a=b');
  t.equal(await location('off', '/return301'), '/redirect');
});

t.test("server_name_in_redirect on: the server's first name; port_in_redirect off: no port", async (t) => {
  t.equal(await location('alias.example', '/dir'), `http://named.example:${port}/dir/`);
  t.equal(await location('alias.example', '/return301'), `http://named.example:${port}/redirect`);
  t.equal(await location('alias.example', '/noport/dir'), 'http://named.example/noport/dir/', 'inherited by a nested location');
});

t.test('the three refuse what is not on or off', async (t) => {
  for (const name of ['absolute_redirect', 'server_name_in_redirect', 'port_in_redirect']) {
    const { config, errors } = loadConfig('/conf/zonal.conf', { files: { '/conf/zonal.conf': `http {\n  ${name} yes;\n}\n` } });
    t.equal(config, undefined);
    t.match(errors, [{ line: 2, message: `invalid value "yes" in "${name}" directive, it must be "on" or "off"` }], name);
  }
});
