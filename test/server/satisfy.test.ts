// satisfy (ngx_http_core_module): with `all`, the default, allow/deny and auth_basic must
// both let a request through; with `any`, either one does, and when neither does the
// answer is basic auth's 401 (nginx keeps a 401 over allow/deny's 403, so that the client
// may log in). Inherited by locations and by limit_except, as nginx merges it.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkConfig, freePorts, Zonal } from './zonal.js';

const [port] = await freePorts(1);
const docs = mkdtempSync(join(tmpdir(), 'zonal-satisfy-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
writeFileSync(join(docs, 'ok.txt'), 'ok\n');

const auth = `auth_basic "Area"; auth_basic_user_file users;`;
const z = await Zonal.start({
  users: 'user:{PLAIN}pass\n',
  'zonal.conf': `
http {
    server {
        listen 127.0.0.1:${port};
        location /any-allowed/ { alias ${docs}/; satisfy any; allow 127.0.0.1; deny all; ${auth} }
        location /any-denied/ { alias ${docs}/; satisfy any; deny all; ${auth} }
        location /any-access-only/ { alias ${docs}/; satisfy any; deny all; }
        location /all-denied/ { alias ${docs}/; deny all; ${auth} }
        location /all-allowed/ { alias ${docs}/; allow 127.0.0.1; deny all; ${auth} }
        location /dav/ {
            alias ${docs}/;
            satisfy any;
            limit_except GET { deny all; ${auth} }
        }
    }
}
`,
});
t.teardown(() => z.stop());

const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`user:${password}`).toString('base64')}` });
const ask = async (path: string, headers: Record<string, string> = {}, method = 'GET') => {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { method, headers });
  await res.text();
  return { status: res.status, challenge: res.headers.get('www-authenticate') };
};

t.test('satisfy any: an allowed address needs no credentials', async (t) => {
  t.equal((await ask('/any-allowed/ok.txt')).status, 200);
});

t.test('satisfy any: a denied address may log in; without credentials it is asked to (401, not 403)', async (t) => {
  const none = await ask('/any-denied/ok.txt');
  t.equal(none.status, 401);
  t.equal(none.challenge, 'Basic realm="Area"');
  t.equal((await ask('/any-denied/ok.txt', basic('pass'))).status, 200);
  t.equal((await ask('/any-denied/ok.txt', basic('wrong'))).status, 401);
  t.equal((await ask('/any-access-only/ok.txt')).status, 403, 'without auth_basic, the access answer stays');
});

t.test('satisfy all (the default): a denied address is refused whatever it sends', async (t) => {
  t.equal((await ask('/all-denied/ok.txt', basic('pass'))).status, 403);
  t.equal((await ask('/all-allowed/ok.txt')).status, 401, 'an allowed address still logs in');
  t.equal((await ask('/all-allowed/ok.txt', basic('pass'))).status, 200);
});

t.test("limit_except takes the location's satisfy", async (t) => {
  t.equal((await ask('/dav/ok.txt')).status, 200, 'GET is not limited');
  t.equal((await ask('/dav/ok.txt', {}, 'DELETE')).status, 401, 'the others: denied, asked to log in');
});

t.test('-t: satisfy takes all or any, in http, server and location', async (t) => {
  const bad = await checkConfig('http { server { listen 127.0.0.1:1; satisfy some; } }\n');
  t.equal(bad.code, 1);
  t.match(bad.err, /\[emerg\] invalid value "some" in "satisfy" directive, it must be "all" or "any" in <dir>\/zonal\.conf:1/);
  const inLimitExcept = await checkConfig('http { server { listen 127.0.0.1:1; location / { limit_except GET { satisfy any; } } } }\n');
  t.match(inLimitExcept.err, /"satisfy" directive is not allowed here/);
  t.equal((await checkConfig('http { satisfy any; server { listen 127.0.0.1:1; satisfy all; } }\n')).code, 0);
});
