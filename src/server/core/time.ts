// The times variables print (`$time_local`, `$time_iso8601`, `$msec`, `$request_time`),
// in nginx's formats; the http and stream variables both use them.

const two = (n: number) => (n < 10 ? `0${n}` : String(n));
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The times of the current second, made once a second: `$time_local`, `$time_iso8601`. */
let second = -1;
const times = { local: '', iso: '' };
export function clock(): { readonly local: string; readonly iso: string } {
  const now = Date.now();
  const s = Math.floor(now / 1000);
  if (s === second) return times;
  second = s;
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
