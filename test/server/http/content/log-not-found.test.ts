// log_not_found (ngx_http_core_module): a file or an index directory that is not there is
// told in the error log at `error`, in nginx's words, unless log_not_found is off; a
// directory without an index file is told whatever it says (nginx's "is forbidden").
// The lines are those Debian's nginx 1.22 writes for the same requests.
import t from 'tap';
import { get } from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePorts } from '../../zonal.js';
import { Logged } from '../../log/logged.js';

const [port] = await freePorts(1);
const docs = mkdtempSync(join(tmpdir(), 'zonal-not-found-'));
t.teardown(() => rmSync(docs, { recursive: true, force: true }));
mkdirSync(join(docs, 'empty'));
mkdirSync(join(docs, 'quiet', 'empty'), { recursive: true });
writeFileSync(join(docs, 'here.txt'), 'here\n');

const z = await Logged.start(`
error_log stderr notice;
http {
    server {
        listen 127.0.0.1:${port};
        server_name files.test;
        root ${docs};
        location / { }
        location /quiet/ { log_not_found off; }
        location /tried/ { try_files $uri =404; }
    }
    server {
        listen 127.0.0.1:${port};
        server_name off.test;
        log_not_found off;
        root ${docs};
        location / { }
        location /loud/ { log_not_found on; }
    }
}
`);
t.teardown(() => z.stop());

/** GET `path` with `Host: host` (fetch cannot name a Host): the status. */
const status = (path: string, host: string) =>
  new Promise<number>((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    }).on('error', reject);
  });

/** The error log's lines a request made: its status and what was written for it. */
async function logged(path: string, host = 'files.test'): Promise<{ status: number; lines: string[] }> {
  const from = z.log.length;
  const code = await status(path, host);
  // A marker request's 404 line, logged after the request's own (one worker, in order).
  const mark = `/mark-${Math.random().toString(36).slice(2)}`;
  await status(mark, 'files.test');
  await z.waitLog(new RegExp(mark), 5000, from);
  const lines = z.log.slice(from).split('\n').filter((l) => l.includes(`request: "GET ${path} `));
  return { status: code, lines };
}

t.test('a missing file: open() failed, at error, with the request', async (t) => {
  const r = await logged('/missing.txt');
  t.equal(r.status, 404);
  t.equal(r.lines.length, 1);
  t.match(r.lines[0], new RegExp(`\\[error\\] \\d+#0: \\*\\d+ open\\(\\) "${docs}/missing.txt" failed \\(2: No such file or directory\\), client: 127\\.0\\.0\\.1, server: files\\.test, request: "GET /missing\\.txt HTTP/1\\.1", host: "files\\.test"$`));
  t.same((await logged('/here.txt')).lines, [], 'a file that is there: nothing');
});

t.test('a missing index directory: the first index "is not found"', async (t) => {
  const r = await logged('/nodir/');
  t.equal(r.status, 404);
  t.match(r.lines, [new RegExp(`\\[error\\] .*"${docs}/nodir/index\\.html" is not found \\(2: No such file or directory\\)`)]);
});

t.test('a directory without an index: "directory index ... is forbidden", whatever log_not_found says', async (t) => {
  const r = await logged('/empty/');
  t.equal(r.status, 403);
  t.match(r.lines, [new RegExp(`\\[error\\] .*directory index of "${docs}/empty/" is forbidden, client`)]);
  const quiet = await logged('/quiet/empty/');
  t.equal(quiet.status, 403);
  t.equal(quiet.lines.length, 1, 'log_not_found is about what is not there');
});

t.test('log_not_found off: neither a file nor an index directory is told; on in a location turns it back', async (t) => {
  for (const path of ['/quiet/missing.txt', '/quiet/nodir/']) {
    const r = await logged(path);
    t.equal(r.status, 404, path);
    t.same(r.lines, [], `${path}: nothing logged`);
  }
  const server = await logged('/missing.txt', 'off.test');
  t.equal(server.status, 404);
  t.same(server.lines, [], "the server's log_not_found off");
  const loud = await logged('/loud/missing.txt', 'off.test');
  t.equal(loud.lines.length, 1, 'a location turns it on again');
});

t.test('try_files that finds nothing is not an open() failure', async (t) => {
  const r = await logged('/tried/missing.txt');
  t.equal(r.status, 404);
  t.same(r.lines, []);
});
