// toWire remembers the last answer's headers and gives their prepared pairs again when an
// answer repeats them: every change from one answer to the next must still be seen and
// checked, whatever came before it.
import t from 'tap';
import type { ApiResponse } from '../../src/api/types.js';
import { toWire } from '../../src/transport/common.js';

const standard = (body: string, extra: Record<string, string> = {}): ApiResponse => ({
  status: 200,
  headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache', 'Content-Length': String(Buffer.byteLength(body)), ...extra },
  body,
});

t.test('a repeated set of headers is prepared once, and each answer keeps its own length', async (t) => {
  const first = toWire('GET', standard('{}'));
  const second = toWire('GET', standard('{"a":1}'));
  t.same(first.headers, [
    ['Content-Type', 'application/json'],
    ['Cache-Control', 'no-cache'],
  ]);
  t.equal(second.headers, first.headers, 'the same pairs, not a copy');
  t.equal(first.contentLength, 2);
  t.equal(second.contentLength, 7);
  const head = toWire('HEAD', { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache', 'Content-Length': '7' }, body: '' });
  t.equal(head.contentLength, 7, "HEAD keeps the handler's length");
  t.equal(head.body, '');
});

t.test('after a remembered answer, every kind of change is seen', async (t) => {
  toWire('GET', standard('{}'));
  const value = toWire('GET', { status: 200, headers: { 'Content-Type': 'text/plain', 'Cache-Control': 'no-cache', 'Content-Length': '2' }, body: '{}' });
  t.same(value.headers[0], ['Content-Type', 'text/plain'], 'a changed value');
  const more = toWire('GET', standard('{}', { ETag: '"1"' }));
  t.same(more.headers, [
    ['Content-Type', 'application/json'],
    ['Cache-Control', 'no-cache'],
    ['ETag', '"1"'],
  ]);
  const fewer = toWire('GET', { status: 200, headers: { 'Content-Type': 'application/json' }, body: '{}' });
  t.same(fewer.headers, [['Content-Type', 'application/json']], 'a header less');
  const swapped = toWire('GET', { status: 200, headers: { 'Cache-Control': 'no-cache', 'Content-Type': 'application/json' }, body: '{}' });
  t.same(swapped.headers, [
    ['Cache-Control', 'no-cache'],
    ['Content-Type', 'application/json'],
  ]);
  const own = toWire('GET', { status: 200, headers: { 'Content-Type': 'application/json', Connection: 'close', Date: 'x' }, body: '{}' });
  t.same(own.headers, [['Content-Type', 'application/json']], "the transport's own headers are not copied");
});

t.test('a bad header or length is refused even right after the same names passed', async (t) => {
  toWire('GET', standard('{}'));
  t.throws(() => toWire('GET', { status: 200, headers: { 'Content-Type': 'a\r\nInjected: yes', 'Cache-Control': 'no-cache', 'Content-Length': '2' }, body: '{}' }), TypeError);
  toWire('GET', standard('{}'));
  t.throws(() => toWire('GET', { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache', 'Content-Length': '2x' }, body: '{}' }), TypeError);
  t.throws(() => toWire('GET', { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache', 'Content-Length': '2', 'Bad Name': 'v' }, body: '{}' }), TypeError);
  // And the remembered pairs are still right after the refusals.
  t.same(toWire('GET', standard('{}')).headers, [
    ['Content-Type', 'application/json'],
    ['Cache-Control', 'no-cache'],
  ]);
  t.equal(toWire('GET', { status: 200, headers: { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache', 'Content-Length': 5 as unknown as string }, body: '{}' }).contentLength, 2, 'a number as Content-Length passes');
});
