// The rewrite module end to end (issue 33, item 1): bin/zonal with `rewrite`, `break`,
// `set`, `return` and `if` in servers, locations and `if` blocks, real requests, a real
// peer that answers with the request target it was sent, and the error log nginx writes.
import t from 'tap';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePorts, Zonal } from '../zonal.js';

const [site, backendPort] = await freePorts(2);

const backend = createServer((req: IncomingMessage, res: ServerResponse) => {
  res.setHeader('Content-Type', 'text/plain');
  res.end(`peer ${req.url}`);
});
await new Promise<void>((resolve) => backend.listen(backendPort, '127.0.0.1', resolve));
t.teardown(() => backend.close());

const files = mkdtempSync(join(tmpdir(), 'zonal-rewrite-files-'));
t.teardown(() => rmSync(files, { recursive: true, force: true }));
mkdirSync(join(files, 'dir'));
writeFileSync(join(files, 'plain'), '');
mkdirSync(join(files, 'changed'));
writeFileSync(join(files, 'changed', 'q'), 'changed file\n');
writeFileSync(join(files, 'tool'), '');
chmodSync(join(files, 'tool'), 0o755);

const config = `
worker_processes 1;
events {}
http {
    server {
        listen 127.0.0.1:${site};
        server_name localhost;
        error_log error.log notice;
        rewrite_log on;

        # The server's directives run before any location is searched.
        rewrite ^/server-old/(.*)$ /plain/$1;
        if ($arg_stop) { set $why "server if"; return 403 "$why $arg_stop\\n"; }

        location /plain/ { return 200 "plain uri=$uri args=$args request_uri=$request_uri\\n"; }

        location /redirect/ {
            rewrite ^/redirect/keep/(.*)$ /to/$1 redirect;
            rewrite ^/redirect/add/(.*)$ /to/$1?c=d permanent;
            rewrite ^/redirect/drop/(.*)$ /to/$1? redirect;
            rewrite ^/redirect/url/(.*)$ https://example.com/$1;
            rewrite ^/redirect/scheme/(.*)$ $scheme://example.com/$1;
        }

        location /last/ {
            rewrite ^/last/(\\w+)/(\\w+)$ /plain/$2-$1 last;
            return 404;
        }

        location /chain/ {
            # Without a flag the next directive sees the new URI; the search comes after.
            rewrite ^/chain/(.*)$ /chain2/$1;
            rewrite ^/chain2/(.*)$ /plain/$1?x=$1;
        }
        location /chain-return/ {
            # ... and a return after it answers, before any search.
            rewrite ^ /plain/x;
            return 200 "returned uri=$uri\\n";
        }

        location /break/ {
            root ${files};
            rewrite ^/break/(.*)$ /changed/$1 break;
            return 200 "not reached\\n";
        }

        location /broken/ {
            rewrite ^/broken/(.*)$ /changed/$1 break;
            proxy_pass http://127.0.0.1:${backendPort}/ignored/;
        }

        location /pass/ {
            rewrite ^/pass/(.*)$ /passed/$1;
        }
        location /passed/ {
            proxy_pass http://127.0.0.1:${backendPort};
        }

        location /ep/ {
            error_page 404 /passed/from-error-page;
            return 404;
        }

        location /ep2/ {
            error_page 404 /passed;
            return 404;
        }

        location /stop/ {
            set $a first;
            break;
            set $a second;
            return 200 "not reached\\n";
        }

        location /bounce/ {
            # Internal redirects count with the rewrites: one counter of URI changes.
            rewrite ^/bounce/a$ /bounce/b;
            try_files /nothing-here /bounce/a;
        }

        location /loop/ {
            rewrite ^/loop/a$ /loop/b last;
            rewrite ^/loop/b$ /loop/a last;
        }

        location /set/ {
            set $who "$arg_name!";
            if ($arg_name = bob) { set $who "bob himself"; }
            add_header X-Who $who;
            return 200 "hello $who\\n";
        }

        location /named/ {
            rewrite ^/named/(?<first>\\w+)/(?<second>\\w+)$ /plain/$second/$first last;
        }

        location ~ ^/tail/(?<tail>.*)$ { return 200 "tail=$tail\\n"; }

        location /warn/ {
            return 200 "[$never_set]\\n";
        }
        location /nowarn/ {
            uninitialized_variable_warn off;
            return 200 "[$never_set]\\n";
        }
        location /sets/ { set $never_set x; }

        location /args/ {
            set $args "a=1&b=2";
            return 200 "args=$args arg_b=$arg_b\\n";
        }

        location /ifs/ {
            # The rewrite's own regex has no group: $1 of the if is kept in a variable.
            if ($uri ~ ^/ifs/(\\w+)$) { set $w $1; rewrite ^ /plain/if-$w last; }
            return 200 "no if\\n";
        }

        location /x/ {
            if (-x ${files}/$arg_f) { return 200 "x\\n"; }
            if (!-x ${files}/$arg_f) { return 200 "not x\\n"; }
        }

        location /empty/ {
            rewrite ^ "" ;
        }
    }
    server {
        listen 127.0.0.1:${site};
        server_name "~^(?<sub>\\w+)\\Q.named.test\\E$";
        location / { return 200 "sub=$sub\\n"; }
    }
}
`;

const zonal = await Zonal.start({ 'zonal.conf': config });
t.teardown(() => zonal.stop());
const errorLog = () => readFileSync(join(zonal.dir, 'error.log'), 'utf8');

async function get(path: string): Promise<{ status: number; text: string; location: string | null; headers: Headers }> {
  const r = await fetch(`http://127.0.0.1:${site}${path}`, { redirect: 'manual', headers: { Host: 'localhost' } });
  return { status: r.status, text: await r.text(), location: r.headers.get('location'), headers: r.headers };
}

t.test('redirects: the flags, a URL replacement, and the arguments', async (t) => {
  const keep = await get('/redirect/keep/a?x=1');
  t.equal(keep.status, 302, 'redirect: 302');
  t.equal(keep.location, `http://127.0.0.1:${site}/to/a?x=1`, "a relative replacement is made absolute, the request's arguments appended");
  // As nginx 1.22 answers: in the path a space (and `%`) of a capture escaped, `+` and `?` not.
  t.equal((await get('/redirect/keep/a%20b?k=1')).location, `http://127.0.0.1:${site}/to/a%20b?k=1`, 'a capture with a space');
  t.equal((await get('/redirect/keep/a+b%3Fc')).location, `http://127.0.0.1:${site}/to/a+b?c`, 'a capture with + and ?');
  const add = await get('/redirect/add/a?x=1');
  t.equal(add.status, 301, 'permanent: 301');
  t.equal(add.location, `http://127.0.0.1:${site}/to/a?c=d&x=1`, "the replacement's arguments, then the request's");
  const drop = await get('/redirect/drop/a?x=1');
  t.equal(drop.location, `http://127.0.0.1:${site}/to/a`, 'a trailing ? drops the arguments');
  const url = await get('/redirect/url/a?x=1');
  t.equal(url.status, 302, 'an https:// replacement redirects with 302');
  t.equal(url.location, 'https://example.com/a?x=1');
  const scheme = await get('/redirect/scheme/b');
  t.equal(scheme.status, 302, 'a $scheme replacement redirects');
  t.equal(scheme.location, 'http://example.com/b');
});

t.test('last searches the locations again with the new URI', async (t) => {
  const r = await get('/last/one/two?q=1');
  t.equal(r.status, 200);
  t.equal(r.text, 'plain uri=/plain/two-one args=q=1 request_uri=/last/one/two?q=1\n', '$uri is the new one, $request_uri what the client sent');
  const chain = await get('/chain/z');
  t.equal(chain.text, 'plain uri=/plain/z args=x=z request_uri=/chain/z\n', 'without a flag the rewrites go on, then the search');
  t.equal((await get('/chain-return/')).text, 'returned uri=/plain/x\n', 'a return after a rewrite without a flag answers');
  const server = await get('/server-old/s?k=v');
  t.equal(server.text, 'plain uri=/plain/s args=k=v request_uri=/server-old/s?k=v\n', "the server's rewrite runs before the search");
  const named = await get('/named/left/right');
  t.equal(named.text, 'plain uri=/plain/right/left args= request_uri=/named/left/right\n', 'named captures are variables');
  t.equal((await get('/tail/a/b')).text, 'tail=a/b\n', "a regex location's named group");
  t.equal((await get('/ifs/w')).text, 'plain uri=/plain/if-w args= request_uri=/ifs/w\n', 'a rewrite in an if block, with its captures');
  t.equal((await get('/ifs/')).text, 'no if\n');
});

t.test('break stops the rewrite directives; the location stays', async (t) => {
  t.equal((await get('/break/q')).text, 'changed file\n', '`rewrite ... break`: no search, no return, the file of the changed URI');
  t.equal((await get('/stop/')).status, 404, '`break` stops before the return: the location has no content');
  t.equal((await get('/broken/q?a=1')).text, 'peer /changed/q?a=1', "after `rewrite ... break` proxy_pass passes the changed URI whole, not its own URI's");
});

t.test('proxy_pass without a URI passes the rewritten URI and arguments', async (t) => {
  t.equal((await get('/pass/a%20b?x=1')).text, 'peer /passed/a%20b?x=1');
  const page = await get('/ep/?x=2');
  t.equal(page.status, 404, "an error page keeps the error's status");
  t.equal(page.text, 'peer /passed/from-error-page?x=2', "and an internal redirect's URI is what is passed, as nginx's");
  const auto = await get('/ep2/');
  t.equal(auto.status, 301, "an internal redirect to a proxied location's path without its slash: the auto redirect");
  t.equal(auto.location, `http://127.0.0.1:${site}/passed/`);
});

t.test('set, in a location and an if block, read by return and add_header', async (t) => {
  const r = await get('/set/?name=ann');
  t.equal(r.text, 'hello ann!\n');
  t.equal(r.headers.get('x-who'), 'ann!');
  t.equal((await get('/set/?name=bob')).text, 'hello bob himself\n', 'the if block sets it later');
  t.equal((await get('/?stop=now')).text, 'server if now\n', 'in a server if, before the locations');
  t.equal((await get('/?stop=now')).status, 403);
  t.equal((await get('/args/?a=9')).text, 'args=a=1&b=2 arg_b=2\n', 'set $args replaces the arguments');
});

t.test('an unset variable is empty, and told in the error log unless turned off', async (t) => {
  t.equal((await get('/warn/')).text, '[]\n');
  t.ok(await eventually(async () => /\[warn\] \d+#0: \*\d+ using uninitialized "never_set" variable, client: 127\.0\.0\.1, server: localhost, request: "GET \/warn\/ HTTP\/1\.1"/.test(errorLog())), 'warned');
  t.equal((await get('/nowarn/')).text, '[]\n');
  t.notMatch(errorLog(), /using uninitialized .*request: "GET \/nowarn\//, 'uninitialized_variable_warn off');
});

t.test('ten searches at most, then 500 and the cycle in the error log', async (t) => {
  const r = await get('/loop/a');
  t.equal(r.status, 500);
  t.ok(await eventually(async () => /\[error\] .*rewrite or internal redirection cycle while processing "\/loop\/[ab]", client: 127\.0\.0\.1, server: localhost, request: "GET \/loop\/a HTTP\/1\.1"/.test(errorLog())), 'the cycle logged');
  t.equal((await get('/bounce/a')).status, 500, 'rewrites and internal redirects, together');
  t.ok(await eventually(async () => /\[error\] .*rewrite or internal redirection cycle while (processing|internally redirecting to) "\/bounce\/[ab]", client: 127\.0\.0\.1, server: localhost, request: "GET \/bounce\/a HTTP\/1\.1"/.test(errorLog() + zonal.log)), 'their cycle logged');
  const empty = await get('/empty/');
  t.equal(empty.status, 500, 'an empty URI');
  t.ok(await eventually(async () => /the rewritten URI has a zero length/.test(errorLog())));
});

t.test('rewrite_log: notices of each match', async (t) => {
  await get('/last/one/two');
  t.ok(await eventually(async () => /\[notice\] \d+#0: \*\d+ "\^\/last\/\(\\w\+\)\/\(\\w\+\)\$" matches "\/last\/one\/two", client: 127\.0\.0\.1, server: localhost, request: /.test(errorLog())), 'a match, with the regex as written');
  t.ok(await eventually(async () => /\[notice\] .*rewritten data: "\/plain\/two-one", args: ""/.test(errorLog())), 'what it was rewritten to');
  t.ok(await eventually(async () => /\[notice\] .*does not match "\/last\/one\/two"/.test(errorLog())), "the server's rewrite that did not match");
});

t.test("a server_name regex's named groups are variables", async (t) => {
  const text = await new Promise<string>((resolve, reject) => {
    request({ host: '127.0.0.1', port: site, path: '/', headers: { Host: 'shop.named.test' } }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
  t.equal(text, 'sub=shop\n');
});

t.test('-x is true of a directory and an executable file, as in nginx', async (t) => {
  t.equal((await get('/x/?f=dir')).text, 'x\n');
  t.equal((await get('/x/?f=tool')).text, 'x\n');
  t.equal((await get('/x/?f=plain')).text, 'not x\n');
  t.equal((await get('/x/?f=none')).text, 'not x\n');
});
