// The configurations operators bring, in the shapes the usual sources give them (written
// here, not copied): Mozilla's SSL Configuration Generator's intermediate and modern
// outputs for nginx, Debian's nginx.conf with its sites-enabled/default, a WebSocket
// reverse proxy, a load balancer, rate limiting, a static single-page site, a proxy cache,
// real IPs with `return 444` and named error pages, an admin area with `satisfy any`.
// Each passes `zonal -t` unchanged; several are started and answer real traffic from one
// backend on loopback. What zonal does not implement is refused naming the nginx module.
import t from 'tap';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { connect as connectTcp, type Socket } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfig, freePorts, Zonal } from './zonal.js';
import { certificates } from './ssl/certs.js';

const dir = mkdtempSync(join(tmpdir(), 'zonal-real-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const put = (name: string, text: string | Buffer) => {
  mkdirSync(join(dir, name, '..'), { recursive: true });
  writeFileSync(join(dir, name), text);
  return join(dir, name);
};
const certs = certificates();
put('ssl/cert.pem', certs['server.crt']);
put('ssl/key.pem', certs['server.key']);
put('ssl/chain.pem', certs['ca.crt']);
execFileSync('openssl', ['dhparam', '-dsaparam', '-out', join(dir, 'ssl/dhparam.pem'), '2048'], { stdio: 'ignore' });
put('htpasswd', 'admin:{PLAIN}secret\n');
put('www/index.nginx-debian.html', '<h1>Welcome to nginx!</h1>\n');
put('spa/index.html', '<div id="app"></div>\n');
put('spa/assets/app.css', 'body{}\n');

// One backend for every configuration: it says what it was asked, answers /no-cache with a
// response an application marks uncacheable, and echoes a WebSocket's bytes back.
let backendHits = 0;
const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  backendHits++;
  if (req.url === '/no-cache') res.writeHead(200, { 'cache-control': 'no-cache', 'set-cookie': 'session=1' });
  else if (req.url === '/gone') res.writeHead(404);
  else res.writeHead(200, { 'content-type': 'text/plain' });
  res.end(`${req.method} ${req.url} x-real-ip=${req.headers['x-real-ip'] ?? ''} xff=${req.headers['x-forwarded-for'] ?? ''} host=${req.headers.host}\n`);
});
backend.on('upgrade', (req: IncomingMessage, socket: Socket) => {
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\n\r\n`);
  socket.pipe(socket);
});
await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
t.teardown(() => backend.close());
const up = `127.0.0.1:${(backend.address() as { port: number }).port}`;

const [http, https, debian, site, edge, limits] = await freePorts(6);

/** Mozilla's intermediate output, on loopback ports: ssl_dhparam, stapling, http2, HSTS. */
const mozillaIntermediate = `
http {
    server {
        listen 127.0.0.1:${http} default_server;
        location / {
            return 301 https://$host$request_uri;
        }
    }
    server {
        listen 127.0.0.1:${https} ssl http2;
        ssl_certificate ${dir}/ssl/cert.pem;
        ssl_certificate_key ${dir}/ssl/key.pem;
        ssl_session_timeout 1d;
        ssl_session_cache shared:MozSSL:10m;
        ssl_session_tickets off;
        ssl_dhparam ${dir}/ssl/dhparam.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384:DHE-RSA-CHACHA20-POLY1305;
        ssl_prefer_server_ciphers off;
        add_header Strict-Transport-Security "max-age=63072000" always;
        ssl_stapling on;
        ssl_stapling_verify on;
        ssl_trusted_certificate ${dir}/ssl/chain.pem;
        resolver 127.0.0.1;
        location / { proxy_pass http://${up}; }
    }
}
`;

const mozillaModern = `
http {
    server {
        listen 127.0.0.1:${https} ssl;
        listen [::1]:${https} ssl;
        http2 on;
        ssl_certificate ${dir}/ssl/cert.pem;
        ssl_certificate_key ${dir}/ssl/key.pem;
        ssl_session_timeout 1d;
        ssl_session_cache shared:MozSSL:10m;
        ssl_session_tickets off;
        ssl_protocols TLSv1.3;
        ssl_ecdh_curve X25519:prime256v1:secp384r1;
        ssl_prefer_server_ciphers off;
        add_header Strict-Transport-Security "max-age=63072000" always;
        ssl_stapling on;
        ssl_stapling_verify on;
        ssl_trusted_certificate ${dir}/ssl/chain.pem;
    }
}
`;

// Debian's nginx.conf as the package writes it, less `include modules-enabled/*.conf`
// (dynamic modules zonal has not: refused below) and with its paths in this folder.
put('sites-enabled/default', `
server {
	listen 127.0.0.1:${debian} default_server;
	root ${dir}/www;
	# Add index.php to the list if you are using PHP
	index index.html index.htm index.nginx-debian.html;
	server_name _;
	location / {
		# First attempt to serve request as file, then
		# as directory, then fall back to displaying a 404.
		try_files $uri $uri/ =404;
	}
}
`);
const debianConf = (user: string) => `${user}
worker_processes auto;
pid ${dir}/nginx.pid;
events {
	worker_connections 768;
	# multi_accept on;
}
http {
	##
	# Basic Settings
	##
	sendfile on;
	tcp_nopush on;
	types_hash_max_size 2048;
	# server_tokens off;
	include /etc/nginx/mime.types;
	default_type application/octet-stream;
	##
	# SSL Settings
	##
	ssl_protocols TLSv1 TLSv1.1 TLSv1.2 TLSv1.3; # Dropping SSLv3, ref: POODLE
	ssl_prefer_server_ciphers on;
	##
	# Logging Settings
	##
	access_log ${dir}/access.log;
	error_log ${dir}/error.log;
	##
	# Gzip Settings
	##
	gzip on;
	# gzip_vary on;
	# gzip_proxied any;
	##
	# Virtual Host Configs
	##
	include ${dir}/conf.d/*.conf;
	include ${dir}/sites-enabled/*;
}
`;

/** A static single-page site with its caching headers, and a proxy cache beside it. */
const staticSite = `
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    server_tokens off;
    etag on;
    gzip on;
    gzip_vary on;
    gzip_types text/css application/javascript;
    proxy_cache_path ${dir}/cache levels=1:2 keys_zone=STATIC:10m inactive=24h max_size=1g use_temp_path=off;
    server {
        listen 127.0.0.1:${site};
        root ${dir}/spa;
        index index.html;
        location / {
            try_files $uri $uri/ /index.html;
        }
        location = /index.html {
            add_header Cache-Control "no-cache";
            expires -1;
        }
        location ~* \\.(?:css|js|woff2?|svg|png|jpe?g|gif|ico)$ {
            expires 1y;
            add_header Cache-Control "public, immutable";
            access_log off;
            log_not_found off;
        }
        location = /favicon.ico { log_not_found off; access_log off; }
        location ~ /\\. { deny all; }
        location /api/ {
            proxy_pass http://${up}/;
            proxy_cache STATIC;
            proxy_cache_key $scheme$proxy_host$request_uri;
            proxy_cache_valid 200 302 10m;
            proxy_cache_valid 404 1m;
            proxy_cache_use_stale error timeout updating http_500 http_502 http_503 http_504;
            proxy_cache_background_update on;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 5s;
            proxy_ignore_headers Cache-Control Expires Set-Cookie;
            add_header X-Cache-Status $upstream_cache_status;
        }
    }
}
`;

/** The edge of an application: real IPs from a front proxy, a catch-all that answers
 * nothing (444), named error pages, a WebSocket endpoint, a load-balanced upstream. */
const edgeProxy = `
http {
    map $http_upgrade $connection_upgrade {
        default upgrade;
        ''      close;
    }
    upstream app {
        least_conn;
        server ${up} max_fails=3 fail_timeout=30s;
        keepalive 32;
        keepalive_requests 1000;
        keepalive_timeout 60s;
    }
    upstream sticky {
        ip_hash;
        server ${up};
        keepalive 16;
    }
    set_real_ip_from 127.0.0.1;
    set_real_ip_from 10.0.0.0/8;
    real_ip_header X-Forwarded-For;
    real_ip_recursive on;
    server {
        listen 127.0.0.1:${edge} default_server;
        server_name _;
        return 444;
    }
    server {
        listen 127.0.0.1:${edge};
        server_name app.example.com;
        error_page 404 = @fallback;
        error_page 502 503 504 @maintenance;
        location / {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Real-IP $remote_addr;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_intercept_errors on;
        }
        location /ws/ {
            proxy_pass http://app;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $host;
            proxy_read_timeout 3600s;
        }
        location /sticky/ { proxy_pass http://sticky; }
        location @fallback { return 200 "fallback for $uri\\n"; }
        location @maintenance { return 503 "down for maintenance\\n"; }
    }
}
`;

const rateLimited = `
http {
    limit_req_zone $binary_remote_addr zone=perip:10m rate=1r/m;
    limit_conn_zone $binary_remote_addr zone=addr:10m;
    limit_req_status 429;
    limit_conn_status 429;
    limit_req_log_level warn;
    server {
        listen 127.0.0.1:${limits};
        location /api/ {
            limit_req zone=perip burst=2 nodelay;
            limit_conn addr 10;
            proxy_pass http://${up};
        }
        location /admin/ {
            satisfy any;
            allow 10.0.0.0/8;
            deny all;
            auth_basic "Administrator's Area";
            auth_basic_user_file ${dir}/htpasswd;
            proxy_pass http://${up};
        }
        location /dav/ {
            limit_except GET HEAD {
                auth_basic "Writers";
                auth_basic_user_file ${dir}/htpasswd;
            }
            proxy_pass http://${up};
        }
    }
}
`;

const emergs = (err: string) => err.split('\n').filter((l) => l.includes('[emerg]'));
const warns = (err: string) => err.split('\n').filter((l) => l.includes('[warn]'));

t.test('zonal -t: each passes unchanged; what zonal does not do is one [warn] each', async (t) => {
  const intermediate = await checkConfig(mozillaIntermediate);
  t.equal(intermediate.code, 0, intermediate.err);
  t.same(
    warns(intermediate.err).map((l) => l.replace(/ in <dir>.*$/, '')),
    ['zonal: [warn] zonal serves HTTP/1.1: clients that offer h2 use HTTP/1.1 ("http2" ignored)', 'zonal: [warn] "ssl_stapling" ignored, zonal does not query OCSP responders: give the response with "ssl_stapling_file"'],
  );
  const modern = await checkConfig(mozillaModern);
  t.equal(modern.code, 0, modern.err);
  t.equal(warns(modern.err).length, 2);
  for (const [name, text] of [['static site and proxy cache', staticSite], ['edge proxy', edgeProxy], ['rate limits and auth', rateLimited]]) {
    const r = await checkConfig(text);
    t.equal(r.code, 0, `${name}: ${r.err}`);
    t.same(warns(r.err), [], name);
  }
});

t.test("Debian's nginx.conf and sites-enabled/default", async (t) => {
  const r = await checkConfig(debianConf(''));
  t.equal(r.code, 0, r.err);
  // `user` drops a root's privileges in nginx's workers; zonal's cannot (Node has no
  // setuid between fork and exec), so as root it says so and names the way.
  const withUser = await checkConfig(debianConf('user www-data;'));
  t.same(emergs(withUser.err), process.getuid?.() === 0 ? ['zonal: [emerg] the "user" directive is not supported when zonal runs as root: start zonal as the user "www-data" instead in <dir>/zonal.conf:1'] : []);
  const z = await Zonal.start({ 'zonal.conf': debianConf('') });
  t.teardown(() => z.stop());
  const home = await fetch(`http://127.0.0.1:${debian}/`);
  t.equal(home.status, 200);
  t.equal(home.headers.get('content-type'), 'text/html', "mime.types' type");
  t.equal(await home.text(), '<h1>Welcome to nginx!</h1>\n', 'the third index');
  t.equal((await fetch(`http://127.0.0.1:${debian}/missing`)).status, 404);
  const logged = () => readFileSync(join(dir, 'access.log'), 'utf8');
  for (let i = 0; i < 100 && !logged().includes('"GET /missing HTTP/1.1" 404'); i++) await new Promise((r) => setTimeout(r, 20));
  t.match(logged(), /127\.0\.0\.1 - - \[.+\] "GET \/missing HTTP\/1\.1" 404 \d+ "-" ".*"\n/, 'combined, in its access_log');
});

t.test("Mozilla's intermediate: TLS with DHE, HSTS, the redirect to https", async (t) => {
  const z = await Zonal.start({ 'zonal.conf': mozillaIntermediate });
  t.teardown(() => z.stop());
  const redirect = await fetch(`http://127.0.0.1:${http}/path?q=1`, { redirect: 'manual' });
  t.equal(redirect.status, 301);
  t.equal(redirect.headers.get('location'), `https://127.0.0.1/path?q=1`);
  const answer = await new Promise<{ text: string; cipher: string; alpn: string | false | null }>((resolve, reject) => {
    const socket = connectTls({ host: '127.0.0.1', port: https, rejectUnauthorized: false, maxVersion: 'TLSv1.2', ciphers: 'DHE-RSA-AES128-GCM-SHA256', ALPNProtocols: ['h2', 'http/1.1'] }, () => {
      socket.write('GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    });
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('end', () => resolve({ text, cipher: socket.getCipher().name, alpn: socket.alpnProtocol }));
    socket.on('error', reject);
  });
  t.equal(answer.cipher, 'DHE-RSA-AES128-GCM-SHA256', 'a DHE suite of its list, with its ssl_dhparam');
  t.equal(answer.alpn, 'http/1.1');
  t.match(answer.text, /^HTTP\/1\.1 200 OK\r\n/);
  t.match(answer.text, /\r\nStrict-Transport-Security: max-age=63072000\r\n/);
  t.match(answer.text, /GET \/hello /, "the backend's answer");
});

t.test('a static single-page site and a proxy cache', async (t) => {
  const z = await Zonal.start({ 'zonal.conf': staticSite });
  t.teardown(() => z.stop());
  const get = (path: string) => fetch(`http://127.0.0.1:${site}${path}`);
  const route = await get('/some/client/route');
  t.equal(route.status, 200);
  t.equal(await route.text(), '<div id="app"></div>\n', 'try_files falls back to /index.html');
  // expires -1 says no-cache, and add_header says it again: nginx sends both.
  t.equal(route.headers.get('cache-control'), 'no-cache, no-cache', "served by = /index.html's location");
  const css = await get('/assets/app.css');
  t.equal(css.headers.get('content-type'), 'text/css');
  t.equal(css.headers.get('cache-control'), 'max-age=31536000, public, immutable', 'expires 1y and add_header');
  t.ok(css.headers.get('etag'));
  t.equal((await get('/.git/config')).status, 403, 'dot files denied');
  t.equal((await get('/favicon.ico')).status, 404, 'an exact location without try_files: not found');
  const before = backendHits;
  const first = await get('/api/no-cache');
  await first.text();
  t.equal(first.headers.get('x-cache-status'), 'MISS');
  const second = await get('/api/no-cache');
  t.equal(second.headers.get('x-cache-status'), 'HIT', 'Cache-Control: no-cache and Set-Cookie ignored');
  t.match(await second.text(), /^GET \/no-cache /);
  t.equal(backendHits - before, 1, 'the backend asked once');
});

/** Sends `request` on a new connection and reads until the server closes it. */
const raw = (port: number, request: string) =>
  new Promise<string>((resolve, reject) => {
    const socket = connectTcp(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (text += d));
    socket.on('close', () => resolve(text));
    socket.on('error', reject);
  });

t.test('the edge: real IPs, 444, named error pages, a WebSocket, the balancers', async (t) => {
  const z = await Zonal.start({ 'zonal.conf': edgeProxy });
  t.teardown(() => z.stop());
  t.equal(await raw(edge, 'GET / HTTP/1.1\r\nHost: scanner.test\r\n\r\n'), '', '444: the connection closed, nothing answered');
  const app = (path: string) => raw(edge, `GET ${path} HTTP/1.1\r\nHost: app.example.com\r\nX-Forwarded-For: 203.0.113.7, 10.1.2.3\r\nConnection: close\r\n\r\n`);
  const proxied = await app('/hello');
  t.match(proxied, /^HTTP\/1\.1 200 /);
  // $proxy_add_x_forwarded_for adds $remote_addr, which realip made the client's.
  t.match(proxied, /x-real-ip=203\.0\.113\.7 xff=203\.0\.113\.7, 10\.1\.2\.3, 203\.0\.113\.7 host=app\.example\.com/, 'the client behind the trusted proxies');
  t.match(await app('/gone'), /^HTTP\/1\.1 200 [^]*fallback for \/gone/, "the peer's 404 intercepted, answered by @fallback");
  t.match(await app('/sticky/x'), /GET \/sticky\/x /, 'ip_hash');
  const echoed = await new Promise<string>((resolve, reject) => {
    const socket = connectTcp(edge, '127.0.0.1', () =>
      socket.write('GET /ws/chat HTTP/1.1\r\nHost: app.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n'),
    );
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => {
      text += d;
      if (text.includes('\r\n\r\n') && !text.includes('ping')) socket.write('ping');
      if (text.endsWith('ping')) {
        socket.destroy();
        resolve(text);
      }
    });
    socket.on('error', reject);
  });
  t.match(echoed, /^HTTP\/1\.1 101 Switching Protocols\r\n[^]*\r\n\r\nping$/, 'upgraded through the map, and a tunnel');
});

t.test('rate limits answer 429; satisfy any and limit_except guard their locations', async (t) => {
  const z = await Zonal.start({ 'zonal.conf': rateLimited });
  t.teardown(() => z.stop());
  const statuses: number[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await fetch(`http://127.0.0.1:${limits}/api/x`);
    await res.text();
    statuses.push(res.status);
  }
  t.same(statuses, [200, 200, 200, 429, 429], 'one request and a burst of two, then limit_req_status');
  const admin = await fetch(`http://127.0.0.1:${limits}/admin/`);
  t.equal(admin.status, 401, 'not among the allowed addresses: asked to log in');
  const logged = await fetch(`http://127.0.0.1:${limits}/admin/`, { headers: { authorization: `Basic ${Buffer.from('admin:secret').toString('base64')}` } });
  t.equal(logged.status, 200);
  t.equal((await fetch(`http://127.0.0.1:${limits}/dav/f`)).status, 200, 'GET is not limited');
  t.equal((await fetch(`http://127.0.0.1:${limits}/dav/f`, { method: 'PUT', body: 'x' })).status, 401);
});

t.test('out of scope: refused at -t, naming the nginx module', async (t) => {
  const cases: Array<[string, string]> = [
    ['location ~ \\.php$ { fastcgi_pass unix:/run/php/php-fpm.sock; }', "unknown directive \"fastcgi_pass\": zonal does not implement nginx's ngx_http_fastcgi_module"],
    ['location / { uwsgi_pass 127.0.0.1:9000; }', "unknown directive \"uwsgi_pass\": zonal does not implement nginx's ngx_http_uwsgi_module"],
    ['location / { scgi_pass 127.0.0.1:9000; }', "unknown directive \"scgi_pass\": zonal does not implement nginx's ngx_http_scgi_module"],
    ['location / { grpc_pass grpc://127.0.0.1:9000; }', "unknown directive \"grpc_pass\": zonal does not implement nginx's ngx_http_grpc_module"],
    ['location / { sub_filter a b; }', "unknown directive \"sub_filter\": zonal does not implement nginx's ngx_http_sub_module"],
    ['location / { image_filter resize 100 100; }', "unknown directive \"image_filter\": zonal does not implement nginx's ngx_http_image_filter_module"],
    ['location / { ssi on; }', "unknown directive \"ssi\": zonal does not implement nginx's ngx_http_ssi_module"],
    ['location / { autoindex on; }', "unknown directive \"autoindex\": zonal does not implement nginx's ngx_http_autoindex_module"],
    ['charset utf-8;', "unknown directive \"charset\": zonal does not implement nginx's ngx_http_charset_module"],
    ['location /s { stub_status; }', "unknown directive \"stub_status\": zonal does not implement nginx's ngx_http_stub_status_module"],
  ];
  for (const [line, message] of cases) {
    const r = await checkConfig(`http { server { listen 127.0.0.1:1; ${line} } }\n`);
    t.equal(r.code, 1, line);
    t.same(emergs(r.err), [`zonal: [emerg] ${message} in <dir>/zonal.conf:1`], line);
  }
  const mail = await checkConfig('mail { server { listen 127.0.0.1:1; protocol imap; } }\n');
  t.match(emergs(mail.err), [/unknown directive "mail": zonal does not implement nginx's ngx_mail_module/]);
  const perl = await checkConfig('load_module modules/ngx_http_perl_module.so;\n');
  t.match(emergs(perl.err), [/module "modules\/ngx_http_perl_module\.so" is not supported by zonal/]);
});
