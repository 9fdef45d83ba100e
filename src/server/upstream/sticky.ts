// Angie's sticky sessions, the parts http's runtime and the shared balancer both need:
// a peer's server id (its `sid=`, else the MD5 of its address, as Angie makes it), the id
// a request carries when `sticky_secret` salts it, and the cookie that binds a client.
import { createHash } from 'node:crypto';
import type { StickyConfig } from '../config/model.js';

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');

/** A peer's id without `sid=`: the hexadecimal MD5 of its `ip:port` (or socket path). */
export const defaultSid = md5;

/** The id a request names a peer by: its sid, or with `sticky_secret`, the MD5 of the
 * sid followed by the secret's value. */
export function saltedSid(sid: string, salt: string): string {
  return salt === '' ? sid : md5(sid + salt);
}

/** Angie's `expires=max`: the end of 2037, and ten years as max-age. */
const EXPIRES_MAX = '; expires=Thu, 31-Dec-37 23:55:55 GMT; max-age=315360000';

/** The Set-Cookie value binding a client to the peer whose id is `id`; `attributes`
 * are the configured ones with their variables evaluated (an empty value, or one ending
 * in `=`, is left out as Angie does). */
export function stickyCookie(sticky: StickyConfig, id: string, attributes: readonly string[], now: number): string {
  let cookie = `${sticky.cookie}=${id}`;
  const expires = sticky.expires;
  if (expires === 'max') cookie += EXPIRES_MAX;
  else if (expires !== undefined) cookie += `; expires=${cookieTime(now + expires * 1000)}; max-age=${expires}`;
  for (const a of attributes) if (a !== '' && !a.endsWith('=')) cookie += `; ${a}`;
  return cookie;
}

/** nginx's cookie time (ngx_http_cookie_time): `Thu, 31-Dec-37 23:55:55 GMT`, the year
 * in two digits up to 2037. */
function cookieTime(ms: number): string {
  const [day, mday, month, year, time] = new Date(ms).toUTCString().split(' ');
  const y = Number(year);
  return `${day} ${mday}-${month}-${y > 2037 ? y : String(y % 100).padStart(2, '0')} ${time} GMT`;
}
