// The times variables print (`$time_local`, `$time_iso8601`, `$msec`, `$request_time`),
// in nginx's formats; the http and stream variables both use them.

const two = (n: number) => (n < 10 ? `0${n}` : String(n));
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The times of the current second, made once a second: `$time_local`, `$time_iso8601`.
 * They hold until a timer set for the next second's start, as node's Date header does
 * (and nginx's cached time, updated once per turn of its loop): no clock is read per line. */
let current = false;
const times = { local: '', iso: '' };
const expire = () => (current = false);
export function clock(): { readonly local: string; readonly iso: string } {
  if (current) return times;
  const now = Date.now();
  current = true;
  setTimeout(expire, 1000 - (now % 1000)).unref();
  const d = new Date(now);
  const off = -d.getTimezoneOffset();
  const sign = off < 0 ? '-' : '+';
  const hh = two(Math.floor(Math.abs(off) / 60));
  const mm = two(Math.abs(off) % 60);
  const time = `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
  times.local = `${two(d.getDate())}/${MONTHS[d.getMonth()]}/${d.getFullYear()}:${time} ${sign}${hh}${mm}`;
  times.iso = `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${time}${sign}${hh}:${mm}`;
  return times;
}

/** Seconds with milliseconds, nginx's `%T.%03M`: whole milliseconds, never below 0. */
export const seconds = (ms: number): string => (Math.max(0, Math.floor(ms)) / 1000).toFixed(3);

/** `$msec`: the time now in seconds, with milliseconds. */
export const msec = (): string => (Date.now() / 1000).toFixed(3);
