// zonal's `workers` member: each worker process samples its own Node runtime into its
// shard of the status zone (metrics/runtime.ts), and any process reads every worker's.
// Two worker processes here: their members, plausible figures after work they were made
// to do (CPU burnt, the loop blocked, garbage collected), prom-client's names in the text
// format with the worker label, and no member where it is not configured or once a
// worker stopped or died.
import t from 'tap';
import { Status } from '../../src/metrics/status.js';
import { runtimeMetrics } from '../../src/metrics/runtime.js';
import { checkExposition, promtool } from '../api/exposition.js';
import { start, uniqueName, type Child } from '../helpers.js';
import { apiOf, samples, shape } from './api.js';

// Long enough that polling every 10 ms sees every sample.
const INTERVAL = 200;

/** Polls `probe` until it gives a value, at most `ms`: what a worker samples shows at its
 * next sample. */
async function eventually<T>(probe: () => T | undefined, ms = 10_000): Promise<T | undefined> {
  const until = Date.now() + ms;
  for (let i = 0; i < 5000; i++) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > until) return undefined;
    await new Promise((r) => setTimeout(r, 10));
  }
  return undefined;
}

function worker(instance: string): Child {
  return start('runtime-worker.ts', [instance, String(INTERVAL)], {}, ['--expose-gc']);
}

t.test('absent unless the catalog asks for it', async (t) => {
  const status = Status.create({ http: { serverZones: [{ name: 'site' }] } }, { workers: 2, writer: true, instance: uniqueName('rtoff') });
  t.teardown(() => status.remove());
  const sampler = runtimeMetrics(status, { intervalMs: 50 });
  t.teardown(() => sampler.stop());
  const api = apiOf(status);
  t.same(Object.keys(api.get('/status/').body), ['server', 'connections', 'http'], 'the spec\'s members only');
  t.equal(api.get('/status/workers').status, 404);
  t.notMatch(api.text('/status/'), /process_|nodejs_/, 'and no runtime families in the text');
});

t.test('a sampler needs a worker slot, and one per process', async (t) => {
  const instance = uniqueName('rtslot');
  const status = Status.create({ runtime: true }, { workers: 2, writer: false, instance });
  t.teardown(() => status.remove());
  t.throws(() => runtimeMetrics(status), /worker slot/, 'not in a process that does not write');
  t.throws(() => runtimeMetrics(status, { intervalMs: 0 }), RangeError);
  const attached = Status.attach({ instance });
  const first = runtimeMetrics(attached, { intervalMs: 50 });
  t.throws(() => runtimeMetrics(attached), /already/, 'a second sampler of the same status');
  const api = apiOf(status);
  t.same(Object.keys(api.get('/status/workers').body).length, 1, 'the first one shows at once');
  first.stop();
  t.same(api.get('/status/workers').body, {}, 'stopped: its member goes');
  const again = runtimeMetrics(attached, { intervalMs: 50 });
  t.equal(api.get(`/status/workers/${Object.keys(api.get('/status/workers').body)[0]}/pid`).body, process.pid, 'and it may start again');
  again.stop();
});

t.test('two worker processes: one member each, plausible figures, prom-client names', async (t) => {
  const instance = uniqueName('rtwork');
  const status = Status.create({ http: { serverZones: [{ name: 'site' }] }, runtime: true }, { workers: 4, writer: false, instance });
  t.teardown(() => status.remove());
  const api = apiOf(status);
  const children = [worker(instance), worker(instance)];
  t.teardown(() => children.forEach((c) => c.proc.kill('SIGKILL')));
  const pids = (await Promise.all(children.map((c) => c.line(/^sampling \d+$/)))).map((l) => Number(l.split(' ')[1]));

  const root = api.get('/status/').body;
  t.same(Object.keys(root), ['server', 'connections', 'http', 'workers'], 'after the spec\'s members');
  // Each worker's slot, by pid.
  const slotOf = new Map<number, string>();
  const both = await eventually(() => {
    const w = api.get('/status/workers').body;
    return Object.keys(w).length === 2 && pids.every((p) => Object.values(w).some((x: any) => x.pid === p)) ? w : undefined;
  });
  t.ok(both, 'both workers show');
  for (const [slot, w] of Object.entries(both as Record<string, any>)) slotOf.set(w.pid, slot);
  t.same([...slotOf.values()].length, 2, 'each in a slot of its own');

  // Once a worker has sampled twice, every member is there (the delay needs a tick of the loop).
  const member = (i: number): any => api.get(`/status/workers/${slotOf.get(pids[i])}`).body;
  const full = await eventually(() => (member(0).event_loop.delay && member(0).event_loop.lag !== undefined ? member(0) : undefined));
  t.same(shape(full), [
    'pid: number', 'started: string',
    'event_loop/delay/min: number', 'event_loop/delay/mean: number', 'event_loop/delay/max: number', 'event_loop/delay/stddev: number',
    'event_loop/delay/p50: number', 'event_loop/delay/p90: number', 'event_loop/delay/p99: number',
    'event_loop/lag: number', 'event_loop/utilization: number',
    'gc/minor/count: number', 'gc/minor/time: number', 'gc/major/count: number', 'gc/major/time: number',
    'gc/incremental/count: number', 'gc/incremental/time: number', 'gc/weakcb/count: number', 'gc/weakcb/time: number',
    'heap/used: number', 'heap/total: number', 'heap/external: number',
    'rss: number', 'cpu/user: number', 'cpu/system: number', 'cpu/total: number',
    'handles: number', 'requests: number', 'resources: number', 'sampled: string',
  ]);
  t.ok(full.heap.used > 0 && full.heap.used <= full.heap.total, `heap used ${full.heap.used} of ${full.heap.total}`);
  t.ok(full.rss > full.heap.used, `rss ${full.rss} above heap used`);
  t.ok(full.event_loop.utilization >= 0 && full.event_loop.utilization <= 1, `utilization ${full.event_loop.utilization}`);
  t.ok(full.handles >= 1, `${full.handles} handles (the IPC channel at least)`);
  t.ok(Math.abs(Date.parse(full.started) - Date.now()) < 120_000, `started ${full.started}`);
  t.ok(Math.abs(Date.parse(full.sampled) - Date.now()) < 10_000, `sampled ${full.sampled}`);
  t.ok(full.event_loop.delay.min <= full.event_loop.delay.p50 && full.event_loop.delay.p50 <= full.event_loop.delay.max, 'delay: min <= p50 <= max');

  // CPU: 300 ms of user time spent shows as at least that much more (samples come after).
  const before = member(0).cpu.user;
  children[0].proc.send({ do: 'burn', ms: 300 });
  await children[0].line(/^burnt$/);
  const burnt = await eventually(() => (member(0).cpu.user >= before + 300 ? member(0).cpu.user : undefined));
  t.ok(burnt, `user CPU ${before} ms -> ${burnt} ms after 300 ms of it spent`);
  t.ok(member(0).cpu.total >= member(0).cpu.user, 'total is user and system');

  // The event loop blocked for 60 ms (twice, see the fixture): a sample taken after a block
  // has a delay of at least that (Node records the late tick when the loop runs again: in
  // the sample right after the block, or the one after).
  children[1].proc.send({ do: 'block', ms: 60 });
  const [, from, to] = (await children[1].line(/^blocked \d+ \d+$/)).split(' ').map(Number);
  const seen = new Set<string>();
  let samplesAfter = 0;
  let max = 0;
  await eventually(() => {
    const w = member(1);
    if (!w.event_loop.delay || Date.parse(w.sampled) < from || seen.has(w.sampled)) return undefined;
    seen.add(w.sampled);
    if (Date.parse(w.sampled) >= to) samplesAfter++;
    max = Math.max(max, w.event_loop.delay.max);
    return samplesAfter >= 2 || max >= 60 ? true : undefined;
  });
  t.ok(max >= 60, `delay max ${max} ms after 60 ms blocks (${seen.size} samples read)`);

  // Garbage collections: 3 forced full ones count as major.
  const majors = member(1).gc.major.count;
  children[1].proc.send({ do: 'gc', times: 3 });
  await children[1].line(/^collected$/);
  const after = await eventually(() => (member(1).gc.major.count >= majors + 3 ? member(1).gc.major : undefined));
  t.ok(after, `major collections ${majors} -> ${after?.count}`);
  t.ok(after!.time > 0, `in ${after!.time} ms`);

  // The text format: prom-client's names, a worker label, and what promtool takes.
  const text = api.text('/status/');
  t.same(checkExposition(text), [], 'a valid exposition');
  const complaint = promtool(text);
  if (complaint === 'absent') t.comment('promtool is not installed: checked by test/api/exposition.ts only');
  else t.equal(complaint, '', 'promtool check metrics takes it');
  const lines = samples(text);
  for (const slot of slotOf.values()) {
    for (const name of [
      'process_cpu_user_seconds_total', 'process_cpu_system_seconds_total', 'process_cpu_seconds_total', 'process_resident_memory_bytes',
      'process_start_time_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes',
      'nodejs_eventloop_lag_seconds', 'nodejs_eventloop_lag_min_seconds', 'nodejs_eventloop_lag_max_seconds', 'nodejs_eventloop_lag_mean_seconds',
      'nodejs_eventloop_lag_stddev_seconds', 'nodejs_eventloop_lag_p50_seconds', 'nodejs_eventloop_lag_p90_seconds', 'nodejs_eventloop_lag_p99_seconds',
      'nodejs_eventloop_utilization', 'nodejs_active_handles', 'nodejs_active_requests', 'nodejs_active_resources',
    ])
      t.ok(lines.some((l) => l.startsWith(`${name}{worker="${slot}"} `)), `${name}{worker="${slot}"}`);
    t.ok(lines.some((l) => l.startsWith(`nodejs_gc_duration_seconds_bucket{worker="${slot}",kind="major",le="0.001"} `)), 'GC: prom-client\'s buckets, by kind');
  }
  t.match(text, /^# TYPE nodejs_gc_duration_seconds histogram$/m);
  t.match(text, /^# TYPE process_cpu_user_seconds_total counter$/m);
  // Seconds in the text where the JSON has milliseconds.
  const cpu = Number(lines.find((l) => l.startsWith(`process_cpu_user_seconds_total{worker="${slotOf.get(pids[0])}"} `))!.split(' ')[1]);
  t.ok(Math.abs(cpu * 1000 - member(0).cpu.user) < 1000, `user CPU ${cpu} s in the text, ${member(0).cpu.user} ms in JSON`);
  const gcCount = Number(lines.find((l) => l.startsWith(`nodejs_gc_duration_seconds_count{worker="${slotOf.get(pids[1])}",kind="major"} `))!.split(' ')[1]);
  t.ok(gcCount >= majors + 3, `nodejs_gc_duration_seconds_count ${gcCount}`);
  // A branch's text has the same names, with the labels of its path.
  t.match(api.text(`/status/workers/${slotOf.get(pids[0])}/heap/used`), new RegExp(`^# TYPE nodejs_heap_size_used_bytes gauge\\nnodejs_heap_size_used_bytes\\{worker="${slotOf.get(pids[0])}"\\} \\d+\\n$`, 'm'));

  // A worker that stops sampling goes; one killed goes with its process.
  children[0].proc.send({ do: 'stop' });
  await children[0].line(/^stopped$/);
  t.same(Object.keys(api.get('/status/workers').body), [slotOf.get(pids[1])], 'stopped: only the other one');
  children[1].proc.kill('SIGKILL');
  await children[1].exit();
  t.same(api.get('/status/workers').body, {}, 'killed: its last sample is not shown as a worker');
});
