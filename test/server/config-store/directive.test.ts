// config_store at `-t` (issue 34): the URL, the files and the parameters are checked with
// nginx-style messages naming the file and line, and a configuration without the
// directive has no /status/config_store member and never loads etcd's client.
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkConfig, freePorts, getJson, Zonal } from '../zonal.js';

const http = 'http { upstream u { server 127.0.0.1:1; } }';

t.test('-t refuses a bad config_store, naming file:line', async (t) => {
  const wrong: Array<[string, RegExp]> = [
    ['config_store http://127.0.0.1:2379/z;', /invalid URL "http:\/\/127\.0\.0\.1:2379\/z" in "config_store" directive, it must be etcd:\/\/host:port\[,host:port\.\.\.\]\/prefix/],
    ['config_store etcd://127.0.0.1/z;', /invalid endpoint "127\.0\.0\.1" in "config_store" directive/],
    ['config_store etcd://127.0.0.1:99999/z;', /invalid endpoint "127\.0\.0\.1:99999"/],
    ['config_store etcd://127.0.0.1:2379,:2380/z;', /invalid endpoint ":2380"/],
    ['config_store etcd://127.0.0.1:2379;', /invalid prefix "" in "config_store" directive/],
    ['config_store etcd://127.0.0.1:2379/;', /invalid prefix "\/"/],
    ['config_store etcd://127.0.0.1:2379/z timeout=0;', /invalid timeout "0" in "config_store" directive/],
    ['config_store etcd://127.0.0.1:2379/z colour=blue;', /invalid parameter "colour=blue"/],
    ['config_store etcd://127.0.0.1:2379/z ca=/nonexistent/ca.pem;', /cannot read "\/nonexistent\/ca\.pem" of "ca=" in "config_store" directive \(ENOENT\)/],
    ['config_store etcd://127.0.0.1:2379/z user=zonal;', /needs both "user=" and "password_file="/],
    ['config_store etcd://127.0.0.1:2379/z cert=zonal.conf;', /needs both "cert=" and "key="/],
    ['config_store etcd://127.0.0.1:2379/z cert=zonal.conf key=zonal.conf;', /needs "ca=" to speak TLS/],
    ['config_store etcd://127.0.0.1:2379/a;\nconfig_store etcd://127.0.0.1:2379/b;', /"config_store" directive is duplicate/],
    ['http { config_store etcd://127.0.0.1:2379/z; }', /"config_store" directive is not allowed here/],
  ];
  for (const [text, error] of wrong) {
    const r = await checkConfig(`${text}\n${http}\n`);
    t.not(r.code, 0, `${text}: refused`);
    t.match(r.err, error, text);
    t.match(r.err, /zonal\.conf:[12]/, 'names the file and line');
  }
  const good = await checkConfig(`config_store etcd://127.0.0.1:2379,[::1]:2380,etcd.example:2379/fleet/a/ timeout=500ms ca=zonal.conf cert=zonal.conf key=zonal.conf user=z password_file=zonal.conf cache=c.json;\n${http}\n`);
  t.equal(good.code, 0, `a full directive passes: ${good.err}`);
});

t.test('without config_store: no member', async (t) => {
  const [admin] = await freePorts(1);
  const z = await Zonal.start({ 'zonal.conf': `http { upstream u { zone u 64k; server 127.0.0.1:1; } server { listen 127.0.0.1:${admin} admin; location / { api /; } } }\n` });
  t.teardown(() => z.stop());
  t.equal((await getJson(`http://127.0.0.1:${admin}/status/config_store`)).status, 404);
  t.notOk(Object.keys((await getJson(`http://127.0.0.1:${admin}/status/`)).body).includes('config_store'));
});

t.test("etcd's client is loaded by the primary only, and only for config_store", async (t) => {
  // What the compiled server imports: `etcd3` only from the store's module, by a dynamic
  // import, and that module only from the primary, by a dynamic import. A worker, and a
  // configuration without the directive, never load it (the start time stays, issue 32).
  const dist = fileURLToPath(new URL('../../../dist/src/', import.meta.url));
  const files = (readdirSync(dist, { recursive: true }) as string[]).filter((f) => f.endsWith('.js'));
  const naming = (re: RegExp) => files.filter((f) => re.test(readFileSync(join(dist, f), 'utf8'))).sort();
  t.same(naming(/['"]etcd3['"]/), ['server/config-store/store.js'], 'one module names etcd3');
  t.match(readFileSync(join(dist, 'server/config-store/store.js'), 'utf8'), /await import\('etcd3'\)/, 'and imports it dynamically');
  t.notMatch(readFileSync(join(dist, 'server/config-store/store.js'), 'utf8'), /^import [^t].*['"]etcd3['"]/m, 'never statically');
  t.same(naming(/config-store\/store\.js/), ['server/primary.js'], 'the store is the primary\'s');
  t.match(readFileSync(join(dist, 'server/primary.js'), 'utf8'), /await import\('\.\/config-store\/store\.js'\)/, 'imported when a configuration has config_store');
  // The bundle bin/zonal runs (when built): the same, chunk by chunk.
  const bundle = fileURLToPath(new URL('../../../dist/bundle/', import.meta.url));
  if (!existsSync(join(bundle, 'inputs.json'))) return;
  const chunks = readdirSync(bundle).filter((f) => f.endsWith('.js'));
  const withEtcd = chunks.filter((f) => /["']etcd3["']/.test(readFileSync(join(bundle, f), 'utf8')));
  t.same(withEtcd.filter((f) => f.startsWith('worker')), [], 'no chunk of the worker names etcd3');
  t.equal(withEtcd.length, 1, 'one chunk of the primary does');
  t.match(readFileSync(join(bundle, withEtcd[0]), 'utf8'), /import\("etcd3"\)/, 'dynamically');
  t.notMatch(readFileSync(join(bundle, withEtcd[0]), 'utf8'), /from\s*"etcd3"/, 'never statically');
});

t.test('with config_store and etcd unreachable: a write through a worker gets 503, nothing changes', async (t) => {
  const [data, nobody] = await freePorts(2);
  const z = await Zonal.start({
    'zonal.conf': `worker_processes 2;\nconfig_store etcd://127.0.0.1:${nobody}/z timeout=200ms cache=c.json;\nhttp { upstream u { zone u 64k; server 127.0.0.1:1; } server { listen 127.0.0.1:${data}; location / { api /; } } }\n`,
  });
  t.teardown(() => z.stop());
  const w = await fetch(`http://127.0.0.1:${data}/config/http/upstreams/u/servers/127.0.0.1:2`, { method: 'PUT', headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.equal(w.status, 503, 'a write while etcd does not answer gets 503');
  t.match(await w.json(), { error: 'ServiceUnavailable', description: /not changed/ });
  t.same(Object.keys((await getJson(`http://127.0.0.1:${data}/config/http/upstreams/u/servers`)).body), ['127.0.0.1:1'], 'nothing changed');
  t.match(z.log, new RegExp(`config_store: 127\\.0\\.0\\.1:${nobody}`), 'the primary said what failed');
});
