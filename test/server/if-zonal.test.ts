// `if` in locations end to end (issue 19, item 4): bin/zonal on a configuration with
// each kind of condition, captures in `return`, `proxy_pass` and `api`, file tests,
// what an `if` block inherits from its location, and which location zone counts what.
import t from 'tap';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkFile, eventually, freePorts, getJson, Zonal } from './zonal.js';

const [site, admin, backendPort] = await freePorts(3);

// The peer answers with what it was sent.
const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ url: req.url, from: req.headers['x-from'] ?? null }));
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => backend.close());

const files = mkdtempSync(join(tmpdir(), 'zonal-if-files-'));
t.teardown(() => rmSync(files, { recursive: true, force: true }));
mkdirSync(join(files, 'files', 'sub'), { recursive: true });
writeFileSync(join(files, 'files', 'a.txt'), 'a');

const config = `
worker_processes 1;
http {
    upstream back { server 127.0.0.1:${backendPort}; }
    limit_req_zone $arg_key zone=once:32k rate=1r/m;
    limit_conn_zone $arg_key zone=held:32k;
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        if ($http_x_block ~ "^(\\w+)$") { return 403 "blocked $1\n"; }
        location /var/ {
            status_zone var;
            if ($arg_v) { status_zone var_true; return 200 "true $arg_v\\n"; }
            return 200 "false\\n";
        }
        location /eq/ {
            if ($http_x_a = "a b") { return 200 "eq\\n"; }
            if ($http_x_a != "a b") { return 200 "ne\\n"; }
        }
        location /re/ {
            status_zone re;
            if ($uri ~ "^/re/(\\w+)/(\\d{2})$") { return 200 "re $1 $2\\n"; }
            if ($uri ~* "^/re/CI/(\\w+)$") { return 200 "ci $1\\n"; }
            if ($uri !~* "^/RE/KEEP") { return 200 "other\\n"; }
            if ($uri !~ "^/re/keep$") { return 200 "never\\n"; }
            return 200 "keep\\n";
        }
        location /files/ {
            if (-e ${files}$uri.txt) { return 200 "exists\\n"; }
            if (-f ${files}$uri) { return 200 "file\\n"; }
            if (-d ${files}$uri) { return 200 "dir\\n"; }
            if (!-e ${files}$uri) { return 200 "none\\n"; }
        }
        location /proxy/ {
            status_zone proxy;
            allow 127.0.0.1;
            deny all;
            proxy_set_header X-From location;
            if ($arg_to ~ "^(\\w+)$") { status_zone proxied_if; proxy_pass http://back/to/$1?q=$arg_q; }
            if ($arg_same) { status_zone same_if; }
            proxy_pass http://back;
        }
        location /denied/ {
            status_zone denied;
            allow 127.0.0.2;
            deny all;
            if ($arg_a) { status_zone denied_if; return 200 "never\\n"; }
            return 200 "never\\n";
        }
        location /api/ {
            if ($arg_zone ~ "^(\\w+)$") { api /status/http/location_zones/$1; }
            api /status/;
        }
        location /first/ {
            return 200 "first\\n";
            if ($arg_a) { return 200 "if\\n"; }
        }
        location /after/ {
            status_zone after;
            if ($arg_a) { status_zone after_if; }
            return 200 "after $1\\n";
        }
        location /last/ {
            if ($arg_a) { status_zone last_a; }
            if ($arg_b) { status_zone last_b; }
            return 200 "last\\n";
        }
        location /redirect/ {
            if ($arg_to ~ "^(\\w+)$") { return 302 "http://$host/$1$12"; }
            return 301 https://$host$request_uri;
        }
        location /limited/ {
            limit_conn held 5;
            if ($arg_limited) { limit_req zone=once; limit_req_status 429; }
            proxy_pass http://back;
        }
        location ~ ^/loc/(\\w+)$ {
            if ($arg_x = "y") { return 200 "location capture $1\\n"; }
            if ($arg_x ~ "^(\\w)") { return 200 "if capture $1\\n"; }
            return 200 "none\\n";
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`;

const zonal = await Zonal.start({ 'zonal.conf': config });
t.teardown(() => zonal.stop());

async function get(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await fetch(`http://127.0.0.1:${site}${path}`, { headers });
  return { status: res.status, text: await res.text() };
}

/** A location zone's requests once its count is `expected` (a proxied response is
 * counted as it closes, which a client may see after the body). */
async function zone(name: string, expected?: number): Promise<number | undefined> {
  let total: number | undefined;
  await eventually(async () => {
    const got = await getJson(`http://127.0.0.1:${admin}/status/http/location_zones/${name}/requests/total`);
    total = got.status === 200 ? (got.body as number) : undefined;
    return expected === undefined || total === expected;
  });
  return total;
}

t.test('$var: false when empty or "0"', async (t) => {
  t.same(await get('/var/?v=abc'), { status: 200, text: 'true abc\n' });
  t.same(await get('/var/?v=0'), { status: 200, text: 'false\n' });
  t.same(await get('/var/'), { status: 200, text: 'false\n' });
  t.same(await get('/var/?v='), { status: 200, text: 'false\n' });
  t.equal(await zone('var_true'), 1, "the true block's zone counts its request");
  t.equal(await zone('var'), 3, "the location's counts the others, not that one");
});

t.test('= and != with a quoted value', async (t) => {
  t.equal((await get('/eq/', { 'X-A': 'a b' })).text, 'eq\n');
  t.equal((await get('/eq/', { 'X-A': 'a' })).text, 'ne\n');
  t.equal((await get('/eq/')).text, 'ne\n');
});

t.test('~, ~*, !~, !~* and their captures', async (t) => {
  t.equal((await get('/re/abc/12')).text, 're abc 12\n', '~ with two captures');
  t.equal((await get('/re/ci/xYz')).text, 'ci xYz\n', '~* is caseless');
  t.equal((await get('/re/zzz')).text, 'other\n', '!~* true when it does not match');
  t.equal((await get('/re/keep')).text, 'keep\n', '!~ and !~* false when they match');
  t.equal(await zone('re'), 4, 'blocks without status_zone count in the location\'s');
});

t.test('captures: the location regex\'s until an if regex matches', async (t) => {
  t.equal((await get('/loc/abc?x=y')).text, 'location capture abc\n');
  t.equal((await get('/loc/abc?x=qrs')).text, 'if capture q\n');
  t.equal((await get('/loc/abc')).text, 'none\n');
});

t.test('-e, -f, -d, !-e on a path with a variable', async (t) => {
  t.equal((await get('/files/a.txt')).text, 'file\n');
  t.equal((await get('/files/sub')).text, 'dir\n');
  t.equal((await get('/files/nothing')).text, 'none\n');
  t.equal((await get('/files/a')).text, 'exists\n', '-e');
  t.equal((await get('/files/')).text, 'dir\n', 'the location\'s own directory');
  t.equal((await get('/files/%00')).status, 400, 'a NUL is refused before any stat');
});

t.test('proxy_pass in if: a URI with captures, the location\'s headers, and its zone', async (t) => {
  const viaIf = await get('/proxy/x?to=abc&q=1');
  t.same(JSON.parse(viaIf.text), { url: '/to/abc?q=1', from: 'location' }, 'the whole URI made of captures; proxy_set_header inherited');
  const plain = await get('/proxy/x?to=a-b');
  t.same(JSON.parse(plain.text), { url: '/proxy/x?to=a-b', from: 'location' }, "no match: the location's proxy_pass");
  const same = await get('/proxy/y?same=1');
  t.same(JSON.parse(same.text), { url: '/proxy/y?same=1', from: 'location' }, "a block without content proxies as its location does");
  t.equal(await zone('proxied_if', 1), 1, 'counted in the block\'s zone');
  t.equal(await zone('same_if', 1), 1);
  t.equal(await zone('proxy', 1), 1, 'and not in the location\'s');
});

t.test('allow/deny are inherited: the block answers 403 as its location does', async (t) => {
  t.equal((await get('/denied/?a=1')).status, 403);
  t.equal((await get('/denied/')).status, 403);
  t.equal(await zone('denied_if'), 1);
  t.equal(await zone('denied'), 1);
});

t.test('api in if, with a capture of its condition', async (t) => {
  await get('/var/?v=1');
  const one = await getJson(`http://127.0.0.1:${site}/api/?zone=var_true`);
  t.equal(one.status, 200);
  t.equal(one.body.requests.total, 2, 'the zone the capture names');
  const location = await getJson(`http://127.0.0.1:${site}/api/http/location_zones/var_true/requests/total`);
  t.equal(location.body, 2, "no match: the location's api");
  const refused = await getJson(`http://127.0.0.1:${site}/api/?zone=..`);
  t.equal(refused.status, 200, 'a value the regex refuses: the location\'s api');
  t.ok(refused.body.http, 'which maps /api/ to /status/');
});

t.test('the order of return and if blocks, and the last true block', async (t) => {
  t.equal((await get('/first/?a=1')).text, 'first\n', 'a return before the blocks answers first');
  t.equal((await get('/after/?a=1')).text, 'after \n', 'a return after a block without one answers');
  t.equal(await zone('after_if'), 1, 'in the zone of the block the request is in');
  t.equal(await zone('after'), 0, 'and not in the location\'s');
  await get('/last/?a=1&b=1');
  await get('/last/?a=1');
  t.equal(await zone('last_b'), 1, 'both true: the last wins');
  t.equal(await zone('last_a'), 1);
});

t.test('variables and captures in a redirect', async (t) => {
  const moved = await fetch(`http://127.0.0.1:${site}/redirect/a%20b?x=1`, { redirect: 'manual' });
  t.equal(moved.status, 301);
  t.equal(moved.headers.get('location'), 'https://127.0.0.1/redirect/a%20b?x=1', '$host$request_uri');
  const found = await fetch(`http://127.0.0.1:${site}/redirect/?to=abc`, { redirect: 'manual' });
  t.equal(found.status, 302);
  t.equal(found.headers.get('location'), 'http://127.0.0.1/abcabc2', '$12 is $1 then "2", as nginx reads it');
  const crlf = await fetch(`http://127.0.0.1:${site}/redirect/%0d%0aSet-Cookie:%20a=b`, { redirect: 'manual' });
  t.equal(crlf.headers.get('set-cookie'), null, 'a decoded CR LF cannot add a header');
});

t.test('a server if answers before any location is searched', async (t) => {
  const before = await getJson(`http://127.0.0.1:${admin}/status/http/server_zones/site/requests/total`);
  const zones = await getJson(`http://127.0.0.1:${admin}/status/http/location_zones/`);
  const total = (z: typeof zones) => Object.values(z.body as Record<string, { requests: { total: number } }>).reduce((n, l) => n + l.requests.total, 0);
  t.same(await get('/var/?v=1', { 'X-Block': 'me' }), { status: 403, text: 'blocked me\n' });
  t.same(await get('/nowhere', { 'X-Block': 'you' }), { status: 403, text: 'blocked you\n' });
  t.equal((await get('/var/?v=1', { 'X-Block': 'not me' })).text, 'true 1\n', 'false: the locations answer');
  const after = await getJson(`http://127.0.0.1:${admin}/status/http/server_zones/site/requests/total`);
  t.equal((after.body as number) - (before.body as number), 3, 'counted in the server zone');
  t.equal(total(await getJson(`http://127.0.0.1:${admin}/status/http/location_zones/`)) - total(zones), 1, 'and in no location zone but for the one that reached a location');
});

t.test('limit_req in an if block limits only the requests the block takes', async (t) => {
  const limits = async () => (await getJson(`http://127.0.0.1:${admin}/status/http/limit_reqs/once`)).body;
  t.equal((await get('/limited/a?limited=1&key=k')).status, 200, 'the first of the key passes');
  for (let i = 0; i < 3; i++) t.equal((await get('/limited/a?limited=1&key=k')).status, 429, 'the next ones in the minute are refused, with the block\'s limit_req_status');
  for (let i = 0; i < 3; i++) t.equal((await get('/limited/a?key=k')).status, 200, 'without the condition the block does not apply');
  t.match(await limits(), { passed: 1, rejected: 3 }, 'only the block\'s requests were decided');
  const conns = (await getJson(`http://127.0.0.1:${admin}/status/http/limit_conns/held`)).body;
  // limit_conn is taken after limit_req: the 3 requests limit_req refused never reach it.
  t.match(conns, { passed: 4, rejected: 0 }, "the location's limit_conn applies inside the block and out of it");
});

t.test('zonal -t names the file and line of a bad condition', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'zonal-if-t-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'zonal.conf');
  writeFileSync(file, 'http {\n  server {\n    listen 127.0.0.1:1;\n    location / {\n      if ($uri ~ "(") { return 200; }\n      if ($arg_a) { deny all; }\n    }\n  }\n}\n');
  const { code, err } = await checkFile(file);
  t.equal(code, 1);
  t.match(err, `in "if" directive in ${file}:5`);
  t.match(err, `"deny" directive is not allowed here in ${file}:6`);
});
