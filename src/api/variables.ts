// nginx variables: a table of them, and values compiled once against a table into a
// function of whatever the table's variables read (a request, a probe's response, an
// `api` mapping's path). A value without variables costs nothing per request. The
// server's modules declare their variables in tables of this shape, and the server
// assembles them (src/server/config/variables.ts); the `api` mapping keeps its own few.
import { isIP } from 'node:net';

/** A variable's value in a context; undefined when nginx finds none ("not found": `-` in
 * a log line, empty anywhere else). */
export type Variable<C> = (c: C) => string | undefined;

/** What one module declares: variables by name, and families by prefix (`http_<name>`):
 * the prefix, and the variable a name after it makes. */
export interface VariableTable<C> {
  readonly names?: Readonly<Record<string, Variable<C>>>;
  readonly prefixes?: ReadonlyArray<readonly [prefix: string, make: (rest: string) => Variable<C>]>;
}

// `$name`, `${name}`, and captures of one digit (`$12` is `$1` then "2", as nginx reads it).
const VARIABLE = /\$(?:\{([A-Za-z0-9_]+)\}|(\d|[A-Za-z0-9_]+))/g;

/** The names a value refers to, in order. */
export const namesIn = (text: string): string[] => [...text.matchAll(VARIABLE)].map((m) => m[1] ?? m[2]);

type Part<C> = string | Variable<C>;

/** Variables assembled from the tables of the modules that own them. */
export class Variables<C> {
  private readonly names = new Map<string, Variable<C>>();
  /** The configuration's own (map, geo): looked for before the modules', and forgotten
   * when another configuration is read. */
  private readonly defined = new Map<string, { v?: Variable<C>; readonly read: Variable<C> }>();
  /** Longest prefix first: `sent_http_` is looked for before `http_`. */
  private readonly prefixes: Array<readonly [string, (rest: string) => Variable<C>]> = [];

  constructor(tables: ReadonlyArray<VariableTable<C>>) {
    for (const t of tables) {
      for (const [name, v] of Object.entries(t.names ?? {})) this.names.set(name, v);
      this.prefixes.push(...(t.prefixes ?? []));
    }
    this.prefixes.sort((a, b) => b[0].length - a[0].length);
  }

  /** A variable by name; undefined for one no module declares. */
  get(name: string): Variable<C> | undefined {
    const v = this.defined.get(name)?.read ?? this.names.get(name);
    if (v) return v;
    for (const [prefix, make] of this.prefixes) if (name.startsWith(prefix) && name.length > prefix.length) return make(name.slice(prefix.length));
    return undefined;
  }

  /** Whether `-t` lets a value name it. */
  readonly known = (name: string): boolean => this.defined.has(name) || this.names.has(name) || this.prefixes.some(([p]) => name.startsWith(p) && name.length > p.length);

  /** Whether a module declares it by name: the configuration may not define it again. */
  builtIn(name: string): boolean {
    return this.names.has(name);
  }

  /** A variable the configuration defines, known before its block is read (a value may
   * name a `map` written after it, as in nginx): values compiled before define() gives
   * it its evaluation read it through its slot. */
  declare(name: string): void {
    if (this.defined.has(name)) return;
    const slot: { v?: Variable<C>; readonly read: Variable<C> } = { read: (c) => slot.v?.(c) };
    this.defined.set(name, slot);
  }

  /** Its evaluation; a second definition replaces the first, as nginx's second `map` of
   * a name does. */
  define(name: string, v: Variable<C>): void {
    this.declare(name);
    this.defined.get(name)!.v = v;
  }

  /** Forgets the configuration's variables, before another configuration is read. */
  forget(): void {
    this.defined.clear();
  }

  /** Text and variables in order; a name no table knows stays as written (the
   * configuration's check has refused it already). */
  parts(text: string): Array<Part<C>> {
    const out: Array<Part<C>> = [];
    let last = 0;
    for (const m of text.matchAll(VARIABLE)) {
      if (m.index > last) out.push(text.slice(last, m.index));
      out.push(this.get(m[1] ?? m[2]) ?? m[0]);
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push(text.slice(last));
    return out;
  }

  /** `text` compiled once: a variable not found is empty. */
  compile(text: string): (c: C) => string {
    const list = this.parts(text);
    if (list.every((p) => typeof p === 'string')) {
      const constant = list.join('');
      return () => constant;
    }
    if (list.length === 1) {
      const only = list[0] as Variable<C>;
      return (c) => only(c) ?? '';
    }
    return (c) => {
      let out = '';
      for (const p of list) out += typeof p === 'string' ? p : (p(c) ?? '');
      return out;
    };
  }
}

/** `$host` of a Host header: without its port, lowercase. */
export function hostOfHeader(host: string): string {
  const port = /:\d*$/.exec(host);
  return (port && !host.endsWith(']') ? host.slice(0, port.index) : host).toLowerCase();
}

/** `$remote_addr`: an IPv4 client of a dual-stack socket as its IPv4 address. */
export const unmapped = (a: string): string => (a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a);

/** `$binary_remote_addr`: the client address in 4 bytes (IPv4) or 16 (IPv6); empty for
 * what is neither. */
export function binaryAddress(address: string): Buffer {
  const family = isIP(address);
  if (family === 4) return Buffer.from(address.split('.').map(Number));
  if (family !== 6) return Buffer.alloc(0);
  // An embedded IPv4 tail (::ffff:1.2.3.4) is the last two words.
  const v4 = address.includes('.') ? address.slice(address.lastIndexOf(':') + 1) : undefined;
  const text = v4 ? address.slice(0, address.lastIndexOf(':') + 1) + '0:0' : address;
  const [head, tail] = text.split('::');
  const words = (s: string | undefined) => (s ? s.split(':') : []);
  const h = words(head);
  const t = words(tail);
  const all = tail === undefined ? h : [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  all.forEach((w, i) => out.writeUInt16BE(parseInt(w, 16) || 0, i * 2));
  if (v4) Buffer.from(v4.split('.').map(Number)).copy(out, 12);
  return out;
}
