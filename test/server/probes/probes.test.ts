// Active health probes through bin/zonal over 2 workers: a probe flips a peer to
// unhealthy and back, requests avoid it meanwhile, `essential` peers stay `checking`
// until a probe passed, and health.probes counts.
import { createServer, type Server } from 'node:http';
import t from 'tap';
import { checkConfig, eventually, freePorts, getJson, Zonal } from '../zonal.js';

interface Backend {
  readonly name: string;
  /** What /health answers; `hold` keeps its requests waiting until set otherwise. */
  health: number | 'hold';
  /** Requests other than /health. */
  served: number;
  probes: number;
  release(): void;
  close(): Promise<void>;
}

async function backend(name: string, port: number): Promise<Backend> {
  const held: Array<() => void> = [];
  const b: Backend = {
    name,
    health: 200,
    served: 0,
    probes: 0,
    release: () => held.splice(0).forEach((f) => f()),
    close: () => new Promise((r) => (b.release(), server.close(() => r()))),
  };
  const server: Server = createServer((req, res) => {
    if (req.url === '/health') {
      b.probes++;
      const answer = () => {
        res.statusCode = b.health === 'hold' ? 200 : b.health;
        res.end('health');
      };
      if (b.health === 'hold') held.push(answer);
      else answer();
      return;
    }
    b.served++;
    res.end(name);
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  return b;
}

t.test('probes: unhealthy and back, traffic avoids it over 2 workers, essential peers checking', async (t) => {
  const [pa, pb, pc, site, admin] = await freePorts(5);
  const [a, b, c] = await Promise.all([backend('a', pa), backend('b', pb), backend('c', pc)]);
  c.health = 'hold';
  t.teardown(() => Promise.all([a, b, c].map((x) => x.close())));
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    upstream u {
        zone u;
        server 127.0.0.1:${pa};
        server 127.0.0.1:${pb};
    }
    upstream e {
        zone e;
        server 127.0.0.1:${pc};
    }
    server {
        listen 127.0.0.1:${site};
        location / {
            proxy_pass http://u;
            upstream_probe hp uri=/health interval=100ms "test=$upstream_status = 200" fails=2 passes=2;
        }
        location /e/ {
            proxy_pass http://e;
            upstream_probe ep uri=/health interval=5s essential;
        }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const peer = async (u: string, port: number) => (await getJson(`http://127.0.0.1:${admin}/status/http/upstreams/${u}/peers/127.0.0.1:${port}`)).body;

  // The essential peer: checking while its first probe is unanswered, no traffic.
  const checking = await peer('e', pc);
  t.equal(checking.state, 'checking', 'an essential probe: the peer starts checking');
  t.ok(await eventually(async () => c.probes >= 1, 3000), 'its probe was sent');
  t.equal((await peer('e', pc)).state, 'checking', 'and stays checking while it has not passed');
  t.equal((await fetch(`http://127.0.0.1:${site}/e/`)).status, 502, 'no request goes to a checking peer');
  t.equal(c.served, 0);
  c.health = 200;
  c.release();
  t.ok(await eventually(async () => (await peer('e', pc)).state === 'up', 3000), 'up once the probe passed');
  t.equal(await (await fetch(`http://127.0.0.1:${site}/e/`)).text(), 'c', 'and it serves');

  t.ok(await eventually(async () => (await peer('u', pb)).health.probes.count >= 2, 3000), 'probes counted');
  const first = (await peer('u', pb)).health.probes;
  t.equal(first.fails, 0, 'none failed');
  t.ok(typeof first.last === 'string' && Date.parse(first.last) > 0, 'last probe time');

  // b fails its probe twice in a row (fails=2): unhealthy.
  b.health = 503;
  t.ok(await eventually(async () => (await peer('u', pb)).state === 'unhealthy', 3000), 'fails=2 failed probes: unhealthy');
  t.ok((await peer('u', pb)).health.probes.fails >= 2, 'failed probes counted');
  t.equal((await peer('u', pa)).state, 'up', 'the other peer is up');
  const servedBefore = b.served;
  const answers = await Promise.all(Array.from({ length: 40 }, () => fetch(`http://127.0.0.1:${site}/`).then((r) => r.text())));
  t.same([...new Set(answers)], ['a'], 'requests avoid the unhealthy peer, in both workers');
  t.equal(b.served, servedBefore, 'it got none');

  // Healthy again after passes=2.
  b.health = 200;
  t.ok(await eventually(async () => (await peer('u', pb)).state === 'up', 3000), 'passes=2: up again');
  const back = await Promise.all(Array.from({ length: 20 }, () => fetch(`http://127.0.0.1:${site}/`).then((r) => r.text())));
  t.ok(back.includes('b'), 'and it serves again');
  t.match(zonal.log, /\[warn\] peer 127\.0\.0\.1:\d+ of upstream "u" is unhealthy: probe "hp" failed 2 times/);
  t.match(zonal.log, /\[notice\] peer 127\.0\.0\.1:\d+ of upstream "u" is healthy again/);
});

t.test('-t: upstream_probe checks', async (t) => {
  const check = (location: string) => checkConfig(`http {\nupstream u { server 127.0.0.1:9; }\nserver {\nlisten 127.0.0.1:1;\nlocation / {\n${location}\n}\n}\n}\n`);
  t.match((await check('upstream_probe p;')).err, /"upstream_probe" needs a "proxy_pass" in its location: .*zonal\.conf:6/);
  t.match((await check('proxy_pass http://u; upstream_probe p interval=never;')).err, /invalid parameter "interval=never" in "upstream_probe" directive/);
  t.match((await check('proxy_pass http://u; upstream_probe p persistent;')).err, /"persistent" requires "essential"/);
  t.match((await check('proxy_pass http://u; upstream_probe p "test=$nope = 1";')).err, /unknown "nope" variable/);
  t.match((await check('proxy_pass http://u; upstream_probe p mode=sometimes;')).err, /invalid parameter "mode=sometimes"/);
  t.match((await check('proxy_pass http://u; upstream_probe p; upstream_probe p;')).err, /duplicate probe "p"/);
  const good = await check('proxy_pass http://u; upstream_probe p uri=/h port=8080 interval=1s method=HEAD "test=$upstream_status ~ ^2" essential persistent fails=3 passes=2 max_body=1k mode=idle;');
  t.equal(good.code, 0, good.err);
});
