// Names in /config, through bin/zonal over 2 workers against dnsmasq: a name the
// configuration file resolves is read at its own path (`<host>:<port>`, `<host>` and
// `<service>@<host>`), and a write of a whole collection (DELETE, PUT or PATCH of
// `servers`, or of the upstream) ends the names /config added, so that their peers do not
// come back at the resolver's next answer; HTTP and stream alike.
import t from 'tap';
import { eventually, freePorts, getJson, Zonal } from '../zonal.js';
import { startDnsmasq } from './dns-servers.js';

const json = (method: string, body?: unknown) => ({
  method,
  ...(body === undefined ? {} : { headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) }),
});

/** dnsmasq's answers last 1 s: a follower still running would have looked again and put
 * its peers back well within this. */
const FOLLOWER_WINDOW_MS = 2000;

/** Whether `probe` stays true for the whole window (bounded: some 150 looks). */
async function staysFor(probe: () => Promise<boolean>, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  for (let i = 0; i < 1000 && Date.now() < until; i++) {
    if (!(await probe())) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

t.test("the configuration file's names are read at their own paths, and written only there", async (t) => {
  const [port, site, admin] = await freePorts(3);
  const dns = await startDnsmasq({
    hosts: '127.0.0.2 app.test\n127.0.0.5 plain.test\n127.0.0.6 w1.test\n',
    srv: [`_http._tcp.srv.test,w1.test,${port},0,5`],
  });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    resolver 127.0.0.1:${dns.port} ipv6=off;
    upstream app {
        zone app;
        server app.test:${port} resolve max_fails=3 weight=2;
        server plain.test resolve;
        server srv.test service=_http._tcp resolve slow_start=2s;
        server 127.0.0.4:${port};
    }
    server {
        listen 127.0.0.1:${site};
        location / { proxy_pass http://app; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const servers = `http://127.0.0.1:${admin}/config/http/upstreams/app/servers`;
  const get = async (name: string, query = '') => getJson(`${servers}/${name}${query}`);

  const app = await get(`app.test:${port}`);
  t.equal(app.status, 200, `a name written with its port: ${JSON.stringify(app.body)}`);
  t.same(app.body, { server: `app.test:${port}`, resolve: true, weight: 2, max_fails: 3 });
  t.same((await get('plain.test')).body, { server: 'plain.test', resolve: true }, 'a name written without a port, at its path as written');
  t.same((await get('plain.test:80')).body, { server: 'plain.test', resolve: true }, 'and with the port it stands for');
  t.same((await get('_http._tcp@srv.test')).body, { server: 'srv.test', service: '_http._tcp', resolve: true, slow_start: 2 }, 'an SRV service at <service>@<host>');
  t.same((await get('_http._tcp@srv.test', '?defaults=on')).body, {
    server: 'srv.test',
    service: '_http._tcp',
    resolve: true,
    weight: 1,
    max_conns: 0,
    max_fails: 1,
    fail_timeout: 10,
    backup: false,
    down: false,
    sid: '',
    slow_start: 2,
  }, 'defaults=on fills the rest');
  const param = await get(`app.test:${port}/max_fails`);
  t.same([param.status, param.body], [200, 3], 'down to one parameter');
  t.same((await get(`app.test:${port}/down`)).body, false, 'an unset parameter shows its default');
  t.equal((await get('other.test:80')).status, 404, 'a name nobody follows is no entity');
  t.equal((await get('srv.test')).status, 404, 'the service is part of the name: srv.test alone is another name');

  for (const [method, path, body] of [
    ['PUT', `app.test:${port}`, { weight: 1 }],
    ['PATCH', '_http._tcp@srv.test', { weight: 1 }],
    ['DELETE', 'plain.test', undefined],
    ['PUT', `app.test:${port}/weight`, 1],
  ] as const) {
    const r = await getJson(`${servers}/${path}`, json(method, body));
    t.equal(r.status, 400, `${method} ${path} is refused`);
    t.match(r.body, { error: 'FormatError', description: /is the configuration file's \("server \.\.\. resolve"\): it is changed there/ });
  }
  t.same((await get(`app.test:${port}`)).body, app.body, 'and changed nothing');
  const refused = await getJson(servers, json('PATCH', { [`app.test:${port}`]: { weight: 5 } }));
  t.equal(refused.status, 400, 'a collection write naming it is refused whole');
  t.match(refused.body, { error: 'FormatError', description: /configuration file's/ });
});

t.test('a write of the whole collection ends the names /config added, and their peers stay gone', async (t) => {
  const [port, site, admin, tcpSite] = await freePorts(4);
  const dns = await startDnsmasq({ hosts: '127.0.0.2 app.test\n127.0.0.3 extra.test\n127.0.0.7 more.test\n' });
  t.teardown(() => dns.stop());
  const zonal = await Zonal.start({
    'zonal.conf': `
worker_processes 2;
http {
    resolver 127.0.0.1:${dns.port} ipv6=off;
    upstream app {
        zone app;
        server app.test:${port} resolve;
        server 127.0.0.4:${port};
    }
    server {
        listen 127.0.0.1:${site};
        location / { proxy_pass http://app; }
    }
    server {
        listen 127.0.0.1:${admin} admin;
        location / { api /; }
    }
}
stream {
    resolver 127.0.0.1:${dns.port} ipv6=off;
    upstream tcp {
        zone tcp;
        server 127.0.0.4:${port};
    }
    server {
        listen 127.0.0.1:${tcpSite};
        proxy_pass tcp;
    }
}
`,
  });
  t.teardown(() => zonal.stop());
  const base = `http://127.0.0.1:${admin}`;
  const extra = `extra.test:${port}`;
  const more = `more.test:${port}`;
  const [fileAddress, extraAddress, moreAddress, fixed] = ['127.0.0.2', '127.0.0.3', '127.0.0.7', '127.0.0.4'].map((h) => `${h}:${port}`);

  for (const protocol of ['http', 'stream'] as const) {
    const u = protocol === 'http' ? 'app' : 'tcp';
    const servers = `${base}/config/${protocol}/upstreams/${u}/servers`;
    const peers = async () => Object.keys((await getJson(`${base}/status/${protocol}/upstreams/${u}/peers`)).body as object).sort();
    const has = async (address: string) => (await peers()).includes(address);
    const fromFile = protocol === 'http' ? [fileAddress] : [];
    await t.test(protocol, async (t) => {
      if (protocol === 'http') t.ok(await eventually(() => has(fileAddress), 5000), "the file's name resolved");

      // DELETE of `servers`.
      t.equal((await getJson(`${servers}/${extra}`, json('PUT', { weight: 3 }))).status, 201, 'a name added');
      t.ok(await eventually(() => has(extraAddress), 5000), 'its address became a peer');
      const deleted = await getJson(servers, json('DELETE'));
      t.equal(deleted.status, 200, `DELETE servers: ${JSON.stringify(deleted.body)}`);
      t.same(Object.keys((await getJson(servers)).body).sort(), fromFile, "only the file's name's peers are left");
      t.equal((await getJson(`${servers}/${extra}`)).status, 404, 'the name is gone');
      t.ok(await staysFor(async () => !(await has(extraAddress)), FOLLOWER_WINDOW_MS), `its peer does not come back within ${FOLLOWER_WINDOW_MS} ms`);
      t.same(await peers(), fromFile, '/status agrees');

      // PUT of `servers`: the names it lists are kept (or made), the others end.
      const put = await getJson(servers, json('PUT', { [extra]: { weight: 2 }, [more]: {}, [fixed]: {} }));
      t.equal(put.status, 200, `PUT servers with names: ${JSON.stringify(put.body)}`);
      t.same((await getJson(`${servers}/${extra}`)).body, { server: extra, resolve: true, weight: 2 }, 'a name listed in the body is followed');
      t.ok(await eventually(async () => (await has(extraAddress)) && (await has(moreAddress)), 5000), 'both names got their peers');
      t.ok(await has(fixed), 'beside the address');
      const replaced = await getJson(servers, json('PUT', { [fixed]: { weight: 4 }, [extraAddress]: { weight: 9 } }));
      t.equal(replaced.status, 200, 'PUT servers without the names');
      t.equal((await getJson(`${servers}/${extra}`)).status, 404);
      t.equal((await getJson(`${servers}/${more}`)).status, 404);
      t.same(await peers(), [...fromFile, fixed].sort(), "the ended names' peers went with the PUT, even one listed by address");
      t.ok(await staysFor(async () => !(await has(extraAddress)) && !(await has(moreAddress)), FOLLOWER_WINDOW_MS), 'and do not come back');
      t.same((await getJson(`${servers}/${fixed}`)).body, { weight: 4 });

      // PATCH of `servers`: a name merged in, then deleted with null.
      t.equal((await getJson(servers, json('PATCH', { [more]: { weight: 5 } }))).status, 200, 'PATCH servers adds a name');
      t.same((await getJson(`${servers}/${more}`)).body, { server: more, resolve: true, weight: 5 });
      t.ok(await eventually(() => has(moreAddress), 5000), 'followed');
      t.equal((await getJson(servers, json('PATCH', { [more]: { max_fails: 2 } }))).status, 200);
      t.same((await getJson(`${servers}/${more}`)).body, { server: more, resolve: true, weight: 5, max_fails: 2 }, 'PATCH merges into the name');
      t.equal((await getJson(servers, json('PATCH', { [more]: null }))).status, 200, 'null ends it');
      t.equal((await getJson(`${servers}/${more}`)).status, 404);
      t.notOk(await has(moreAddress), 'its peer went at once');
      t.ok(await staysFor(async () => !(await has(moreAddress)), FOLLOWER_WINDOW_MS), 'and stays gone');

      // The upstream: DELETE, then a PUT without the name.
      t.equal((await getJson(`${servers}/${extra}`, json('PUT', {}))).status, 201);
      t.ok(await eventually(() => has(extraAddress), 5000));
      t.equal((await getJson(`${base}/config/${protocol}/upstreams/${u}`, json('DELETE'))).status, 200, 'DELETE of the upstream');
      t.equal((await getJson(`${servers}/${extra}`)).status, 404);
      t.ok(await staysFor(async () => !(await has(extraAddress)), FOLLOWER_WINDOW_MS), 'ends the name too');
      t.equal((await getJson(`${servers}/${extra}`, json('PUT', {}))).status, 201);
      t.ok(await eventually(() => has(extraAddress), 5000));
      t.equal((await getJson(`${base}/config/${protocol}/upstreams/${u}`, json('PUT', { servers: { [fixed]: {} } }))).status, 200, 'PUT of the upstream');
      t.equal((await getJson(`${servers}/${extra}`)).status, 404);
      t.ok(await staysFor(async () => !(await has(extraAddress)), FOLLOWER_WINDOW_MS), 'ends it as well');
      t.same(await peers(), [...fromFile, fixed].sort());

      // A refused write changes no name: a bad parameter beside a good name.
      t.equal((await getJson(`${servers}/${extra}`, json('PUT', {}))).status, 201);
      const bad = await getJson(servers, json('PUT', { [fixed]: { weight: 0 } }));
      t.equal(bad.status, 400, 'a PUT with a bad parameter is refused');
      t.equal((await getJson(`${servers}/${extra}`)).status, 200, 'and the name it would have ended is still followed');
      const badName = await getJson(servers, json('PATCH', { 'bad_host!:80': {} }));
      t.equal(badName.status, 400, `a bad name is refused: ${JSON.stringify(badName.body)}`);
      t.equal((await getJson(servers, json('DELETE'))).status, 200);
    });
  }
});
