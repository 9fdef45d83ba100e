// Virtual server selection against nginx's order and its host normalisation.
import t, { type Test } from 'tap';
import { createSecureContext } from 'node:tls';
import type { ListenConfig, VirtualServerConfig } from '../../src/server/config/model.js';
import { normaliseHost, ServerNames, sniCallback } from '../../src/server/http/server-names.js';

const names = new Map<VirtualServerConfig, string>();
const here = { host: '127.0.0.1', port: 80 };

function listen(overrides: Partial<ListenConfig> = {}): ListenConfig {
  return { ...here, ssl: false, admin: false, defaultServer: false, origin: { file: 'test.conf', line: 1 }, ...overrides };
}

function server(id: string, serverNames: string[], listens: ListenConfig[] = [listen()]): VirtualServerConfig {
  const config: VirtualServerConfig = {
    listens,
    names: serverNames,
    access: [],
    admin: false,
    locations: [],
    origin: { file: 'test.conf', line: names.size + 1 },
  };
  names.set(config, id);
  return config;
}

function table(t: Test, index: ServerNames, rows: [host: string | undefined, expected: string][]) {
  for (const [host, expected] of rows) {
    t.equal(names.get(index.select(host)), expected, `${JSON.stringify(host)} -> ${expected}`);
  }
}

t.test("nginx's order: exact, leading wildcard, trailing wildcard, regex, default", async (t) => {
  const index = new ServerNames(
    [
      server('first', ['first.test']),
      server('exact', ['example.com', 'www.example.com']),
      server('head', ['*.example.com']),
      server('dotted', ['.example.org']),
      server('longerHead', ['*.sub.example.com']),
      server('tail', ['www.example.*']),
      server('shortTail', ['www.*']),
      server('regex', ['~^api\\d+\\.example\\.net$']),
      server('named', ['~^(?P<user>.+)\\.users\\.net$']),
      server('upper', ['~^CASE\\.test$']),
      server('endsRegex', ['~example\\.com$']),
      server('noHost', ['']),
      server('ipv6', ['[::1]']),
      server('default', ['default.test'], [listen({ port: 81, defaultServer: true }), listen({ defaultServer: true })]),
      server('Mixed', ['MiXeD.Test']),
    ],
    here,
  );
  table(t, index, [
    ['example.com', 'exact'],
    ['EXAMPLE.com:8080', 'exact'],
    ['example.com.', 'exact'],
    ['www.example.com', 'exact'],
    ['a.example.com', 'head'],
    ['a.b.example.com', 'head'],
    ['a.sub.example.com', 'longerHead'],
    ['sub.example.com', 'head'],
    ['example.org', 'dotted'],
    ['x.example.org', 'dotted'],
    ['x.y.example.org:443', 'dotted'],
    ['www.example.net', 'tail'],
    ['www.example.co.uk', 'tail'],
    ['www.other.com', 'shortTail'],
    ['www.example', 'shortTail'],
    ['www', 'default'],
    ['api12.example.net', 'regex'],
    ['api.example.net', 'default'],
    ['bob.users.net', 'named'],
    ['case.test', 'upper'],
    ['noexample.com', 'endsRegex'],
    [undefined, 'noHost'],
    ['', 'noHost'],
    ['[::1]:8080', 'ipv6'],
    ['[::1]', 'ipv6'],
    ['127.0.0.1:80', 'default'],
    ['unknown.test', 'default'],
    ['mixed.test', 'Mixed'],
  ]);
});

t.test('a leading wildcard beats a trailing one, and the first of equals wins', async (t) => {
  const index = new ServerNames(
    [
      server('tail', ['www.example.*']),
      server('head', ['*.example.com']),
      server('dup1', ['dup.test', '.example.org']),
      server('dup2', ['dup.test', 'example.org']),
      server('re1', ['~^re']),
      server('re2', ['~^reg']),
    ],
    here,
  );
  table(t, index, [
    ['www.example.com', 'head'],
    ['dup.test', 'dup1'],
    ['example.org', 'dup1'],
    ['regex.test', 're1'],
    ['', 'tail'],
  ]);
});

t.test('the default server', async (t) => {
  const a = server('a', ['a.test']);
  const b = server('b', ['b.test'], [listen({ port: 81, defaultServer: true }), listen()]);
  t.equal(names.get(new ServerNames([a, b], here).defaultServer), 'a', 'default_server on another port does not count');
  t.equal(names.get(new ServerNames([a, b], { host: '127.0.0.1', port: 81 }).defaultServer), 'b');
  const v6 = server('v6', [], [listen({ host: '::1', defaultServer: true })]);
  t.equal(names.get(new ServerNames([a, v6], { host: '[::1]', port: 80 }).defaultServer), 'v6', 'an IPv6 address with or without brackets');
  t.throws(() => new ServerNames([], here), /no server listens on 127\.0\.0\.1:80/);
});

t.test('SNI servername', async (t) => {
  const fallback = server('fallback', ['fallback.test']);
  const site = server('site', ['site.test', '*.site.test']);
  const noHost = server('noHost', ['']);
  const index = new ServerNames([fallback, site, noHost], here);
  t.equal(names.get(index.selectServername('site.test')), 'site');
  t.equal(names.get(index.selectServername('a.SITE.test')), 'site');
  t.equal(names.get(index.selectServername(undefined)), 'fallback', 'no SNI: the default server, not the "" name');
  t.equal(names.get(index.selectServername('')), 'fallback');
  t.equal(names.get(index.selectServername('other.test')), 'fallback');

  const context = createSecureContext();
  const contexts = new Map([[site, context]]);
  const callback = sniCallback(index, (s) => contexts.get(s));
  const answers: unknown[] = [];
  callback('x.site.test', (error, ctx) => answers.push(error, ctx));
  callback('other.test', (error, ctx) => answers.push(error, ctx));
  t.same(answers, [null, context, null, undefined]);
});

t.test('host normalisation', async (t) => {
  const rows: [string, string][] = [
    ['example.com', 'example.com'],
    ['Example.COM', 'example.com'],
    ['example.com:8080', 'example.com'],
    ['example.com.', 'example.com'],
    ['example.com.:8080', 'example.com'],
    ['[::1]:8080', '[::1]'],
    ['[::1]', '[::1]'],
    ['[FE80::1]', '[fe80::1]'],
    ['127.0.0.1:80', '127.0.0.1'],
    [':80', ''],
    ['', ''],
  ];
  for (const [host, expected] of rows) t.equal(normaliseHost(host), expected, JSON.stringify(host));
  const same = 'plain.example';
  t.equal(normaliseHost(same), same, 'a normal host comes back as is');
});
