// The README's embedding example must keep working and keep printing exact sums.
import t from 'tap';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

t.test('examples/cluster-counters: two workers, exact sums in the primary', async (t) => {
  const script = fileURLToPath(new URL('../../examples/cluster-counters.ts', import.meta.url));
  const child = fork(script, ['200000'], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const code = await new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (c) => (clearTimeout(timer), resolve(c)));
  });
  t.equal(code, 0, 'the example exits cleanly');
  t.match(out, /requests: 400000/, 'every request of both workers is counted');
  t.match(out, /'4xx': 40000/, 'every tenth request was a 404');
  t.match(out, /received: 140000000/);
  t.match(out, /the sums are exact/);
});
