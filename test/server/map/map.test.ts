// `map` (ngx_http_map_module) through bin/zonal with two workers: the documentation's
// keys (exact and caseless, hostnames wildcards, regexes with captures in the value,
// default, include), values with variables, a map written after the values that name it,
// evaluation kept per request unless `volatile`, and the uses of a map's result:
// a limit key, proxy_pass, status_zone and `if`. `-t` refuses what nginx refuses.
import t from 'tap';
import { createServer, request, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { get } from '../upstream/backends.js';

const [port, admin, back1, back2, slow] = await freePorts(5);

/** Backends that answer `b1`/`b2`; `slow` answers its request's X-T header after 150 ms. */
const servers: Server[] = [
  createServer((_req, res) => res.end('b1')),
  createServer((_req, res) => res.end('b2')),
  createServer((req, res) => setTimeout(() => res.end(String(req.headers['x-t'])), 150)),
];
await Promise.all(servers.map((s, i) => new Promise<void>((r) => s.listen([back1, back2, slow][i], '127.0.0.1', r))));
t.teardown(() => servers.forEach((s) => (s.closeAllConnections(), s.close())));

const conf = `worker_processes 2;
http {
  log_format m '$uri cached=$cached volatile=$volatile';
  server {
    listen 127.0.0.1:${port};
    location / { return 200 "$by_uri|$by_host|$chained|$with_vars\\n"; }
    location /limited { limit_req zone=mapped; proxy_pass http://up; }
    location /esc { return 200 $escaped; }
    location /pass { proxy_pass http://$backend; }
    location /zoned { status_zone $zone_key zone=mapped:4; return 200 zoned; }
    location /if { if ($is_bot) { return 403; } return 200 "not a bot"; }
    location /slow {
      access_log ${'${LOG}'} m;
      proxy_set_header X-T $cached-$volatile;
      proxy_pass http://127.0.0.1:${slow};
    }
  }
  server { listen 127.0.0.1:${admin} admin; location /status/ { api /status/; } }

  # Written after the server whose values name them, as nginx allows.
  map $uri $by_uri {
    default other;
    /Exact exact;
    \\default escaped;
    ~^/re/(\\w+)/(\\d+)$ "re $2 $1";
    ~*^/CASELESS caseless;
    include ${'${INCLUDED}'};
  }
  map $http_host $by_host {
    hostnames;
    default none;
    example.com exact;
    .example.org dot;
    *.a.example.org star;
    www.example.* tail;
  }
  map $by_uri $chained { exact from-exact; default "not ($by_uri)"; }
  map $arg_v $with_vars { "" empty; default "$arg_v at $uri"; }
  map $arg_k $escaped { \\default escaped; default plain; }
  map $http_x_key $limit_key { default ""; ~^(\\w+)$ key-$1; }
  limit_req_zone $limit_key zone=mapped:64k rate=1r/m;
  map $arg_to $backend { two 127.0.0.1:${back2}; default up; }
  upstream up { server 127.0.0.1:${back1}; }
  map $arg_z $zone_key { a zone-a; b zone-b; }
  map $http_user_agent $is_bot { default 0; ~*bot 1; }
  map $request_time $cached { default $request_time; }
  map $request_time $volatile { volatile; default $request_time; }
  map_hash_max_size 2048;
  map_hash_bucket_size 64;
}
`;

const text = conf.replace('${INCLUDED}', 'more.map').replace('${LOG}', 'm.log');
const z = await Zonal.start({
  'zonal.conf': text,
  'more.map': '/included from-include;\n',
});
t.teardown(() => z.stop());
/** A GET on a connection of its own (Host may be set, as fetch will not). */
function at(path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error(`GET ${path} timed out`)));
    req.end();
  });
}

t.test('keys: exact (caseless), escaped, regexes with captures, include, default', async (t) => {
  t.equal((await at('/exact')).text, 'exact|none|from-exact|empty\n', 'an exact key matches caselessly');
  t.equal((await at('/esc?k=default')).text, 'escaped', '\\default is the key "default"');
  t.equal((await at('/esc')).text, 'plain');
  t.equal((await at('/re/abc/42')).text.split('|')[0], 're 42 abc', 'captures in the value');
  t.equal((await at('/caseless/x')).text.split('|')[0], 'caseless', '~* is caseless');
  t.equal((await at('/RE/abc/42')).text.split('|')[0], 'other', '~ is not');
  t.equal((await at('/included')).text.split('|')[0], 'from-include', 'a key of an included file');
  t.equal((await at('/nothing')).text, 'other|none|not (other)|empty\n', 'the default, and a value with a variable');
  t.equal((await at('/x?v=1')).text.split('|')[3], '1 at /x\n', 'a value with variables');
});

t.test('hostnames: exact, .name, *.name, name.*, and a trailing dot', async (t) => {
  const host = async (h: string) => (await at('/', { host: h })).text.split('|')[1];
  t.equal(await host('EXAMPLE.com'), 'exact');
  t.equal(await host('example.com.'), 'exact', 'a trailing dot is no part of the name');
  t.equal(await host('example.org'), 'dot', '.example.org is the name itself');
  t.equal(await host('x.y.example.org'), 'dot', 'and its subdomains');
  t.equal(await host('b.a.example.org'), 'star', 'the longest leading wildcard wins');
  t.equal(await host('www.example.net'), 'tail');
  t.equal(await host('example.net'), 'none');
});

t.test("a map's result as a limit key, across two workers", async (t) => {
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) statuses.push((await get(port, '/limited')).status);
  t.same(statuses, [200, 200, 200, 200, 200, 200], 'an empty key is not limited');
  const keyed: number[] = [];
  for (let i = 0; i < 4; i++) keyed.push((await at('/limited', { 'x-key': 'abc' })).status);
  t.same(keyed, [200, 503, 503, 503], 'one key: one request a minute, whichever worker answers');
  t.equal((await at('/limited', { 'x-key': 'other' })).status, 200, 'another key has its own bucket');
  const { body } = await getJson(`http://127.0.0.1:${admin}/status/http/limit_reqs/mapped`);
  t.equal(body.passed, 2, 'the zone counted what passed (an empty key is not counted, as nginx skips it)');
  t.equal(body.rejected, 3, 'and what was refused');
});

t.test("a map's result in proxy_pass", async (t) => {
  t.equal((await at('/pass')).text, 'b1', 'the upstream the default names');
  t.equal((await at('/pass?to=two')).text, 'b2', 'an address');
});

t.test("a map's result as a status_zone key", async (t) => {
  await at('/zoned?z=a');
  await at('/zoned?z=a');
  await at('/zoned?z=b');
  await at('/zoned');
  const { body } = await getJson(`http://127.0.0.1:${admin}/status/http/location_zones/`);
  t.equal(body['zone-a']?.requests?.total, 2);
  t.equal(body['zone-b']?.requests?.total, 1);
});

t.test("a map's result in if", async (t) => {
  t.equal((await at('/if', { 'user-agent': 'GoogleBot/2' })).status, 403);
  t.equal((await at('/if', { 'user-agent': 'curl' })).text, 'not a bot');
});

t.test('evaluated once per request, unless volatile', async (t) => {
  const sent = (await at('/slow')).text;
  const [cachedSent, volatileSent] = sent.split('-');
  t.ok(Number(volatileSent) < 0.1, 'both read as the request went to the backend');
  const log = join(z.dir, 'm.log');
  const read = () => (existsSync(log) ? readFileSync(log, 'utf8').trim() : '');
  t.ok(await eventually(async () => read() !== ''), 'the request is logged');
  const line = read();
  const m = /cached=(\S+) volatile=(\S+)/.exec(line);
  t.equal(m?.[1], cachedSent, 'the log reads the value the request kept');
  t.ok(Number(m?.[2]) >= 0.14, `volatile: evaluated again at the log (${m?.[2]})`);
});

t.test('a reload defines the maps anew', async (t) => {
  t.ok(await z.reload(text.replace('/Exact exact;', '/Exact reloaded;').replace('map $arg_k $escaped', 'map $arg_k $unused').replace('location /esc { return 200 $escaped; }', '')));
  t.equal((await at('/exact')).text.split('|')[0], 'reloaded');
  t.equal((await at('/exact')).text.split('|')[0], 'reloaded', 'in every worker');
  t.notOk(await z.reload(text.replace('return 200 $escaped;', 'return 200 $gone;')), 'a configuration with an unknown variable is refused');
  t.equal((await at('/exact')).text.split('|')[0], 'reloaded', 'and the running maps stay');
});

t.test('-t refuses what nginx refuses', async (t) => {
  const wrap = (block: string) => `http {\n${block}\nserver { listen 127.0.0.1:${port}; }\n}\n`;
  const cases: Array<[string, RegExp]> = [
    ['map $uri $m { default $nope; }', /unknown "nope" variable/],
    ['map $nope $m { }', /unknown "nope" variable/],
    ['map $uri m { }', /invalid variable name "m"/],
    ['map $uri $remote_addr { }', /the duplicate "remote_addr" variable/],
    ['map $uri $m { a b c; }', /invalid number of the map parameters/],
    ['map $uri $m { default a; default b; }', /duplicate default map parameter/],
    ['map $uri $m { /a x; /A y; }', /conflicting parameter "\/A"/],
    ['map $uri $m { hostnames; www.*.com x; }', /invalid hostname or wildcard "www\.\*\.com"/],
    ['map $uri $m { ~(a x; }', /Invalid regular expression/],
    ['map $uri $m { }\nserver { listen 127.0.0.1:1; location / { return 200 $m$other; } }', /unknown "other" variable/],
  ];
  for (const [block, error] of cases) {
    const r = await checkConfig(wrap(block));
    t.not(r.code, 0, block);
    t.match(r.err, error, block);
  }
  const ok = await checkConfig(wrap('server { listen 127.0.0.1:2; location / { return 200 $later; } }\nmap $uri $later { default x; }'));
  t.equal(ok.code, 0, `a map after the values that name it: ${ok.err}`);
});
