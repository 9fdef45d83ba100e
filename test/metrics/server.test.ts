// /status/server from one API handler across reloads, and from two mounts, one with
// config_files: what it keeps between answers must never outlive the catalog or the files.
import t from 'tap';
import { bodyText, createApi } from '../../src/api/index.js';
import { Status } from '../../src/metrics/status.js';
import { uniqueName } from '../helpers.js';

t.test('the server branch follows reloads and shows config_files only where the mount allows', async (t) => {
  const first = { '/etc/zonal/zonal.conf': 'http {\n}\n' };
  const status = Status.create({ http: { serverZones: [{ name: 'site' }] } }, { workers: 1, instance: uniqueName('server'), configFiles: first });
  t.teardown(() => status.remove());
  const api = createApi({
    status,
    mounts: [
      { location: '/status/', api: '/status/' },
      { location: '/files/', api: '/status/', configFiles: true },
    ],
  });
  const get = (path: string) => JSON.parse(bodyText(api({ method: 'GET', path, query: '', address: '127.0.0.1' })!));
  for (let round = 0; round < 3; round++) {
    t.same(Object.keys(get('/status/server')), ['version', 'address', 'generation', 'load_time'], `round ${round}: no config_files`);
    t.same(get('/files/server').config_files, first, `round ${round}: config_files where allowed`);
  }

  const second = { '/etc/zonal/zonal.conf': 'http {\n    include more.conf;\n}\n', '/etc/zonal/more.conf': '\n' };
  status.reload({ http: { serverZones: [{ name: 'site' }] }, server: { version: '1.2.3', build: 'b1' } }, second);
  for (let round = 0; round < 2; round++) {
    const plain = get('/status/server');
    t.same(Object.keys(plain), ['version', 'build', 'address', 'generation', 'load_time'], `after the reload, round ${round}: build shows`);
    t.equal(plain.generation, 1, 'the new generation');
    t.same([plain.version, plain.build], ['1.2.3', 'b1']);
    t.same(get('/files/server').config_files, second, 'the new files');
    t.same(get('/files/server/config_files'), second, 'and by path');
  }
  t.same(get('/files/').server.config_files, second, 'in the whole tree too');
});
