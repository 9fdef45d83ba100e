// The location search against nginx's rules: the documentation's example, then the cases
// its prose implies (nesting, regex order, captures, case) and what its source does with
// them (ngx_http_core_find_location).
import t, { type Test } from 'tap';
import type { LocationConfig } from '../../src/server/config/model.js';
import { LocationIndex } from '../../src/server/http/locations.js';

const names = new Map<LocationConfig, string>();

/** A location named `name` for the tables, e.g. loc('A', '=', '/'). */
function loc(name: string, modifier: LocationConfig['modifier'], path: string, locations: LocationConfig[] = [], regex?: RegExp): LocationConfig {
  const location: LocationConfig = {
    modifier,
    path,
    regex: regex ?? (modifier === '~' ? new RegExp(path) : modifier === '~*' ? new RegExp(path, 'i') : undefined),
    access: [],
    apiConfigFiles: false,
    locations,
    origin: { file: 'test.conf', line: names.size + 1 },
  };
  names.set(location, name);
  return location;
}

type Row = [uri: string, expected: string | undefined, captures?: string[]];

function table(t: Test, index: LocationIndex, rows: Row[]) {
  for (const [uri, expected, captures] of rows) {
    const found = index.match(uri);
    t.equal(found === undefined ? undefined : names.get(found.location), expected, `${uri} -> ${expected ?? 'no location'}`);
    if (captures !== undefined) t.same(found?.captures, captures, `${uri}: captures`);
  }
}

t.test("nginx documentation's example", async (t) => {
  const index = new LocationIndex([
    loc('A', '=', '/'),
    loc('B', '', '/'),
    loc('C', '', '/documents/'),
    loc('D', '^~', '/images/'),
    loc('E', '~*', '\\.(gif|jpg|jpeg)$'),
  ]);
  table(t, index, [
    ['/', 'A'],
    ['/index.html', 'B'],
    ['/documents/document.html', 'C'],
    ['/images/1.gif', 'D'],
    ['/documents/1.jpg', 'E', ['jpg']],
    ['/documents/', 'C'],
    ['/documents', 'B'],
    ['/Documents/x.html', 'B'],
    ['/images/1.GIF', 'D'],
    ['/x.JPG', 'E', ['JPG']],
    ['/x.png', 'B'],
  ]);
});

t.test('exact against prefix with the same path', async (t) => {
  const index = new LocationIndex([loc('prefix', '', '/a'), loc('exact', '=', '/a'), loc('regex', '~', '^/a')]);
  table(t, index, [
    ['/a', 'exact'],
    ['/ab', 'regex'],
    ['/a/', 'regex'],
    ['/b', undefined],
  ]);
});

t.test('regexes: order of appearance, case, captures, and priority over prefixes', async (t) => {
  const index = new LocationIndex([
    loc('static', '', '/static/'),
    loc('php', '~', '\\.php$'),
    loc('app', '~', '^/app/'),
    loc('user', '~', '^/users/(\\d+)(?:/(\\w+))?$'),
    loc('css', '~*', '\\.css$'),
  ]);
  table(t, index, [
    ['/app/x.php', 'php', []],
    ['/app/x', 'app', []],
    ['/static/a.css', 'css'],
    ['/static/a.CSS', 'css'],
    ['/static/a.PHP', 'static', []],
    ['/static/a.txt', 'static'],
    ['/users/42', 'user', ['42', '']],
    ['/users/42/posts', 'user', ['42', 'posts']],
    ['/users/x', undefined],
  ]);
});

t.test('nested locations', async (t) => {
  const index = new LocationIndex([
    loc('root', '', '/'),
    loc('api', '', '/api/', [
      loc('v1', '', '/api/v1/'),
      loc('apiStatic', '^~', '/api/static/'),
      loc('health', '=', '/api/health'),
      loc('apiJson', '~', '\\.json$'),
    ]),
    loc('img', '^~', '/img/', [loc('png', '~', '\\.png$')]),
    loc('r', '~', '^/r/(\\w+)', [loc('rx', '~', '\\.x$')]),
    loc('json', '~', '\\.json$'),
    loc('txt', '~', '^/api/static/(.*)\\.txt$'),
    loc('gif', '~', '\\.gif$'),
  ]);
  table(t, index, [
    ['/api/health', 'health'],
    ['/api/health/', 'api'],
    ['/api/v1/users', 'v1'],
    ['/api/v1/x.json', 'apiJson', []],
    ['/api/other', 'api'],
    // The nested `^~` stops only the regexes of its own level: the outer ones are still
    // tried, because nginx takes noregex from the outer level's prefix (`/api/`).
    ['/api/static/a.css', 'apiStatic'],
    ['/api/static/a.json', 'json'],
    ['/api/static/a.txt', 'txt', ['a']],
    // Nested locations are searched before `^~` stops the regexes.
    ['/img/a.png', 'png'],
    ['/img/a.gif', 'img'],
    ['/other/a.gif', 'gif'],
    // A regex location's nested regex wins; when none matches, the outer one stands with
    // its captures.
    ['/r/abc.x', 'rx', []],
    ['/r/abc.y', 'r', ['abc']],
    ['/x', 'root'],
  ]);
});

t.test('the longest prefix, whatever the order of appearance', async (t) => {
  const index = new LocationIndex([loc('short', '', '/a/'), loc('long', '', '/a/b/c/'), loc('middle', '', '/a/b/')]);
  table(t, index, [
    ['/a/b/c/d', 'long'],
    ['/a/b/c', 'middle'],
    ['/a/x', 'short'],
    ['/', undefined],
  ]);
});

t.test('no locations, and a regex with state in it', async (t) => {
  t.equal(new LocationIndex([]).match('/'), undefined, 'an empty server matches nothing');
  const index = new LocationIndex([loc('g', '~', 'a', [], /a/g)]);
  table(t, index, [
    ['/a', 'g'],
    ['/a', 'g'],
    ['/a', 'g'],
  ]);
});

/** A location whose own content is the API (`api /status/;`): it auto-redirects when its
 * path ends with '/'. */
function apiLoc(name: string, modifier: LocationConfig['modifier'], path: string, locations: LocationConfig[] = []): LocationConfig {
  const location: LocationConfig = { ...loc(name, modifier, path, locations), api: '/status/' };
  names.set(location, name);
  return location;
}

/** [uri, location, whether it answers with a redirect to its path] */
type RedirectRow = [uri: string, expected: string | undefined, redirect: boolean];

function redirects(t: Test, index: LocationIndex, rows: RedirectRow[]) {
  for (const [uri, expected, redirect] of rows) {
    const found = index.match(uri);
    t.equal(found === undefined ? undefined : names.get(found.location), expected, `${uri} -> ${expected ?? 'no location'}`);
    t.equal(found?.redirect === true, redirect, `${uri}: ${redirect ? 'a redirect' : 'no redirect'}`);
  }
}

t.test("nginx's auto redirect: the URI without the final slash of an api or proxy_pass location", async (t) => {
  const index = new LocationIndex([
    loc('root', '', '/'),
    apiLoc('status', '', '/status/'),
    // Ends with a slash but has no api or proxy_pass: no redirect.
    loc('plain', '', '/plain/'),
    // An exact location of the URI itself wins over the redirect.
    apiLoc('exactDir', '', '/exact/'),
    loc('exact', '=', '/exact'),
    // So does a prefix location of the URI itself.
    apiLoc('bothDir', '', '/both/'),
    loc('both', '', '/both'),
    // A prefix that does not end with a slash never redirects.
    apiLoc('noSlash', '', '/noslash'),
    // An exact location ending with a slash redirects too (nginx's flag is per location).
    apiLoc('exactSlash', '=', '/only/'),
    // The redirect ends the search: the regexes are not tried.
    loc('regex', '~', '^/status$'),
    loc('regexOther', '~', '^/stat'),
    apiLoc('outer', '', '/outer/', [apiLoc('inner', '', '/outer/inner/')]),
    loc('shortPrefix', '^~', '/sta'),
  ]);
  redirects(t, index, [
    ['/status', 'status', true],
    // Only the redirect skips the regexes: below the location they are tried as ever.
    ['/status/', 'regexOther', false],
    ['/status/http', 'regexOther', false],
    ['/statusx', 'shortPrefix', false],
    ['/plain', 'root', false],
    ['/plain/', 'plain', false],
    ['/exact', 'exact', false],
    ['/exact/', 'exactDir', false],
    ['/both', 'both', false],
    ['/both/', 'bothDir', false],
    ['/noslash', 'noSlash', false],
    ['/noslash/', 'noSlash', false],
    ['/only', 'exactSlash', true],
    ['/only/', 'exactSlash', false],
    ['/outer', 'outer', true],
    // Nested: the outer prefix leads to the nested level, whose location redirects.
    ['/outer/inner', 'inner', true],
    ['/outer/inner/', 'inner', false],
  ]);
  t.same(index.match('/status')?.captures, [], 'a redirect has no captures');
});

t.test('auto redirect: the exact location of the same path, and a redirect nested in a regex location', async (t) => {
  // nginx keeps both in one node: the exact one's settings answer, and the flag of either
  // makes it redirect.
  const exactFirst = new LocationIndex([loc('exactPlain', '=', '/d/'), apiLoc('prefixApi', '', '/d/')]);
  redirects(t, exactFirst, [
    ['/d', 'exactPlain', true],
    ['/d/', 'exactPlain', false],
  ]);
  // A redirect found in a regex location's nested level is a match there: nginx returns
  // NGX_OK for whatever the nested search found.
  const inRegex = new LocationIndex([loc('r', '~', '^/r', [apiLoc('nested', '', '/rx/')])]);
  redirects(t, inRegex, [
    ['/rx', 'nested', false],
    ['/rx/', 'nested', false],
    ['/ry', 'r', false],
  ]);
});
