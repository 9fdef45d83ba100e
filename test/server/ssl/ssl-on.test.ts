// nginx 1.22's `ssl on` (deprecated, ngx_http_ssl_module): in a server, every listen of
// it is TLS as if it said `ssl`; in the http block, every server's. Without a
// certificate it is refused as nginx refuses it. Real bin/zonal, node:tls clients.
import t from 'tap';
import { checkConfig, freePorts, Zonal } from '../zonal.js';
import { certificates } from './certs.js';
import { get } from './client.js';

const certs = certificates();
const [server, other, plain] = await freePorts(3);

t.test('ssl on in a server: its listens are TLS, the others stay plain', async (t) => {
  const z = await Zonal.start({
    'zonal.conf': `
http {
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    server {
        listen 127.0.0.1:${server};
        listen 127.0.0.1:${other};
        ssl on;
        location / { return 200 "tls $https\\n"; }
    }
    server {
        listen 127.0.0.1:${plain};
        location / { return 200 "plain $https\\n"; }
    }
}
`,
    ...certs,
  });
  t.teardown(() => z.stop());
  for (const port of [server, other]) {
    const a = await get({ port });
    t.equal(a.status, 200);
    t.equal(a.body, 'tls on\n', `${port} speaks TLS`);
  }
  t.equal(await (await fetch(`http://127.0.0.1:${plain}/`)).text(), 'plain \n');
});

t.test('ssl on in the http block: every server; ssl off in one keeps it plain', async (t) => {
  const z = await Zonal.start({
    'zonal.conf': `
http {
    ssl on;
    ssl_certificate server.crt;
    ssl_certificate_key server.key;
    server {
        listen 127.0.0.1:${server};
        location / { return 200 "tls $https\\n"; }
    }
    server {
        listen 127.0.0.1:${plain};
        ssl off;
        location / { return 200 "plain $https\\n"; }
    }
}
`,
    ...certs,
  });
  t.teardown(() => z.stop());
  t.equal((await get({ port: server })).body, 'tls on\n');
  t.equal(await (await fetch(`http://127.0.0.1:${plain}/`)).text(), 'plain \n');
});

t.test('-t refuses ssl on without a certificate, and a value other than on or off', async (t) => {
  const noCert = await checkConfig(`http {\n  server {\n    listen 127.0.0.1:1;\n    ssl on;\n  }\n}\n`);
  t.not(noCert.code, 0);
  t.match(noCert.err, /no "ssl_certificate" is defined for the "ssl" directive/);
  const bad = await checkConfig(`http {\n  server {\n    listen 127.0.0.1:1;\n    ssl yes;\n  }\n}\n`);
  t.not(bad.code, 0);
  t.match(bad.err, /invalid value "yes" in "ssl" directive, it must be "on" or "off"/);
});
