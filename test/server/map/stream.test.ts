// `map` and `geo` in stream (ngx_stream_map_module, ngx_stream_geo_module) through
// bin/zonal with two workers: a session's log line reads them, with regex captures,
// hostnames-free keys, default, a geo of the client and one of a value; `-t` knows them
// in stream values and refuses http's geo `proxy`.
import t from 'tap';
import { createServer, connect } from 'node:net';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { checkConfig, eventually, freePorts, Zonal } from '../zonal.js';

const [port, other, backend, mapped] = await freePorts(4);
const echo = createServer((s) => s.pipe(s));
await new Promise<void>((r) => echo.listen(backend, '127.0.0.1', r));
t.teardown(() => echo.close());

const conf = `worker_processes 2;
stream {
  log_format maps '$server_port port=$by_port client=$by_client server=$by_server chained=$chained';
  access_log maps.log maps;
  map $server_port $by_port { ${port} first; ~^(\\d)(\\d+)$ "other $1 $2"; }
  map $by_port $chained { first one; default "not first"; }
  geo $by_client { default none; 127.0.0.0/8 loopback; 127.0.0.1 one; }
  geo $server_addr $by_server { default none; 127.0.0.0/24 low; }
  server { listen 127.0.0.1:${port}; proxy_pass 127.0.0.1:${backend}; }
  server { listen 127.0.0.1:${other}; proxy_pass 127.0.0.1:${backend}; }
  map $server_port $peer { ${mapped} 127.0.0.1:${backend}; default 127.0.0.1:1; }
  server { listen 127.0.0.1:${mapped}; proxy_pass $peer; }
}
`;
const z = await Zonal.start({ 'zonal.conf': conf });
t.teardown(() => z.stop());

function session(to: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let echoed = '';
    // The client ends once its bytes came back: the session ends with the first side.
    const s = connect(to, '127.0.0.1', () => s.write('ping'));
    s.on('data', (d) => {
      echoed += d;
      if (echoed === 'ping') s.end();
    });
    s.on('close', () => resolve(echoed));
    s.on('error', reject);
    s.setTimeout(10_000, () => s.destroy(new Error('timed out')));
  });
}

t.test("a session's log line reads the maps and geos", async (t) => {
  await session(port);
  await session(other);
  const log = join(z.dir, 'maps.log');
  const read = () => (existsSync(log) ? readFileSync(log, 'utf8') : '');
  t.ok(await eventually(async () => read().trim().split('\n').length >= 2, 5000), 'both sessions logged');
  const lines = read().trim().split('\n');
  const of = (p: number) => lines.find((l) => l.startsWith(`${p} `));
  t.equal(of(port), `${port} port=first client=one server=low chained=one`);
  const digits = String(other);
  t.equal(of(other), `${other} port=other ${digits[0]} ${digits.slice(1)} client=one server=low chained=not first`);
});

t.test("a map's result in proxy_pass", async (t) => {
  t.equal(await session(mapped), 'ping', 'the peer the map names');
});

t.test('-t', async (t) => {
  const stream = (body: string) => `stream {\n${body}\nserver { listen 127.0.0.1:${port}; proxy_pass 127.0.0.1:${backend}; }\n}\n`;
  const ok = await checkConfig(stream(`log_format f '$later'; access_log x.log f;\nmap $remote_addr $later { default x; }`));
  t.equal(ok.code, 0, `a map after the format that names it: ${ok.err}`);
  const proxy = await checkConfig(stream('geo $g { proxy 127.0.0.1; }'));
  t.match(proxy.err, /invalid network "proxy"/, 'geo proxy is http\'s');
  const unknown = await checkConfig(stream('map $http_host $m { }'));
  t.match(unknown.err, /unknown "http_host" variable/, 'stream values know stream variables only');
});
