// error_page, server_tokens and add_header on the answers zonal makes itself, through
// bin/zonal, as nginx's documentation (ngx_http_core_module, ngx_http_headers_module)
// describes them: an error page's URI is an internal redirect answered with the error's
// status, `=code` another status, `=` the status of what answers it; a named location is
// entered directly; a URL is a 302 (or the `=` redirect code); a failing error page gets
// the default page. add_header applies to 200, 201, 204, 206, 301, 302, 303, 304, 307, 308,
// and with `always` to every status, `return` answers included.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZONAL_VERSION } from '../../../../src/metrics/status.js';
import { freePorts, Zonal } from '../../zonal.js';

const [port, tokens] = await freePorts(2);
const docs = mkdtempSync(join(tmpdir(), 'zonal-error-page-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
writeFileSync(join(docs, '404.html'), 'custom 404\n');
writeFileSync(join(docs, '403.html'), 'custom 403\n');
writeFileSync(join(docs, 'busy.html'), 'too busy\n');
mkdirSync(join(docs, 'limited'));
writeFileSync(join(docs, 'limited', 'ok.txt'), 'passed\n');

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    limit_req_zone $binary_remote_addr zone=one:1m rate=1r/m;
    server {
        listen 127.0.0.1:${port};
        root ${docs};
        location /limited/ { limit_req zone=one; error_page 503 /busy.html; }
        error_page 404 /404.html;
        location = /404.html { internal; }
        location = /403.html { internal; }
        location /keep/ { }
        location /eq200/ { error_page 404 =200 /404.html; }
        location /eq/ { error_page 404 = /answer; }
        location = /answer { return 202 "answered"; }
        location /named/ { error_page 404 = @fallback; }
        location /named-keep/ { error_page 404 @fallback; }
        location @fallback { return 200 "fallback $uri"; }
        location /url/ { error_page 404 http://example.com/missing; }
        location /url301/ { error_page 404 =301 http://example.com/moved; }
        location /ret/ { error_page 403 /403.html; return 403; }
        location /deny/ { deny all; error_page 403 /403.html; }
        location /again/ { error_page 404 /nothere.html; }
        location /post/ { error_page 405 =200 /404.html; }
    }
    server {
        listen 127.0.0.1:${tokens};
        location /on/ { server_tokens on; return 404; }
        location /build/ { server_tokens build; return 200 "x"; }
        location /off/ { server_tokens off; return 404; }
        location /none/ { return 404; }
        location /ah/ { add_header X-A a; add_header X-B b always; return 200 "ok"; }
        location /ah404/ { add_header X-A a; add_header X-B b always; return 404; }
        location /ahtext/ { add_header X-A a; add_header X-B b always; return 500 "text"; }
        location /ahredirect/ { add_header X-A a; return 302 /elsewhere; }
        location /ahvar/ { add_header X-Uri $uri; return 204; }
    }
}
`,
});
t.teardown(() => z.stop());

const get = async (p: number, path: string, init?: RequestInit) => {
  const res = await fetch(`http://127.0.0.1:${p}${path}`, { redirect: 'manual', ...init });
  return { status: res.status, body: await res.text(), headers: res.headers };
};

t.test('error_page with a URI: an internal redirect, answered with the status the directive says', async (t) => {
  const keep = await get(port, '/keep/missing');
  t.equal(keep.status, 404, 'no "=": the error status');
  t.equal(keep.body, 'custom 404\n', 'inherited from the server, served by an internal location');
  const eq200 = await get(port, '/eq200/missing');
  t.equal(eq200.status, 200, '=200');
  t.equal(eq200.body, 'custom 404\n');
  const eq = await get(port, '/eq/missing');
  t.equal(eq.status, 202, '"=" alone: the status of what answers');
  t.equal(eq.body, 'answered');
  t.equal((await get(port, '/404.html')).status, 404, 'the internal page is not reachable directly');
});

t.test('error_page with a named location', async (t) => {
  const named = await get(port, '/named/missing');
  t.equal(named.status, 200, '"=": the named location\'s status');
  t.equal(named.body, 'fallback /named/missing');
  const keep = await get(port, '/named-keep/missing');
  t.equal(keep.status, 404, 'no "=": the error status');
  t.equal(keep.body, 'fallback /named-keep/missing');
});

t.test('error_page with a URL redirects the client', async (t) => {
  const url = await get(port, '/url/missing');
  t.equal(url.status, 302);
  t.equal(url.headers.get('location'), 'http://example.com/missing');
  const moved = await get(port, '/url301/missing');
  t.equal(moved.status, 301, 'a redirect code after "="');
  t.equal(moved.headers.get('location'), 'http://example.com/moved');
});

t.test('error_page for return, access refusals and methods; a failing page gets the default one', async (t) => {
  const ret = await get(port, '/ret/x');
  t.equal(ret.status, 403);
  t.equal(ret.body, 'custom 403\n', '`return 403` is answered by error_page');
  const deny = await get(port, '/deny/x');
  t.equal(deny.status, 403);
  t.equal(deny.body, 'custom 403\n', 'deny is answered by error_page');
  const again = await get(port, '/again/x');
  t.equal(again.status, 404);
  t.match(again.body, /<h1>404 Not Found<\/h1>/, 'the page itself missing: the default page, no loop');
  const first = await get(port, '/limited/ok.txt');
  t.equal(first.body, 'passed\n');
  const limited = await get(port, '/limited/ok.txt');
  t.equal(limited.status, 503, 'the second request within the minute is refused');
  t.equal(limited.body, 'too busy\n', 'limit_req refusals are answered by error_page');
  const post = await get(port, '/post/x', { method: 'POST', body: 'x' });
  t.equal(post.status, 200, 'a 405 for POST, turned 200');
  t.equal(post.body, 'custom 404\n', 'the page served as to a GET');
});

t.test('server_tokens: the Server header and the error page footer', async (t) => {
  const on = await get(tokens, '/on/');
  t.equal(on.headers.get('server'), `zonal/${ZONAL_VERSION}`);
  t.match(on.body, `<hr><center>zonal/${ZONAL_VERSION}</center>`);
  t.equal((await get(tokens, '/build/')).headers.get('server'), `zonal/${ZONAL_VERSION}`, 'build: as on, zonal has no build name');
  const off = await get(tokens, '/off/');
  t.equal(off.headers.get('server'), 'zonal');
  t.match(off.body, '<hr><center>zonal</center>');
  const none = await get(tokens, '/none/');
  t.equal(none.headers.get('server'), null, "zonal's default: no Server header");
  t.match(none.body, '<hr><center>zonal</center>');
});

t.test('add_header applies to return answers', async (t) => {
  const ok = await get(tokens, '/ah/');
  t.equal(ok.status, 200);
  t.equal(ok.headers.get('x-a'), 'a');
  t.equal(ok.headers.get('x-b'), 'b');
  const missing = await get(tokens, '/ah404/');
  t.equal(missing.status, 404);
  t.equal(missing.headers.get('x-a'), null, 'not on a 404 without always');
  t.equal(missing.headers.get('x-b'), 'b', 'always');
  const text = await get(tokens, '/ahtext/');
  t.equal(text.status, 500);
  t.equal(text.headers.get('x-a'), null);
  t.equal(text.headers.get('x-b'), 'b');
  const redirect = await get(tokens, '/ahredirect/');
  t.equal(redirect.status, 302);
  t.equal(redirect.headers.get('x-a'), 'a', 'a redirect is among the codes');
  const variable = await get(tokens, '/ahvar/x');
  t.equal(variable.status, 204);
  t.equal(variable.headers.get('x-uri'), '/ahvar/x', 'with variables');
});
