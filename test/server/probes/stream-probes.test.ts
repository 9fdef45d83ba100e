// Active health probes of stream upstreams (upstream_probe in a stream server), through
// bin/zonal over 2 workers: a send=/test= probe flips a peer to unhealthy and back while
// connections avoid it, an `essential` peer stays `checking` until its first pass, and
// health.probes counts; `-t` refuses bad parameters naming file and line.
import { connect, createServer, type Server, type Socket } from 'node:net';
import t from 'tap';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';

interface Backend {
  readonly name: string;
  /** How it answers a probe's PING: PONG, ERR, or not yet (`hold`, until released). */
  health: 'pong' | 'err' | 'hold';
  /** Client sessions (anything but a PING). */
  served: number;
  probes: number;
  release(): void;
  close(): Promise<void>;
}

/** A line protocol on 127.0.0.1: `PING` gets PONG (or ERR), anything else the backend's
 * name; either way the backend then ends the connection. */
async function backend(name: string, port: number): Promise<Backend> {
  const held: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    let line = '';
    s.on('data', (d) => {
      line += d;
      if (!line.includes('\n')) return;
      if (line.startsWith('PING')) {
        b.probes++;
        const answer = () => s.end(b.health === 'err' ? 'ERR\r\n' : 'PONG\r\n');
        if (b.health === 'hold') held.push(answer);
        else answer();
        return;
      }
      b.served++;
      s.end(`${name}\n`);
    });
  });
  const b: Backend = {
    name,
    health: 'pong',
    served: 0,
    probes: 0,
    release: () => held.splice(0).forEach((f) => f()),
    close: () =>
      new Promise((r) => {
        b.release();
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return b;
}

/** A session through the proxy: the name of the backend that answered, or '' when the
 * proxy closed it without one (no peer to take it). */
function session(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ port, host: '127.0.0.1' });
    let got = '';
    const timer = setTimeout(() => (s.destroy(), reject(new Error(`no end of the session on ${port} within 5 s`))), 5000);
    s.on('data', (d) => (got += d));
    s.on('error', () => {});
    s.on('close', () => (clearTimeout(timer), resolve(got.trim())));
    s.write('HELLO\n');
  });
}

t.test('stream probes: unhealthy and back, connections avoid it over 2 workers, essential peers checking', async (t) => {
  const [pa, pb, pc, site, esite, admin] = await freePorts(6);
  const [a, b, c] = await Promise.all([backend('a', pa), backend('b', pb), backend('c', pc)]);
  c.health = 'hold';
  t.teardown(() => Promise.all([a, b, c].map((x) => x.close())));
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    upstream u {
        zone u 64k;
        server 127.0.0.1:${pa};
        server 127.0.0.1:${pb};
    }
    upstream e {
        zone e 64k;
        server 127.0.0.1:${pc};
    }
    server {
        listen 127.0.0.1:${site};
        proxy_pass u;
        upstream_probe hp interval=100ms "send=data:PING\\r\\n" "test=$upstream_probe_response ~ ^PONG" fails=2 passes=2;
    }
    server {
        listen 127.0.0.1:${esite};
        status_zone e;
        proxy_pass e;
        upstream_probe_timeout 10s;
        upstream_probe ep interval=5s "send=data:PING\\r\\n" essential;
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const peer = async (u: string, port: number) => (await getJson(`http://127.0.0.1:${admin}/status/stream/upstreams/${u}/peers/127.0.0.1:${port}`)).body;

  // The essential peer: checking while its first probe is unanswered, no connection.
  t.equal((await peer('e', pc)).state, 'checking', 'an essential probe: the peer starts checking');
  t.ok(await eventually(async () => c.probes >= 1, 3000), 'its probe was sent');
  t.equal((await peer('e', pc)).state, 'checking', 'and stays checking while it has not passed');
  t.equal(await session(esite), '', 'no connection goes to a checking peer');
  t.equal(c.served, 0);
  t.ok(
    await eventually(async () => (await getJson(`http://127.0.0.1:${admin}/status/stream/server_zones/e`)).body.sessions.bad_gateway === 1, 3000),
    'the session ended as bad_gateway (502)',
  );
  c.health = 'pong';
  c.release();
  t.ok(await eventually(async () => (await peer('e', pc)).state === 'up', 3000), 'up once the probe passed');
  t.equal(await session(esite), 'c', 'and it serves');
  t.match((await peer('e', pc)).health.probes, { fails: 0 }, 'its probe passed: no failure counted');

  t.ok(await eventually(async () => (await peer('u', pb)).health.probes.count >= 2, 3000), 'probes counted');
  const first = (await peer('u', pb)).health.probes;
  t.equal(first.fails, 0, 'none failed');
  t.ok(typeof first.last === 'string' && Date.parse(first.last) > 0, 'last probe time');

  // b answers ERR twice in a row (fails=2): unhealthy.
  b.health = 'err';
  t.ok(await eventually(async () => (await peer('u', pb)).state === 'unhealthy', 3000), 'fails=2 failed probes: unhealthy');
  t.ok((await peer('u', pb)).health.probes.fails >= 2, 'failed probes counted');
  t.equal((await peer('u', pa)).state, 'up', 'the other peer is up');
  const servedBefore = b.served;
  const answers = await Promise.all(Array.from({ length: 40 }, () => session(site)));
  t.same([...new Set(answers)], ['a'], 'connections avoid the unhealthy peer, in both workers');
  t.equal(b.served, servedBefore, 'it got none');

  // Healthy again after passes=2.
  b.health = 'pong';
  t.ok(await eventually(async () => (await peer('u', pb)).state === 'up', 3000), 'passes=2: up again');
  const back = await Promise.all(Array.from({ length: 20 }, () => session(site)));
  t.ok(back.includes('b'), 'and it serves again');
  t.match(zonal.log, /\[warn\] peer 127\.0\.0\.1:\d+ of upstream "u" is unhealthy: probe "hp" failed 2 times/);
  t.match(zonal.log, /\[notice\] peer 127\.0\.0\.1:\d+ of upstream "u" is healthy again/);
});

t.test('-t: stream upstream_probe checks, with file and line', async (t) => {
  const check = (server: string) => checkConfig(`stream {\nupstream u { server 127.0.0.1:9; }\nserver {\nlisten 127.0.0.1:1;\nproxy_pass u;\n${server}\n}\n}\n`);
  const at = / in <dir>\/zonal\.conf:6\n/;
  const refused = async (server: string, message: RegExp) => {
    const r = await check(server);
    t.equal(r.code, 1, server);
    t.match(r.err, message, server);
    t.match(r.err, at, 'names the file and line');
  };
  await refused('upstream_probe p interval=never;', /invalid parameter "interval=never" in "upstream_probe" directive/);
  await refused('upstream_probe p uri=/health;', /invalid parameter "uri=\/health"/);
  await refused('upstream_probe p max_body=1k;', /invalid parameter "max_body=1k"/);
  await refused('upstream_probe p max_response=lots;', /invalid parameter "max_response=lots"/);
  await refused('upstream_probe p send=hex:abc;', /invalid parameter "send=hex:abc" .*"hex:<hex digits>"/);
  await refused('upstream_probe p send=;', /invalid parameter "send="/);
  await refused('upstream_probe p "test=$upstream_status = 200";', /unknown "upstream_status" variable: a stream probe's test knows \$upstream_probe_response/);
  await refused('upstream_probe p max_response=0 test=$upstream_probe_response;', /"test" needs an answer, which "max_response=0" does not wait for/);
  await refused('upstream_probe p udp;', /"udp" requires "send"/);
  await refused('upstream_probe p persistent;', /"persistent" requires "essential"/);
  await refused('upstream_probe p mode=sometimes;', /invalid parameter "mode=sometimes"/);
  await refused('upstream_probe p; upstream_probe p;', /duplicate probe "p"/);
  await refused('upstream_probe_timeout soon;', /invalid value "soon" in "upstream_probe_timeout" directive/);
  const good = await check(
    'upstream_probe_timeout 2s;\nupstream_probe p port=6379 interval=1s "send=data:PING\\r\\n" "test=$upstream_probe_response ~ ^\\+PONG" essential persistent fails=3 passes=2 max_response=1k mode=idle;\nupstream_probe q udp send=hex:0001 mode=onfail;',
  );
  t.equal(good.code, 0, good.err);
});
