// Runs an example as a user would (under this process's TypeScript loader) and returns
// its exit code and output; killed after 60 s.
import { fileURLToPath } from 'node:url';
import { forkNode } from '../helpers.js';

export async function runExample(name: string, args: string[] = []): Promise<{ code: number | null; out: string }> {
  const script = fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
  const child = forkNode(script, args, { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('exit', (c) => (clearTimeout(timer), resolve(c)));
  });
  return { code, out };
}
