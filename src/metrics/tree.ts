// The status tree as the API walks it. Families hand out nodes; the API resolves a path
// to a node, then renders it as JSON or text. A node is made when a request reaches it,
// so a request for one branch reads only that branch's memory.
import { closing, encoded, JsonWriter, prefix, type Encoded } from './json.js';
import { quantile } from '../engine/index.js';
import type { Histogram, HistogramSnapshot } from '../engine/index.js';
import { entryList, histogramJson, HISTOGRAM_HELP, HISTOGRAM_PERCENTILES, renderTime, type Entries, type Field, type Group, type Json, type MetricType, type RenderContext, type Scalar, type TextName } from './shape.js';

export interface StatusNode {
  readonly kind: 'object' | 'leaf';
  /** An object's members that exist now, in order. */
  members(ctx: RenderContext): Array<[string, StatusNode]>;
  child(name: string, ctx: RenderContext): StatusNode | undefined;
  /** The node as JSON; undefined when absent. */
  json(ctx: RenderContext): Json | undefined;
  /** Writes the node's JSON text at `depth`; false (and nothing written) when absent. */
  write(w: JsonWriter, depth: number, ctx: RenderContext): boolean;
  /** Calls `fn` for each member in order. A member is valid only during its call: a
   * collection may reuse one member's memory for the next. */
  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void;
  /** The label an object's members carry in the labelled text format (zone, peer, code). */
  readonly label?: string;
  /** A zone, or anything as small: the text format below it is flat `group_field value`. */
  readonly flat?: boolean;
  /** For a flat node whose text shows only some of its leaves (the server: generation). */
  readonly textOnly?: readonly string[];
  /** Leaves: how the text format exports them. */
  readonly metric?: MetricType;
  readonly help?: string;
  numeric?(value: Scalar): number;
  /** One histogram (zonal's `histograms` extension): the text format exports it whole. */
  readonly histogram?: HistogramSnapshot;
  /** The text format's own name for a leaf or a histogram, instead of its path's. */
  readonly text?: TextName;
  /** A leaf's value as its field gives it, before JSON renders it (a time's epoch
   * milliseconds, where the JSON may have ISO 8601): what a text name exports. */
  raw?(ctx: RenderContext): Scalar | undefined;
}

const NO_MEMBERS: Array<[string, StatusNode]> = [];

/** An object whose members come from a function: the tree's branches and collections. */
export class ObjectNode implements StatusNode {
  readonly kind = 'object';
  constructor(
    private readonly list: (ctx: RenderContext) => Array<[string, StatusNode]>,
    private readonly find?: (name: string, ctx: RenderContext) => StatusNode | undefined,
    readonly label?: string,
    readonly flat?: boolean,
    readonly textOnly?: readonly string[],
    /** Visits the members without listing them first: for collections of thousands. */
    private readonly each?: (ctx: RenderContext, visit: (name: string, node: StatusNode) => void) => void,
    /** Writes the members' JSON directly, without making nodes: what renders ten thousand peers. */
    private readonly writeMembers?: (w: JsonWriter, depth: number, ctx: RenderContext) => void,
  ) {}

  members(ctx: RenderContext): Array<[string, StatusNode]> {
    return this.list(ctx);
  }

  write(w: JsonWriter, depth: number, ctx: RenderContext): boolean {
    if (this.writeMembers) {
      this.writeMembers(w, depth, ctx);
      return true;
    }
    w.open();
    let first = true;
    if (this.each) {
      this.each(ctx, (name, node) => {
        if (node instanceof FieldNode && !node.present(ctx)) return;
        w.key(name, depth + 1, first);
        node.write(w, depth + 1, ctx);
        first = false;
      });
    } else {
      // A member's key is written before knowing whether it is present, and taken back
      // if it is not: write() writes nothing and says false for an absent member, and
      // asking first would read its value twice.
      const list = this.list(ctx);
      const writer = this.writers.of(list, depth, w.pretty);
      if (writer) return writer(list, w, ctx);
      for (let i = 0; i < list.length; i++) {
        const mark = w.pos;
        w.key(list[i][0], depth + 1, first);
        if (list[i][1].write(w, depth + 1, ctx)) first = false;
        else w.pos = mark;
      }
    }
    w.close(depth, first);
    return true;
  }

  // The members' writer, once the same list comes a second time: most lists are made once
  // per catalog, and a list made for each answer (`?fields=`) is never seen twice, and
  // costs nothing more.
  private readonly writers = new ListWriterMemo();

  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void {
    if (this.each) this.each(ctx, fn);
    else for (const [name, node] of this.list(ctx)) fn(name, node);
  }

  child(name: string, ctx: RenderContext): StatusNode | undefined {
    if (this.find) return this.find(name, ctx);
    return this.list(ctx).find(([n]) => n === name)?.[1];
  }

  json(ctx: RenderContext): Json {
    const out: { [key: string]: Json } = {};
    for (const [name, node] of this.list(ctx)) {
      const v = node.json(ctx);
      if (v !== undefined) out[name] = v;
    }
    return out;
  }
}

/** A declared field (see shape.ts) of one instance, read from that instance's source. */
export class FieldNode<S> implements StatusNode {
  readonly kind: 'object' | 'leaf';
  readonly label?: string;
  readonly metric?: MetricType;
  readonly help?: string;
  numeric?: (value: Scalar) => number;
  readonly text?: TextName;
  readonly histogram?: HistogramSnapshot;

  constructor(
    private readonly field: Field<S>,
    private readonly source: S,
    readonly flat?: boolean,
  ) {
    this.kind = field.kind === 'leaf' ? 'leaf' : 'object';
    if (field.kind === 'entries' || field.kind === 'group') this.label = field.label;
    if (field.kind === 'leaf' || field.kind === 'entries') {
      this.metric = field.metric;
      this.help = field.help;
    }
    if (field.kind === 'leaf') {
      this.numeric = field.numeric;
      this.text = field.text;
    }
    if (field.kind === 'group' && field.histogram) {
      this.histogram = field.histogram.snapshot(source);
      this.text = field.histogram.text;
      this.help = field.histogram.help;
    }
  }

  raw(ctx: RenderContext): Scalar | undefined {
    return this.field.kind === 'leaf' ? this.field.value(this.source, ctx) : undefined;
  }

  members(ctx: RenderContext): Array<[string, StatusNode]> {
    const f = this.field;
    if (f.kind === 'leaf') return NO_MEMBERS;
    if (f.kind === 'entries')
      return entryList(f, this.source, ctx).map(([key, value]) => [key, new ValueNode(value, f.metric, f.help)]);
    if (f.kind === 'histograms') return (f.list(this.source) ?? []).map(([name, h]) => [name, new HistogramNode(name, h.snapshot())]);
    const out: Array<[string, StatusNode]> = [];
    for (const child of f.fields) {
      const node = new FieldNode(child, this.source);
      if (node.present(ctx)) out.push([child.name, node]);
    }
    return out;
  }

  child(name: string, ctx: RenderContext): StatusNode | undefined {
    const f = this.field;
    if (f.kind === 'group') {
      const child = f.fields.find((c) => c.name === name);
      if (!child) return undefined;
      const node = new FieldNode(child, this.source);
      return node.present(ctx) ? node : undefined;
    }
    return this.members(ctx).find(([n]) => n === name)?.[1];
  }

  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void {
    for (const [name, node] of this.members(ctx)) fn(name, node);
  }

  /** Whether the field exists for this instance now. */
  present(ctx: RenderContext): boolean {
    const f = this.field;
    if (f.kind === 'leaf') return f.value(this.source, ctx) !== undefined;
    if (f.kind === 'group') return !f.present || f.present(this.source);
    if (f.kind === 'histograms') return f.list(this.source) !== undefined;
    return true;
  }

  json(ctx: RenderContext): Json | undefined {
    return fieldJson(this.field, this.source, ctx);
  }

  write(w: JsonWriter, depth: number, ctx: RenderContext): boolean {
    return writeField(this.field, this.source, w, depth, ctx);
  }
}

/** A declared field of a source read again whenever the node is used: a node kept from
 * one answer to the next (the families' nodes are) must not keep the figures it was made
 * with. */
export class LiveNode<S> implements StatusNode {
  readonly kind: 'object' | 'leaf';
  constructor(
    private readonly field: Field<S>,
    private readonly source: () => S,
    readonly flat?: boolean,
  ) {
    this.kind = field.kind === 'leaf' ? 'leaf' : 'object';
  }
  private now(): FieldNode<S> {
    return new FieldNode(this.field, this.source(), this.flat);
  }
  members(ctx: RenderContext): Array<[string, StatusNode]> {
    return this.now().members(ctx);
  }
  child(name: string, ctx: RenderContext): StatusNode | undefined {
    return this.now().child(name, ctx);
  }
  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void {
    this.now().visit(ctx, fn);
  }
  json(ctx: RenderContext): Json | undefined {
    return fieldJson(this.field, this.source(), ctx);
  }
  write(w: JsonWriter, depth: number, ctx: RenderContext): boolean {
    return writeField(this.field, this.source(), w, depth, ctx);
  }
}

/** A bare value: an entry of an `entries` field, or a value a branch computes. */
export class ValueNode implements StatusNode {
  readonly kind = 'leaf';
  constructor(
    private readonly value: Scalar,
    readonly metric?: MetricType,
    readonly help?: string,
  ) {}
  members(): Array<[string, StatusNode]> {
    return NO_MEMBERS;
  }
  visit(): void {}
  child(): undefined {
    return undefined;
  }
  json(): Json {
    return this.value;
  }
  write(w: JsonWriter): boolean {
    w.scalar(this.value);
    return true;
  }
}

/** One histogram of an instance: an object of its JSON members for paths and JSON, and
 * the whole histogram for the text format. */
export class HistogramNode implements StatusNode {
  readonly kind = 'object';
  readonly help: string;
  constructor(
    name: string,
    readonly histogram: HistogramSnapshot,
  ) {
    this.help = HISTOGRAM_HELP[name] ?? name;
  }
  members(): Array<[string, StatusNode]> {
    return Object.entries(histogramJson(this.histogram)).map(([k, v]) => [k, new JsonNode(() => v)]);
  }
  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void {
    for (const [name, node] of this.members()) fn(name, node);
  }
  child(name: string): StatusNode | undefined {
    return this.members().find(([n]) => n === name)?.[1];
  }
  json(): Json {
    return histogramJson(this.histogram);
  }
  write(w: JsonWriter, depth: number): boolean {
    writeHistogram(w, this.histogram, depth);
    return true;
  }
}

/** A JSON value as JSON.stringify writes it, indented to `depth` when pretty. */
function writeJson(w: JsonWriter, value: Json, depth: number): void {
  w.text(w.pretty ? JSON.stringify(value, null, '\t').replace(/\n/g, '\n' + '\t'.repeat(depth)) : JSON.stringify(value));
}

/** A field's histograms written as histogramsJson() would be stringified, without
 * making it: the whole tree has one per zone and peer, ten thousand of them, and the
 * bounds, the same for most, are encoded once. */
function writeHistograms(w: JsonWriter, list: ReadonlyArray<readonly [string, Histogram]>, depth: number): void {
  w.open();
  for (let i = 0; i < list.length; i++) {
    w.key(list[i][0], depth + 1, i === 0);
    writeHistogram(w, list[i][1].current(), depth + 1);
  }
  w.close(depth, list.length === 0);
}

function writeHistogram(w: JsonWriter, s: HistogramSnapshot, depth: number): void {
  const t = histogramText(s.bounds, depth, w.pretty);
  w.put(t.head);
  // There is always a bucket: the one above the last bound.
  w.numbers(s.buckets, NOTHING, t.next.bytes, t.next.view);
  w.put(t.count);
  w.scalar(s.count);
  w.put(t.sum);
  w.thousandths(s.sum);
  // An empty histogram's percentiles are all null: one constant run of bytes.
  if (s.count === 0) return w.put(t.emptyEnd);
  for (let i = 0; i < HISTOGRAM_PERCENTILES.length; i++) {
    w.put(t.percentiles[i]);
    const v = quantile(s, HISTOGRAM_PERCENTILES[i][1]);
    if (v === undefined) w.put(NULL);
    else w.thousandths(v);
  }
  w.put(t.end);
}
const NOTHING = new Uint8Array(0);
const NULL = encoded('null');

/**
 * A histogram's constant text at one depth and layout, in histogramJson()'s order, as a
 * few runs of bytes written four at a time: everything from its `{` to its first bucket
 * (the bounds are the same for every histogram of a catalog entry), then each key with
 * what ends the value before it. Written member by member, its keys and bounds cost more
 * than its figures.
 */
interface HistogramText {
  readonly head: Encoded;
  /** Between two buckets. */
  readonly next: Encoded;
  /** The buckets' `]` and the count's key. */
  readonly count: Encoded;
  readonly sum: Encoded;
  readonly percentiles: readonly Encoded[];
  /** The null percentiles of an empty histogram and its `}`. */
  readonly emptyEnd: Encoded;
  readonly end: Encoded;
}
const histogramTexts = new WeakMap<readonly number[], HistogramText[]>();
function histogramText(bounds: readonly number[], depth: number, pretty: boolean): HistogramText {
  let forBounds = histogramTexts.get(bounds);
  if (!forBounds) histogramTexts.set(bounds, (forBounds = []));
  return (forBounds[depth * 2 + (pretty ? 1 : 0)] ??= makeHistogramText(bounds, depth, pretty));
}
function makeHistogramText(bounds: readonly number[], depth: number, pretty: boolean): HistogramText {
  const inner = pretty ? '\n' + '\t'.repeat(depth + 1) : '';
  const item = pretty ? '\n' + '\t'.repeat(depth + 2) : '';
  const key = (name: string, first = false) => Buffer.from(prefix(name, depth + 1, first, pretty)).toString();
  const boundsText = pretty ? JSON.stringify(bounds, null, '\t').replace(/\n/g, inner) : JSON.stringify(bounds);
  const end = pretty ? Buffer.from(closing(depth)).toString() : '}';
  const percentiles = HISTOGRAM_PERCENTILES.map(([name]) => key(name));
  return {
    head: encoded('{' + key('bounds', true) + boundsText + key('buckets') + '[' + item),
    next: encoded(',' + item),
    count: encoded(inner + ']' + key('count')),
    sum: encoded(key('sum')),
    percentiles: percentiles.map((k) => encoded(k)),
    emptyEnd: encoded(percentiles.map((k) => k + 'null').join('') + end),
    end: encoded(end),
  };
}

/** A field's histograms as one JSON object (see shape.ts Histograms). */
function histogramsJson(list: ReadonlyArray<readonly [string, Histogram]>): { [key: string]: Json } {
  const out: { [key: string]: Json } = {};
  for (const [name, h] of list) out[name] = histogramJson(h.snapshot());
  return out;
}

/** A value that is JSON already (the /config tree under the API root). */
export class JsonNode implements StatusNode {
  readonly kind = 'object';
  constructor(private readonly value: () => Json) {}
  members(): Array<[string, StatusNode]> {
    const v = this.value();
    // An array's members are its indices, so that a path reaches any value the JSON shows.
    return typeof v === 'object' && v !== null ? Object.entries(v).map(([k, x]) => [k, new JsonNode(() => x)]) : NO_MEMBERS;
  }
  visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void {
    for (const [name, node] of this.members()) fn(name, node);
  }
  child(name: string): StatusNode | undefined {
    return this.members().find(([n]) => n === name)?.[1];
  }
  json(): Json {
    return this.value();
  }
  write(w: JsonWriter, depth: number): boolean {
    writeJson(w, this.value(), depth);
    return true;
  }
}

/** fieldJson's twin that writes JSON bytes: the same declarations, compiled (below). */
export function writeField<S>(field: Field<S>, source: S, w: JsonWriter, depth: number, ctx: RenderContext): boolean {
  if (field.kind === 'leaf') {
    const v = field.value(source, ctx);
    if (v === undefined) return false;
    // A time's text straight into the writer, as the compiled writers do: renderTime()
    // would make a new string, which the writer's string cache then hashes every answer.
    if (!field.time) w.scalar(v);
    else if (ctx.dateEpoch) w.scalar(Math.round(v as number));
    else w.isoTime(v as number);
    return true;
  }
  if (field.kind === 'group' && field.present && !field.present(source)) return false;
  if (field.kind === 'histograms') {
    const list = field.list(source);
    if (list === undefined) return false;
    writeHistograms(w, list, depth);
    return true;
  }
  compiled(field, depth, w.pretty)(source, w, ctx);
  return true;
}

type Writer<S> = (source: S, w: JsonWriter, ctx: RenderContext) => void;

// An object field's writer, made once per field, depth and layout: straight-line code
// with every key pre-encoded, so that writing ten thousand peers runs no lookups and no
// generic walk, only their values. A member's key is written only once the member is
// known to be present.
const writers = new WeakMap<Field<unknown>, Array<Writer<unknown>>>();

function compiled<S>(field: Group<S> | Entries<S>, depth: number, pretty: boolean): Writer<S> {
  let forField = writers.get(field as Field<unknown>);
  if (!forField) writers.set(field as Field<unknown>, (forField = []));
  const slot = depth * 2 + (pretty ? 1 : 0);
  return (forField[slot] ??= compile(field, depth, pretty) as Writer<unknown>) as Writer<S>;
}

function compile<S>(field: Group<S> | Entries<S>, depth: number, pretty: boolean): Writer<S> {
  if (field.kind === 'entries') {
    // An entries field has few distinct keys (status codes): a small map of its own keeps
    // them in cache, where the shared map of every name ever written would miss.
    const keys = new Map<string, Uint8Array>();
    // One emit function for every call: the writer and the count are its state.
    let out: JsonWriter;
    let n = 0;
    const emit = (name: string, value: number) => {
      let k = keys.get(name);
      if (!k) keys.set(name, (k = prefix(name, depth + 1, false, pretty)));
      // The first key is the same bytes without the comma.
      out.bytes(k, n++ === 0 ? 1 : 0);
      out.scalar(value);
    };
    return (source, w, ctx) => {
      out = w;
      n = 0;
      w.open();
      field.entries(source, ctx, emit);
      w.close(depth, n === 0);
    };
  }
  // Every constant the writer needs (value functions, nested writers) is bound once as a
  // variable of the closure. Keys are not data at all: they are stored byte by byte into
  // the writer's buffer through locals `b` and `p`, which go back to the writer around
  // every call that writes by itself.
  const args: unknown[] = [];
  let consts = '';
  const arg = (v: unknown) => {
    const name = `k${args.length}`;
    consts += `const ${name} = a[${args.length}];\n`;
    args.push(v);
    return name;
  };
  const store = storeCode;
  const key = (name: string) =>
    `if (f) {\n${store(prefix(name, depth + 1, true, pretty))}} else {\n${store(prefix(name, depth + 1, false, pretty))}}\n`;
  const sync = (call: string) => `w.pos = p; ${call}; b = w.buf; d = w.view; p = w.pos;`;
  let code = `let b = w.buf, d = w.view, p = w.pos;\n${store(Buffer.from('{'))}let f = true;\n`;
  field.fields.forEach((child, i) => {
    if (child.kind === 'leaf' && child.encoded) {
      code += `const e${i} = ${arg(child.encoded)}(s);\nconst v${i} = e${i} === undefined ? ${arg(child.value)}(s, c) : undefined;\n`;
      code += `if (e${i} !== undefined || v${i} !== undefined) {\n${key(child.name)}${sync(`if (e${i} !== undefined) w.bytes(e${i}); else w.scalar(v${i})`)}\nf = false;\n}\n`;
    } else if (child.kind === 'leaf') {
      const value = child.time
        ? sync(`if (c.dateEpoch) w.scalar(Math.round(v${i})); else w.isoTime(v${i})`)
        : `if (typeof v${i} === 'number' && v${i} >= 0 && v${i} < 10 && v${i} === (v${i} | 0)) { if (p >= b.length) { w.pos = p; w.room(1); b = w.buf; d = w.view; } b[p++] = 48 + v${i}; } else { ${sync(`w.scalar(v${i})`)} }`;
      code += `const v${i} = ${arg(child.value)}(s, c);\nif (v${i} !== undefined) {\n${key(child.name)}${value}\nf = false;\n}\n`;
    } else if (child.kind === 'histograms') {
      code += `const h${i} = ${arg(child.list)}(s);\nif (h${i} !== undefined) {\n${key(child.name)}${sync(`${arg(writeHistograms)}(w, h${i}, ${depth + 1})`)}\nf = false;\n}\n`;
    } else {
      const present = child.kind === 'group' && child.present ? `${arg(child.present)}(s)` : 'true';
      code += `if (${present}) {\n${key(child.name)}${sync(`${arg(compiled(child, depth + 1, pretty))}(s, w, c)`)}\nf = false;\n}\n`;
    }
  });
  const end = pretty ? closing(depth) : Buffer.from('}');
  code += `if (f) {\n${store(Buffer.from('}'))}} else {\n${store(end)}}\nw.pos = p;`;
  const make = new Function('a', `${consts}return function write(s, w, c) {\n${code}\n};`);
  return make(args) as Writer<S>;
}

// Code that stores constant bytes at `p` of the writer's buffer `b` (`d` its DataView):
// four bytes per store (a pretty key is some twenty bytes), the rest one by one, after
// making room.
function storeCode(bytes: Uint8Array): string {
  const at = (i: number) => (i ? `p + ${i}` : 'p');
  let out = `if (p + ${bytes.length} > b.length) { w.pos = p; w.room(${bytes.length}); b = w.buf; d = w.view; }\n`;
  let i = 0;
  for (; i + 4 <= bytes.length; i += 4) out += `d.setUint32(${at(i)}, ${Buffer.from(bytes.subarray(i, i + 4)).readUInt32LE(0)}, true); `;
  for (; i < bytes.length; i++) out += `b[${at(i)}] = ${bytes[i]}; `;
  return out + `p += ${bytes.length};\n`;
}

/** The JSON of a field straight from its declaration, without making nodes: what
 * rendering a whole tree of thousands of peers runs. */
export function fieldJson<S>(field: Field<S>, source: S, ctx: RenderContext): Json | undefined {
  switch (field.kind) {
    case 'leaf': {
      const v = field.value(source, ctx);
      if (v === undefined) return undefined;
      return field.time ? renderTime(v as number, ctx) : v;
    }
    case 'entries': {
      const out: { [key: string]: Json } = {};
      field.entries(source, ctx, (key, value) => (out[key] = value));
      return out;
    }
    case 'histograms': {
      const list = field.list(source);
      return list === undefined ? undefined : histogramsJson(list);
    }
    case 'group': {
      if (field.present && !field.present(source)) return undefined;
      const out: { [key: string]: Json } = {};
      for (const child of field.fields) {
        const v = fieldJson(child, source, ctx);
        if (v !== undefined) out[child.name] = v;
      }
      return out;
    }
  }
}

/** A collection: one member per instance, named by the instance (zone, upstream, peer).
 * With `fields` and `fill`, its JSON is written straight from the declarations with one
 * source object refilled for each member, and no node is made. */
export function collection<T, S = unknown>(
  label: string,
  items: () => Iterable<T>,
  nameOf: (item: T) => string,
  /** `transient`: the node is written at once and dropped, so it may read its values
   * into memory the next member reuses. */
  nodeOf: (item: T, transient: boolean) => StatusNode,
  direct?: {
    fields: Group<S>;
    fill: (item: T, index: number) => S;
    /** Runs before the members are written: a chance to read all their memory at once. */
    prepare?: () => void;
  },
): ObjectNode {
  // Members are written here rather than through visit(): their keys come encoded once
  // per list, and with `direct` no node is made at all.
  const memberKeys = new KeyMemo();
  const writeMembers = (w: JsonWriter, depth: number, ctx: RenderContext) => {
    w.open();
    let first = true;
    let index = 0;
    direct?.prepare?.();
    const list = items();
    const keys = memberKeys.of(list, nameOf, depth + 1, w.pretty);
    // The members' writer, looked up once for all of them (their presence is asked below).
    const write = direct ? compiled(direct.fields, depth + 1, w.pretty) : undefined;
    for (const item of list) {
      const i = index++;
      let source: S | undefined;
      let node: StatusNode | undefined;
      if (direct) {
        source = direct.fill(item, i);
        if (direct.fields.present && !direct.fields.present(source)) continue;
      } else {
        node = nodeOf(item, true);
        if (node instanceof FieldNode && !node.present(ctx)) continue;
      }
      // The first member's key is the same bytes without the comma.
      if (keys) w.span(keys.bytes, keys.view, keys.at[i] + (first ? 1 : 0), keys.at[i + 1]);
      else w.key(nameOf(item), depth + 1, first);
      if (node) node.write(w, depth + 1, ctx);
      else write!(source!, w, ctx);
      first = false;
    }
    w.close(depth, first);
  };
  return new ObjectNode(
    () => Array.from(items(), (item): [string, StatusNode] => [nameOf(item), nodeOf(item, false)]),
    (name) => {
      for (const item of items()) if (nameOf(item) === name) return nodeOf(item, false);
      return undefined;
    },
    label,
    undefined,
    undefined,
    (_ctx, visit) => {
      for (const item of items()) visit(nameOf(item), nodeOf(item, true));
    },
    writeMembers,
  );
}

// Members' keys (",\n\t\t\"name\": "), encoded once per list of items: a configuration's
// list stays the same array until the configuration changes, and ten thousand peer names
// looked up one by one in the map of every name would each miss the cache. They are one
// buffer, member i's key from at[i] to at[i + 1]: read in order, as they are written,
// rather than ten thousand small arrays each a pointer away, and copied four bytes at a
// time through `view` (JsonWriter.span).
interface MemberKeys {
  readonly count: number;
  readonly bytes: Uint8Array;
  readonly view: DataView;
  readonly at: Uint32Array;
}
function packKeys(names: readonly string[], depth: number, pretty: boolean): MemberKeys {
  const each = names.map((name) => prefix(name, depth, false, pretty));
  const at = new Uint32Array(each.length + 1);
  for (let i = 0; i < each.length; i++) at[i + 1] = at[i] + each[i].length;
  return { count: each.length, ...encoded(Buffer.concat(each)), at };
}

/** The packed keys of the last list a collection was given, by depth and layout: it is
 * given the same array answer after answer until its configuration changes. */
class KeyMemo {
  private list: readonly unknown[] | undefined = undefined;
  private bySlot: MemberKeys[] = [];

  of<T>(list: Iterable<T>, nameOf: (item: T) => string, depth: number, pretty: boolean): MemberKeys | undefined {
    if (!Array.isArray(list)) return undefined;
    if (list !== this.list) {
      this.list = list;
      this.bySlot = [];
    }
    const slot = depth * 2 + (pretty ? 1 : 0);
    const keys = this.bySlot[slot];
    // A list changed in place (none is, today) gets its keys again.
    if (keys?.count === list.length) return keys;
    return (this.bySlot[slot] = packKeys((list as T[]).map(nameOf), depth, pretty));
  }
}
const memberName = (member: readonly [string, StatusNode]): string => member[0];

type ListWriter = ((list: Array<[string, StatusNode]>, w: JsonWriter, ctx: RenderContext) => boolean) & { readonly count?: number };

/**
 * An object's writer for the last list of members it was given, by depth and layout, made
 * once the same list comes a second time: straight-line code with a call site of its own
 * for each member, and the keys stored as constants. The loop it replaces called every
 * kind of node from one site and copied each key by a call; V8's megamorphic property
 * loads, 2.9 % of the example tree's profile, left that profile with it.
 */
class ListWriterMemo {
  private list: readonly unknown[] | undefined = undefined;
  private bySlot: ListWriter[] = [];
  of(list: Array<[string, StatusNode]>, depth: number, pretty: boolean): ListWriter | undefined {
    if (list !== this.list) {
      this.list = list;
      this.bySlot = [];
      return undefined;
    }
    const slot = depth * 2 + (pretty ? 1 : 0);
    const writer = this.bySlot[slot];
    // A list changed in place (none is, today) gets its writer again.
    if (writer?.count === list.length) return writer;
    return (this.bySlot[slot] = listWriter(list.map(memberName), depth, pretty));
  }
}

// Writers by depth, layout and names: every upstream's node has the same members. Bounded
// for configurations reloaded with ever new names.
const listWriters = new Map<string, ListWriter>();
const LIST_WRITERS_MAX = 4096;
function listWriter(names: readonly string[], depth: number, pretty: boolean): ListWriter {
  const id = `${depth}${pretty ? 'p' : 'c'}\0${names.join('\0')}`;
  let writer = listWriters.get(id);
  if (writer) return writer;
  // Called after the object's `{`; a member's key is taken back when it is absent.
  let code = 'let f = true, mark = 0, b, d, p;\n';
  names.forEach((name, i) => {
    code += `mark = w.pos; b = w.buf; d = w.view; p = mark;\nif (f) {\n${storeCode(prefix(name, depth + 1, true, pretty))}} else {\n${storeCode(prefix(name, depth + 1, false, pretty))}}\nw.pos = p;\n`;
    code += `if (list[${i}][1].write(w, ${depth + 1}, c)) f = false; else w.pos = mark;\n`;
  });
  code += `w.close(${depth}, f);\nreturn true;`;
  writer = Object.assign(new Function('list', 'w', 'c', code) as ListWriter, { count: names.length });
  if (listWriters.size >= LIST_WRITERS_MAX) listWriters.clear();
  listWriters.set(id, writer);
  return writer;
}

/** The usual family branch: one flat instance per configured zone (a zone's text is the
 * flat `group_field value` form), labelled `zone` above it, made from its declarations. */
export function zoneCollection<T extends string | { readonly name: string }, S>(
  items: () => Iterable<T>,
  fields: Group<S>,
  sourceOf: (item: T) => S,
): ObjectNode {
  return collection(
    'zone',
    items,
    (item: T) => (typeof item === 'string' ? item : item.name),
    (item: T): StatusNode => new FieldNode(fields, sourceOf(item), true),
    // Written without a node: each zone's source, then its compiled writer.
    { fields, fill: sourceOf },
  );
}
