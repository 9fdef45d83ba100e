// The numbers and times directives take, checked as nginx reads them: shared by the
// modules' tables, which must not import the loader's own table.
import { parseTime } from '../../metrics/peers.js';

/** The largest count and time nginx takes (NGX_MAX_INT_T_VALUE on 32 bits), and what the
 * /config API takes: a configured peer can be written back through it unchanged. Node's
 * timers take no more milliseconds either. */
export const MAX = 2147483647;

/** A whole number from `least` to MAX, or undefined. */
export function whole(arg: string | undefined, least: number): number | undefined {
  if (arg === undefined || !/^\d{1,10}$/.test(arg)) return undefined;
  const n = Number(arg);
  return n >= least && n <= MAX ? n : undefined;
}

/** A time in milliseconds, `ms` allowed; positive: a zero timeout would mean none at all to
 * the sockets and timers that apply it. */
export function milliseconds(arg: string | undefined): number | undefined {
  const s = arg === undefined ? undefined : parseTime(arg, true);
  if (s === undefined || s <= 0 || s * 1000 > MAX) return undefined;
  return Math.round(s * 1000);
}

/** A time in seconds to at most MAX, in milliseconds; `ms` only when `ms` (as nginx's
 * `fail_timeout` takes whole seconds, `slow_start` fractions). */
export function seconds(arg: string | undefined, ms: boolean): number | undefined {
  const s = arg === undefined ? undefined : parseTime(arg, ms);
  return s === undefined || s > MAX ? undefined : Math.round(s * 1000);
}
