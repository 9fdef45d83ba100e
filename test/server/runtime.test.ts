// status_runtime (issue 31, item 8): its checks, what the catalog says with it and
// without, and the server run with it: every worker of bin/zonal samples its runtime
// into /status/workers, which the text format exports under prom-client's names.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { formatConfigError, loadConfig } from '../../src/server/config/load.js';
import { statusConfigOf } from '../../src/server/catalog.js';
import { checkExposition, promtool } from '../api/exposition.js';
import { eventually, freePorts, getJson, Zonal } from './zonal.js';

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'zonal-runtime-'));
t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));

function load(text: string) {
  const dir = fs.mkdtempSync(path.join(root, 'case-'));
  const file = path.join(dir, 'zonal.conf');
  fs.writeFileSync(file, text);
  const { config, errors } = loadConfig(file, { cpus: 2 });
  return { config, errors: errors.map((e) => formatConfigError(e).replaceAll(dir, '<dir>')) };
}

const http = 'http { server { listen 127.0.0.1:9100; status_zone site; } }\n';

t.test('status_runtime: on, off, and where it may be written', async (t) => {
  const on = load(`status_runtime on;\n${http}`);
  t.same(on.errors, []);
  t.equal(statusConfigOf(on.config!).runtime, true, 'on: the catalog has runtime');
  for (const text of [`status_runtime off;\n${http}`, http]) {
    const off = load(text);
    t.same(off.errors, []);
    t.notOk('runtime' in statusConfigOf(off.config!), 'off or not written: the tree is the spec\'s');
  }
  t.same(load(`status_runtime yes;\n${http}`).errors, ['zonal: [emerg] invalid value "yes" in "status_runtime" directive, it must be "on" or "off" in <dir>/zonal.conf:1']);
  t.match(load(`status_runtime on;\nstatus_runtime off;\n${http}`).errors, [/"status_runtime" directive is duplicate in <dir>\/zonal.conf:2/]);
  t.match(load('http { status_runtime on; server { listen 127.0.0.1:9100; } }\n').errors, [/"status_runtime" directive is not allowed here in <dir>\/zonal.conf:1/]);
});

t.test('a running server: one member per worker, prom-client names in the text', async (t) => {
  const [site] = await freePorts(1);
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
status_runtime on;
http {
    server {
        listen 127.0.0.1:${site};
        status_zone site;
        location /status/ { api /status/; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const base = `http://127.0.0.1:${site}/status/`;
  const pids = zonal.workers();
  t.equal(pids.length, 2, 'two workers');
  let workers: Record<string, any> = {};
  const both = await eventually(async () => {
    workers = (await getJson(`${base}workers`)).body;
    return Object.keys(workers).length === 2 && pids.every((p) => Object.values(workers).some((w) => w.pid === p) && Object.values(workers).every((w) => w.event_loop.delay));
  }, 10_000);
  t.ok(both, 'both workers show, each sampled after a tick of its loop');
  t.same(Object.keys((await getJson(base)).body).at(-1), 'workers', 'after the spec\'s members');
  for (const [slot, w] of Object.entries(workers)) {
    t.ok(w.heap.used > 0 && w.heap.used <= w.heap.total && w.rss > w.heap.used, `worker ${slot}: heap ${w.heap.used} of ${w.heap.total}, rss ${w.rss}`);
    t.ok(w.cpu.user > 0, `worker ${slot}: ${w.cpu.user} ms of user CPU`);
  }
  const res = await fetch(`${base}?format=prometheus`);
  const text = await res.text();
  t.same(checkExposition(text), []);
  const complaint = promtool(text);
  if (complaint !== 'absent') t.equal(complaint, '', 'promtool check metrics takes it');
  for (const slot of Object.keys(workers)) {
    t.match(text, new RegExp(`^process_cpu_user_seconds_total\\{worker="${slot}"\\} [0-9.e-]+$`, 'm'), `worker ${slot}'s CPU, as prom-client names it`);
    t.match(text, new RegExp(`^nodejs_heap_size_used_bytes\\{worker="${slot}"\\} \\d+$`, 'm'));
    t.match(text, new RegExp(`^nodejs_gc_duration_seconds_count\\{worker="${slot}",kind="minor"\\} \\d+$`, 'm'));
  }
  t.match(text, /^zonal_http_server_zones_requests_total\{zone="site"\} \d+$/m, 'beside the tree\'s own families');
});
