// `types`, `default_type` and `include mime.types` (nginx's http core module): static
// files get the type of their extension; the temporary paths are made at start; and what
// `zonal -t` refuses of these directives.
import t from 'tap';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkConfig, freePorts, Zonal } from '../zonal.js';

const MIME_TYPES = '/etc/nginx/mime.types';
const [mime, bare, own] = await freePorts(3);

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    client_body_temp_path client_body_temp 1 2;
    proxy_temp_path proxy_temp;
    fastcgi_temp_path fastcgi_temp;
    uwsgi_temp_path uwsgi_temp;
    scgi_temp_path scgi_temp;
    server {
        listen 127.0.0.1:${mime};
        ${existsSync(MIME_TYPES) ? `include ${MIME_TYPES};` : 'types { text/css css; image/png png; }'}
        default_type application/octet-stream;
        location / { root files; }
        location /own/ {
            root files;
            types { text/x-own own; }
        }
    }
    server {
        listen 127.0.0.1:${bare};
        location / { root files; }
    }
    server {
        listen 127.0.0.1:${own};
        default_type text/x-default;
        location / { root files; }
        location /own/ { root files; etag off; }
    }
}
`,
});
t.teardown(() => z.stop());
const files = join(z.dir, 'files');
mkdirSync(join(files, 'own'), { recursive: true });
for (const name of ['a.css', 'b.PNG', 'c.html', 'd.jpg', 'e.unknown', 'noext', 'own/f.own', 'own/g.css']) writeFileSync(join(files, name), 'x');

const typeOf = async (port: number, path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`);
  await res.arrayBuffer();
  t.equal(res.status, 200, `${path} is served`);
  return res.headers.get('content-type');
};

t.test(`${MIME_TYPES} (Debian's) loads, and files get its types`, { skip: existsSync(MIME_TYPES) ? false : `no ${MIME_TYPES} here (apt-get install nginx-common)` }, async (t) => {
  t.equal(await typeOf(mime, '/a.css'), 'text/css');
  t.equal(await typeOf(mime, '/b.PNG'), 'image/png', 'an extension is caseless');
  t.equal(await typeOf(mime, '/c.html'), 'text/html');
  t.equal(await typeOf(mime, '/e.unknown'), 'application/octet-stream', 'default_type for an unknown extension');
  t.equal(await typeOf(mime, '/noext'), 'application/octet-stream', 'and for none');
});

t.test('a types block of a location replaces the outer one', async (t) => {
  t.equal(await typeOf(mime, '/own/f.own'), 'text/x-own');
  t.equal(await typeOf(mime, '/own/g.css'), 'application/octet-stream', 'css is not among its types');
});

t.test("without a types block, nginx's defaults: html, gif, jpg, and default_type text/plain", async (t) => {
  t.equal(await typeOf(bare, '/c.html'), 'text/html');
  t.equal(await typeOf(bare, '/d.jpg'), 'image/jpeg');
  t.equal(await typeOf(bare, '/a.css'), 'text/plain');
  t.equal(await typeOf(own, '/a.css'), 'text/x-default', 'default_type of the server');
});

t.test('etag off: a static file goes without an ETag, and If-None-Match matches nothing', async (t) => {
  const tagged = await fetch(`http://127.0.0.1:${own}/a.css`);
  await tagged.arrayBuffer();
  const etag = tagged.headers.get('etag');
  t.match(etag, /^"[0-9a-f]+-1"$/, 'on by default');
  const off = await fetch(`http://127.0.0.1:${own}/own/g.css`, { headers: { 'if-none-match': etag! } });
  await off.arrayBuffer();
  t.equal(off.status, 200);
  t.equal(off.headers.get('etag'), null);
  t.ok(off.headers.get('last-modified'), 'Last-Modified stays');
});

t.test('the temporary paths are made at start', async (t) => {
  for (const dir of ['client_body_temp', 'proxy_temp', 'fastcgi_temp', 'uwsgi_temp', 'scgi_temp']) t.ok(statSync(join(z.dir, dir)).isDirectory(), dir);
});

t.test('zonal -t refuses what nginx refuses of them', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['types { text/html; }', /invalid number of arguments in MIME type "text\/html"/],
    ['types { html text/html; }', /invalid MIME type "html"/],
    ['client_body_temp_path /tmp/x 3;', /invalid value "3" in "client_body_temp_path" directive/],
    ['keepalive_timeout soon;', /invalid value in "keepalive_timeout" directive/],
    ['client_max_body_size 1x;', /"client_max_body_size" directive invalid value/],
    ['large_client_header_buffers 0 8k;', /invalid value in "large_client_header_buffers" directive/],
    ['default_type;', /invalid number of arguments in "default_type" directive/],
    ['sendfile yes;', /invalid value "yes" in "sendfile" directive, it must be "on" or "off"/],
    ['open_file_cache inactive=20s;', /"open_file_cache" must have the "max" parameter/],
    ['open_file_cache_valid soon;', /"open_file_cache_valid" directive invalid value/],
    ['open_file_cache_min_uses many;', /"open_file_cache_min_uses" directive invalid value/],
    ['aio sometimes;', /"aio" directive invalid value/],
    ['directio big;', /"directio" directive invalid value/],
    ['output_buffers 0 32k;', /"output_buffers" directive invalid value/],
    ['postpone_output lots;', /"postpone_output" directive invalid value/],
    ['etag maybe;', /invalid value "maybe" in "etag" directive, it must be "on" or "off"/],
    ['proxy_max_temp_file_size huge;', /invalid value "huge" in "proxy_max_temp_file_size" directive/],
  ];
  // One run: every error is reported.
  const r = await checkConfig(`http {\n${cases.map(([line]) => line).join('\n')}\nserver { listen 127.0.0.1:${own}; } }`);
  t.not(r.code, 0, 'fails');
  cases.forEach(([line, message], i) => t.match(r.err, new RegExp(`${message.source} in <dir>/zonal\\.conf:${i + 2}`), line));
  const ok = await checkConfig(`http {
    keepalive_timeout 65 60; keepalive_requests 100; keepalive_time 1h; send_timeout 10;
    client_max_body_size 10g; client_body_buffer_size 128k; client_body_timeout 5s;
    client_header_timeout 5s; client_header_buffer_size 1k; large_client_header_buffers 4 16k;
    types { text/html html; } default_type application/octet-stream;
    sendfile on; tcp_nopush on; tcp_nodelay on; types_hash_max_size 2048; server_names_hash_bucket_size 64;
    open_file_cache max=1000 inactive=20s; open_file_cache_valid 30s; open_file_cache_min_uses 2; open_file_cache_errors on;
    aio threads; aio_write on; directio 4m; directio_alignment 512; read_ahead 0; sendfile_max_chunk 1m;
    postpone_output 1460; output_buffers 2 32k; variables_hash_max_size 2048; variables_hash_bucket_size 128;
    proxy_max_temp_file_size 0; proxy_temp_file_write_size 64k; proxy_headers_hash_max_size 1024; proxy_headers_hash_bucket_size 128;
    etag off;
    server { listen 127.0.0.1:${own}; client_max_body_size 0; location / { keepalive_timeout 0; open_file_cache off; aio off; directio off; etag on; } }
  }`);
  t.equal(ok.code, 0, ok.err);
  // One each: a second open_file_cache in a block is a duplicate.
  for (const [line, message] of [
    ['open_file_cache max=0;', /invalid "open_file_cache" parameter "max=0"/],
    ['open_file_cache max=10 size=1;', /invalid "open_file_cache" parameter "size=1"/],
    ['open_file_cache off max=10;', /invalid "open_file_cache" parameter "max=10"/],
  ] as const) {
    const r = await checkConfig(`http { ${line} server { listen 127.0.0.1:${own}; } }`);
    t.match(r.err, message, line);
  }
});
