import t from 'tap';
import { Zone } from '../../src/engine/index.js';
import { start } from '../helpers.js';
t.test('x', async (t) => {
  const z = Zone.create('smoke', { size: 65536, workers: 2 });
  z.counters('c', 1).add(0, 3);
  const c = start('echo.ts', ['smoke']);
  t.match(await c.line(/value/), 'value 3');
  t.equal(await c.exit(), 0);
  z.remove();
});
