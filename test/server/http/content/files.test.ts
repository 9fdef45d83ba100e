// index, alias, try_files, named locations and internal through bin/zonal, as nginx's
// documentation describes them (ngx_http_index_module, ngx_http_core_module): an index
// file and try_files' last URI are internal redirects that the location of the new URI
// serves; alias replaces a prefix location's part of the URI, or is the whole path in a
// regex location; an internal location answers only internal redirects.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts, Zonal } from '../../zonal.js';

const [port] = await freePorts(1);
const docs = mkdtempSync(join(tmpdir(), 'zonal-content-docs-'));
const pics = mkdtempSync(join(tmpdir(), 'zonal-content-alias-'));
t.teardown(() => {
  rmSync(docs, { recursive: true, force: true });
  rmSync(pics, { recursive: true, force: true });
});
const put = (dir: string, name: string, text: string) => {
  mkdirSync(join(dir, name, '..'), { recursive: true });
  writeFileSync(join(dir, name), text);
};
put(docs, 'index.html', 'root index\n');
put(docs, 'a/index.htm', 'a htm\n');
mkdirSync(join(docs, 'b'));
put(docs, 'c/default.html', 'c default\n');
put(docs, 'spa/app.html', 'the app\n');
put(docs, 'try/file.txt', 'tried file\n');
put(docs, 'try/dir/index.html', 'tried dir\n');
put(docs, 'hidden/secret.txt', 'secret\n');
put(pics, 'pic.txt', 'a picture\n');
put(pics, 'index.html', 'alias index\n');
put(pics, 'sub/re-try.txt', 'regex alias tried\n');

const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    server {
        listen 127.0.0.1:${port};
        root ${docs};
        location / { }
        location = /index.html { add_header X-Index yes; }
        location /a/ { index index.html index.htm; }
        location /c/ { index missing.html /c/default.html; }
        location = /c/default.html { add_header X-Where default; }
        location /i/ { alias ${pics}/; }
        location /j { alias ${pics}/; }
        location ~ ^/re/(.+)$ { alias ${pics}/$1; }
        location /try/ { try_files $uri $uri/ /spa/app.html; }
        location /try404/ { try_files $uri =404; }
        location /tryn/ { try_files /nope @back; }
        location @back { return 200 "named $uri"; }
        location /hidden/ { internal; }
        location /toh/ { try_files /nope /hidden/secret.txt; }
        location /loop/ { try_files /nope /loop/again; }
        location /dir-dir/ { try_files /try/dir/ =404; }
        location /file-dir/ { try_files /try/file.txt/ =404; }
        location /dir-file/ { try_files /try/dir =404; }
        location ~ /re-try\\.txt$ { alias ${pics}/sub; try_files $uri =404; }
        location /nest/ {
            alias ${pics}/;
            location ~ \\.txt$ { try_files $uri =404; }
        }
    }
}
`,
});
t.teardown(() => z.stop());

const get = async (path: string) => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { redirect: 'manual' });
  return { status: res.status, body: await res.text(), headers: res.headers };
};

t.test('index: the files in order, an internal redirect the location of the file serves', async (t) => {
  const root = await get('/');
  t.equal(root.status, 200);
  t.equal(root.body, 'root index\n', 'index.html by default');
  t.equal(root.headers.get('x-index'), 'yes', 'served by location = /index.html: an internal redirect');
  const a = await get('/a/');
  t.equal(a.status, 200);
  t.equal(a.body, 'a htm\n', 'the first that exists of index.html index.htm');
  const c = await get('/c/');
  t.equal(c.body, 'c default\n', 'an absolute last index is redirected to');
  t.equal(c.headers.get('x-where'), 'default');
  t.equal((await get('/b/')).status, 403, 'a directory without index: forbidden');
  t.equal((await get('/nowhere/')).status, 404, 'no directory at all: not found');
});

t.test('alias: a prefix location replaces its part; a regex location takes its captures', async (t) => {
  const prefix = await get('/i/pic.txt');
  t.equal(prefix.status, 200);
  t.equal(prefix.body, 'a picture\n');
  const re = await get('/re/pic.txt');
  t.equal(re.status, 200);
  t.equal(re.body, 'a picture\n');
  const index = await get('/i/');
  t.equal(index.body, 'alias index\n', 'the index of an alias directory');
  t.equal((await get('/i/none.txt')).status, 404);
  t.equal((await get('/j/pic.txt')).body, 'a picture\n', 'a prefix without its slash');
  const outside = `/j../${docs.split('/').pop()}/index.html`;
  t.equal((await get(outside)).status, 404, 'a URI that climbs out of the alias is not served');
});

t.test('try_files: $uri, $uri/, then the last URI, a named location or =code', async (t) => {
  t.equal((await get('/try/file.txt')).body, 'tried file\n', '$uri');
  t.equal((await get('/try/dir/')).body, 'tried dir\n', '$uri/ then its index');
  const fallback = await get('/try/missing');
  t.equal(fallback.status, 200);
  t.equal(fallback.body, 'the app\n', 'the last URI, served by its own location');
  t.equal((await get('/try404/missing')).status, 404, '=404');
  const named = await get('/tryn/x');
  t.equal(named.status, 200);
  t.equal(named.body, 'named /tryn/x', 'a named location, with the request URI');
  t.equal((await get('/loop/x')).status, 500, 'an internal redirect loop ends in 500');
});

t.test('try_files: a name written with a final slash asks for a directory, and names it without', async (t) => {
  const dir = await get('/dir-dir/');
  t.equal(dir.status, 301, 'a directory found for /try/dir/ is the URI /try/dir, which the static module redirects');
  t.match(dir.headers.get('location'), /\/try\/dir\/$/);
  t.equal((await get('/file-dir/')).status, 404, 'a file does not match a name with a slash');
  t.equal((await get('/dir-file/')).status, 404, 'a directory does not match a name without one');
  const bare = await get('/try/dir');
  t.equal(bare.status, 301, '$uri/ finding /try/dir: a redirect to /try/dir/, as nginx');
  t.match(bare.headers.get('location'), /\/try\/dir\/$/);
});

t.test('try_files with alias: in a regex location, and in a location nested in an alias location', async (t) => {
  const re = await get('/re-try.txt');
  t.equal(re.status, 200);
  t.equal(re.body, 'regex alias tried\n', 'the alias, then the URI: the file found is the file served');
  const nested = await get('/nest/pic.txt');
  t.equal(nested.status, 200);
  t.equal(nested.body, 'a picture\n', "the outer location's alias replaces its part of the URI");
  t.equal((await get('/nest/none.txt')).status, 404);
});

t.test('internal: a direct request gets 404, an internal redirect is served', async (t) => {
  t.equal((await get('/hidden/secret.txt')).status, 404);
  const through = await get('/toh/x');
  t.equal(through.status, 200);
  t.equal(through.body, 'secret\n');
  t.equal((await get('/@back')).status, 404, 'a named location is never matched by a URI');
});
