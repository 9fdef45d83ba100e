// The http variables, assembled from the modules that own them, on one context: what a
// phase knows it gives, what it does not is empty; limit keys keep $binary_remote_addr
// as bytes.
import t from 'tap';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { compileValue, httpVariables, knownHttpVariable, streamVariables } from '../../src/server/config/variables.js';
import { compileKey } from '../../src/server/limits/key.js';
import type { HttpContext } from '../../src/server/http/variables.js';

const req = (headers: Array<[string, string]>, url = '/a/b?x=1&Y=2', remoteAddress = '127.0.0.1') =>
  ({
    url,
    method: 'GET',
    httpVersion: '1.1',
    headers: Object.fromEntries(headers.map(([n, v]) => [n.toLowerCase(), v])),
    rawHeaders: headers.flat(),
    socket: { remoteAddress, remotePort: 5555, localAddress: '127.0.0.2', localPort: 8080 },
  }) as unknown as IncomingMessage;

t.test('request variables of the http core, proxy and auth_basic modules', async (t) => {
  const c: HttpContext = {
    req: req([['Host', 'Example.COM:8080'], ['X-User', 'u1'], ['Cookie', 'a=1; b=2'], ['X-Forwarded-For', '10.0.0.1'], ['Authorization', `Basic ${Buffer.from('ann:pw').toString('base64')}`]]),
    uri: '/a/b',
    captures: ['one', 'two'],
    serverName: 'site',
    proxyHost: 'backend',
  };
  const value = compileValue('$host|$uri|$arg_y|$http_x_user|$1$2|${server_name}|$remote_addr|$server_port|$cookie_b|$args|$is_args|$request|$scheme|$https');
  t.equal(value(c), 'example.com|/a/b|2|u1|onetwo|site|127.0.0.1|8080|2|x=1&Y=2|?|GET /a/b?x=1&Y=2 HTTP/1.1|http|');
  t.equal(compileValue('$proxy_host $proxy_add_x_forwarded_for $remote_user')(c), 'backend 10.0.0.1, 127.0.0.1 ann');
  t.equal(compileValue('[$http_none$cookie_none$upstream_addr$ssl_protocol$upstream_cache_status]')(c), '[]', 'what is not there is empty');
});

t.test('times: $msec is now, $request_time the time so far', async (t) => {
  const c: HttpContext = { req: req([]), uri: '/', start: performance.now() - 1500 };
  const msec = Number(compileValue('$msec')(c));
  t.ok(Math.abs(msec * 1000 - Date.now()) < 1000, `$msec ${msec} is now`);
  const time = Number(compileValue('$request_time')(c));
  t.ok(time >= 1.5 && time < 3, `$request_time ${time} counts from the start`);
  t.match(compileValue('$time_iso8601')(c), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d$/);
});

t.test('$status: the status being answered, 499 once over without a response', async (t) => {
  const res = { headersSent: false, writableFinished: false, statusCode: 200 } as unknown as ServerResponse;
  t.equal(compileValue('$status')({ req: req([]), res, uri: '/', status: 201 }), '201');
  t.equal(compileValue('[$status]')({ req: req([]), res, uri: '/' }), '[]', 'not known before the head is made');
  t.equal(compileValue('$status')({ req: req([]), res, uri: '/', written: 0 }), '499');
});

t.test('upstream variables read the attempts', async (t) => {
  const upstream = [
    { address: '127.0.0.1:1', status: 502, connectMs: -1, headerMs: -1, responseMs: 3, received: 0, sent: 0 },
    { address: '127.0.0.1:2', status: 200, connectMs: 1, headerMs: 2, responseMs: 4, received: 10, sent: 20 },
  ];
  t.equal(compileValue('$upstream_addr|$upstream_status|$upstream_connect_time|$upstream_bytes_received')({ req: req([]), uri: '/', upstream }), '127.0.0.1:1, 127.0.0.1:2|502, 200|-, 0.001|0, 10');
});

t.test('one table checks every place: unknown names are refused, prefixes known', async (t) => {
  for (const name of ['msec', 'request_time', 'connection_requests', 'ssl_protocol', 'ssl_cipher', 'ssl_server_name', 'ssl_session_reused', 'upstream_connect_time', 'upstream_cache_status', 'proxy_host', 'proxy_port', 'remote_user', 'sent_http_x', 'arg_a', '1'])
    t.ok(knownHttpVariable(name), name);
  t.notOk(knownHttpVariable('nonesuch'));
  t.ok(streamVariables.known('session_time'));
  t.notOk(streamVariables.known('request_uri'), 'the stream table is its own');
  t.equal(httpVariables.get('nonesuch'), undefined);
});

t.test('limit keys: $binary_remote_addr as its bytes', async (t) => {
  const key = compileKey('$binary_remote_addr')({ req: req([], '/', '::ffff:192.168.0.200'), uri: '/' });
  t.same([...(key as Buffer)], [192, 168, 0, 200], 'an IPv4 client of a dual-stack socket is 4 bytes');
  const mixed = compileKey('$binary_remote_addr:$uri')({ req: req([], '/', '10.0.0.255'), uri: '/é' }) as Buffer;
  t.same(mixed, Buffer.concat([Buffer.from([10, 0, 0, 255]), Buffer.from(':/é')]), 'bytes, then the text in UTF-8');
  t.equal(compileKey('$remote_addr-$uri')({ req: req([]), uri: '/u' }), '127.0.0.1-/u', 'a text key stays text');
});
