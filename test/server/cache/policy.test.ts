// Whether a peer's response is cached and for how long, as nginx decides: X-Accel-Expires,
// then Cache-Control, then Expires, then proxy_cache_valid; Set-Cookie, Vary: * and the
// no-cache family keep it out; Vary picks the variant.
import t from 'tap';
import { sameVariant, validFor, validUntil, varyOf } from '../../../src/server/cache/policy.js';

const NOW = 1_700_000_000_000;
const RULES = [
  { codes: [200, 301, 302], ms: 600_000 },
  { codes: [404], ms: 60_000 },
];

t.test('proxy_cache_valid by status, any as the fallback', async (t) => {
  t.equal(validUntil(200, [], NOW, RULES), NOW + 600_000);
  t.equal(validUntil(404, [], NOW, RULES), NOW + 60_000);
  t.equal(validUntil(500, [], NOW, RULES), 0, 'no rule: not cached');
  t.equal(validFor([{ codes: [], ms: 5 }, { codes: [500], ms: 7 }], 500), 7, 'a named status before any');
  t.equal(validFor([{ codes: [], ms: 5 }], 503), 5);
});

t.test("the peer's headers", async (t) => {
  t.equal(validUntil(200, ['Cache-Control', 'max-age=30'], NOW, RULES), NOW + 30_000);
  t.equal(validUntil(200, ['Cache-Control', 'public, s-maxage=5, max-age=30'], NOW, RULES), NOW + 5000, 's-maxage first');
  for (const cc of ['no-cache', 'no-store', 'private', 'max-age=0']) t.equal(validUntil(200, ['cache-control', cc], NOW, RULES), 0, cc);
  t.equal(validUntil(200, ['Expires', new Date(NOW + 90_000).toUTCString()], NOW, RULES), NOW + 90_000);
  t.equal(validUntil(200, ['Expires', new Date(NOW - 1000).toUTCString()], NOW, RULES), 0, 'Expires past');
  t.equal(validUntil(200, ['Expires', 'garbage'], NOW, RULES), 0, 'an unreadable Expires is past');
  t.equal(validUntil(200, ['Cache-Control', 'max-age=30', 'Expires', new Date(NOW + 90_000).toUTCString()], NOW, RULES), NOW + 30_000, 'Cache-Control over Expires');
  t.equal(validUntil(200, ['X-Accel-Expires', '7', 'Cache-Control', 'no-cache'], NOW, RULES), NOW + 7000, 'X-Accel-Expires over everything');
  t.equal(validUntil(200, ['X-Accel-Expires', '0'], NOW, RULES), 0, 'X-Accel-Expires: 0');
  t.equal(validUntil(200, ['X-Accel-Expires', `@${NOW / 1000 + 60}`], NOW, RULES), NOW + 60_000, 'X-Accel-Expires: @<epoch>');
  t.equal(validUntil(200, ['Set-Cookie', 'a=1'], NOW, RULES), 0, 'Set-Cookie');
  t.equal(validUntil(200, ['Vary', 'Accept, *'], NOW, RULES), 0, 'Vary: *');
  t.equal(validUntil(200, ['Vary', 'Accept-Encoding'], NOW, RULES), NOW + 600_000, 'another Vary is cached');
});

t.test('Vary: the variant stored and the variant asked', async (t) => {
  const vary = varyOf(['Vary', 'Accept-Encoding, X-Lang'], { 'accept-encoding': 'gzip', 'x-lang': 'fr' });
  t.same(vary, [
    ['accept-encoding', 'gzip'],
    ['x-lang', 'fr'],
  ]);
  t.ok(sameVariant(vary, { 'accept-encoding': 'gzip', 'x-lang': 'fr', other: '1' }));
  t.notOk(sameVariant(vary, { 'accept-encoding': 'br', 'x-lang': 'fr' }));
  t.ok(sameVariant(undefined, {}), 'no Vary: one variant');
});

t.test('proxy_ignore_headers: the headers it names say nothing', async (t) => {
  const ignored = (...names: string[]) => new Set(names);
  t.equal(validUntil(200, ['Cache-Control', 'no-cache', 'Set-Cookie', 'a=1'], NOW, RULES, ignored('cache-control', 'set-cookie')), NOW + 600_000, 'proxy_cache_valid decides');
  t.equal(validUntil(200, ['Cache-Control', 'no-cache'], NOW, RULES, ignored('set-cookie')), 0, 'a header it does not name still counts');
  t.equal(validUntil(200, ['X-Accel-Expires', '7', 'Expires', new Date(NOW + 90_000).toUTCString()], NOW, RULES, ignored('x-accel-expires')), NOW + 90_000, 'Expires once X-Accel-Expires is ignored');
  t.equal(validUntil(200, ['Expires', new Date(NOW - 1000).toUTCString()], NOW, RULES, ignored('expires')), NOW + 600_000);
  t.equal(validUntil(200, ['Vary', '*'], NOW, RULES, ignored('vary')), NOW + 600_000, 'Vary: * cached');
  t.equal(varyOf(['Vary', 'Accept'], { accept: 'a' }, ignored('vary')), undefined, 'and no variant kept');
});
