// The access log line of a request whose URI nginx cannot make (it climbs above `/`, or
// has a bad escape): answered 400 and logged, with $uri empty, since no URI was made, and
// $request_uri as the request line gave it (nginx's tests, http_variables.t: "no uri").
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, freePorts, Zonal } from '../zonal.js';
import { exchange } from '../http/raw.js';

const [port] = await freePorts(1);
const z = await Zonal.start({
  'zonal.conf': `
worker_processes 1;
http {
    log_format u "[$uri] [$request_uri] $status";
    server {
        listen 127.0.0.1:${port};
        access_log uri.log u;
        location / { return 200 OK; }
    }
}
`,
});
t.teardown(() => z.stop());

const log = join(z.dir, 'uri.log');
const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter((l) => l !== '') : []);

t.test('$uri is empty for a URI that cannot be made, and set for one that can', async (t) => {
  for (const target of ['/../bad_uri', '/bad%zz', '/a/b/..']) await exchange(port, `GET ${target} HTTP/1.0\r\nHost: localhost\r\n\r\n`);
  t.ok(await eventually(async () => lines().length >= 3, 5000), 'three lines');
  t.same(lines(), ['[] [/../bad_uri] 400', '[] [/bad%zz] 400', '[/a/] [/a/b/..] 200']);
});
