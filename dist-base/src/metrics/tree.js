// The status tree as the API walks it. Families hand out nodes; the API resolves a path
// to a node, then renders it as JSON or text. A node is made when a request reaches it,
// so a request for one branch reads only that branch's memory.
import { closing, prefix } from './json.js';
import { renderTime } from './shape.js';
const NO_MEMBERS = [];
/** An object whose members come from a function: the tree's branches and collections. */
export class ObjectNode {
    constructor(list, find, label, flat, textOnly, 
    /** Visits the members without listing them first: for collections of thousands. */
    each, 
    /** Writes the members' JSON directly, without making nodes: what renders ten thousand peers. */
    writeMembers) {
        this.list = list;
        this.find = find;
        this.label = label;
        this.flat = flat;
        this.textOnly = textOnly;
        this.each = each;
        this.writeMembers = writeMembers;
        this.kind = 'object';
    }
    members(ctx) {
        return this.list(ctx);
    }
    write(w, depth, ctx) {
        if (this.writeMembers) {
            this.writeMembers(w, depth, ctx);
            return true;
        }
        w.open();
        let first = true;
        const visit = (name, node) => {
            if (node instanceof FieldNode && !node.present(ctx))
                return;
            w.key(name, depth + 1, first);
            node.write(w, depth + 1, ctx);
            first = false;
        };
        if (this.each)
            this.each(ctx, visit);
        else
            for (const [name, node] of this.list(ctx))
                visit(name, node);
        w.close(depth, first);
        return true;
    }
    visit(ctx, fn) {
        if (this.each)
            this.each(ctx, fn);
        else
            for (const [name, node] of this.list(ctx))
                fn(name, node);
    }
    child(name, ctx) {
        if (this.find)
            return this.find(name, ctx);
        return this.list(ctx).find(([n]) => n === name)?.[1];
    }
    json(ctx) {
        const out = {};
        for (const [name, node] of this.list(ctx)) {
            const v = node.json(ctx);
            if (v !== undefined)
                out[name] = v;
        }
        return out;
    }
}
/** A declared field (see shape.ts) of one instance, read from that instance's source. */
export class FieldNode {
    constructor(field, source, flat) {
        this.field = field;
        this.source = source;
        this.flat = flat;
        this.kind = field.kind === 'leaf' ? 'leaf' : 'object';
        if (field.kind === 'entries')
            this.label = field.label;
        if (field.kind !== 'group') {
            this.metric = field.metric;
            this.help = field.help;
        }
        if (field.kind === 'leaf')
            this.numeric = field.numeric;
    }
    members(ctx) {
        const f = this.field;
        if (f.kind === 'leaf')
            return NO_MEMBERS;
        if (f.kind === 'entries')
            return f.entries(this.source, ctx).map(([key, value]) => [key, new ValueNode(value, f.metric, f.help)]);
        const out = [];
        for (const child of f.fields) {
            const node = new FieldNode(child, this.source);
            if (node.present(ctx))
                out.push([child.name, node]);
        }
        return out;
    }
    child(name, ctx) {
        const f = this.field;
        if (f.kind === 'group') {
            const child = f.fields.find((c) => c.name === name);
            if (!child)
                return undefined;
            const node = new FieldNode(child, this.source);
            return node.present(ctx) ? node : undefined;
        }
        return this.members(ctx).find(([n]) => n === name)?.[1];
    }
    visit(ctx, fn) {
        for (const [name, node] of this.members(ctx))
            fn(name, node);
    }
    /** Whether the field exists for this instance now. */
    present(ctx) {
        const f = this.field;
        if (f.kind === 'leaf')
            return f.value(this.source, ctx) !== undefined;
        if (f.kind === 'group')
            return !f.present || f.present(this.source);
        return true;
    }
    json(ctx) {
        return fieldJson(this.field, this.source, ctx);
    }
    write(w, depth, ctx) {
        return writeField(this.field, this.source, w, depth, ctx);
    }
}
/** A bare value: an entry of an `entries` field, or a value a branch computes. */
export class ValueNode {
    constructor(value, metric, help) {
        this.value = value;
        this.metric = metric;
        this.help = help;
        this.kind = 'leaf';
    }
    members() {
        return NO_MEMBERS;
    }
    visit() { }
    child() {
        return undefined;
    }
    json() {
        return this.value;
    }
    write(w) {
        w.scalar(this.value);
        return true;
    }
}
/** fieldJson's twin that writes JSON bytes: the same declarations, compiled (below). */
export function writeField(field, source, w, depth, ctx) {
    if (field.kind === 'leaf') {
        const v = field.value(source, ctx);
        if (v === undefined)
            return false;
        w.scalar(field.time ? renderTime(v, ctx) : v);
        return true;
    }
    if (field.kind === 'group' && field.present && !field.present(source))
        return false;
    compiled(field, depth, w.pretty)(source, w, ctx);
    return true;
}
// An object field's writer, made once per field, depth and layout: straight-line code
// with every key pre-encoded, so that writing ten thousand peers runs no lookups and no
// generic walk, only their values. A member's key is written only once the member is
// known to be present.
const writers = new WeakMap();
function compiled(field, depth, pretty) {
    let forField = writers.get(field);
    if (!forField)
        writers.set(field, (forField = []));
    const slot = depth * 2 + (pretty ? 1 : 0);
    return (forField[slot] ??= compile(field, depth, pretty));
}
function compile(field, depth, pretty) {
    if (field.kind === 'entries') {
        // An entries field has few distinct keys (status codes): a small map of its own keeps
        // them in cache, where the shared map of every name ever written would miss.
        const keys = new Map();
        return (source, w, ctx) => {
            const list = field.entries(source, ctx);
            w.open();
            for (let i = 0; i < list.length; i++) {
                const name = list[i][0];
                let k = keys.get(name);
                if (!k)
                    keys.set(name, (k = prefix(name, depth + 1, false, pretty)));
                // The first key is the same bytes without the comma.
                w.bytes(k, i === 0 ? 1 : 0);
                w.scalar(list[i][1]);
            }
            w.close(depth, list.length === 0);
        };
    }
    // Every constant the writer needs (value functions, nested writers) is bound once as a
    // variable of the closure. Keys are not data at all: they are stored byte by byte into
    // the writer's buffer through locals `b` and `p`, which go back to the writer around
    // every call that writes by itself.
    const args = [];
    let consts = '';
    const arg = (v) => {
        const name = `k${args.length}`;
        consts += `const ${name} = a[${args.length}];\n`;
        args.push(v);
        return name;
    };
    // Four bytes per store through a DataView (a pretty key is some twenty bytes), the rest
    // one by one.
    const at = (i) => (i ? `p + ${i}` : 'p');
    const store = (bytes) => {
        let out = `if (p + ${bytes.length} > b.length) { w.pos = p; w.room(${bytes.length}); b = w.buf; d = w.view; }\n`;
        let i = 0;
        for (; i + 4 <= bytes.length; i += 4)
            out += `d.setUint32(${at(i)}, ${Buffer.from(bytes.subarray(i, i + 4)).readUInt32LE(0)}, true); `;
        for (; i < bytes.length; i++)
            out += `b[${at(i)}] = ${bytes[i]}; `;
        return out + `p += ${bytes.length};\n`;
    };
    const key = (name) => `if (f) {\n${store(prefix(name, depth + 1, true, pretty))}} else {\n${store(prefix(name, depth + 1, false, pretty))}}\n`;
    const sync = (call) => `w.pos = p; ${call}; b = w.buf; d = w.view; p = w.pos;`;
    let code = `let b = w.buf, d = w.view, p = w.pos;\n${store(Buffer.from('{'))}let f = true;\n`;
    field.fields.forEach((child, i) => {
        if (child.kind === 'leaf') {
            const value = child.time
                ? sync(`if (c.dateEpoch) w.scalar(Math.round(v${i})); else w.isoTime(v${i})`)
                : `if (typeof v${i} === 'number' && v${i} >= 0 && v${i} < 10 && v${i} === (v${i} | 0)) { if (p >= b.length) { w.pos = p; w.room(1); b = w.buf; d = w.view; } b[p++] = 48 + v${i}; } else { ${sync(`w.scalar(v${i})`)} }`;
            code += `const v${i} = ${arg(child.value)}(s, c);\nif (v${i} !== undefined) {\n${key(child.name)}${value}\nf = false;\n}\n`;
        }
        else {
            const present = child.kind === 'group' && child.present ? `${arg(child.present)}(s)` : 'true';
            code += `if (${present}) {\n${key(child.name)}${sync(`${arg(compiled(child, depth + 1, pretty))}(s, w, c)`)}\nf = false;\n}\n`;
        }
    });
    const end = pretty ? closing(depth) : Buffer.from('}');
    code += `if (f) {\n${store(Buffer.from('}'))}} else {\n${store(end)}}\nw.pos = p;`;
    const make = new Function('a', `${consts}return function write(s, w, c) {\n${code}\n};`);
    return make(args);
}
/** The JSON of a field straight from its declaration, without making nodes: what
 * rendering a whole tree of thousands of peers runs. */
export function fieldJson(field, source, ctx) {
    switch (field.kind) {
        case 'leaf': {
            const v = field.value(source, ctx);
            if (v === undefined)
                return undefined;
            return field.time ? renderTime(v, ctx) : v;
        }
        case 'entries': {
            const out = {};
            for (const [key, value] of field.entries(source, ctx))
                out[key] = value;
            return out;
        }
        case 'group': {
            if (field.present && !field.present(source))
                return undefined;
            const out = {};
            for (const child of field.fields) {
                const v = fieldJson(child, source, ctx);
                if (v !== undefined)
                    out[child.name] = v;
            }
            return out;
        }
    }
}
/** A collection: one member per instance, named by the instance (zone, upstream, peer).
 * With `fields` and `fill`, its JSON is written straight from the declarations with one
 * source object refilled for each member, and no node is made. */
export function collection(label, items, nameOf, 
/** `transient`: the node is written at once and dropped, so it may read its values
 * into memory the next member reuses. */
nodeOf, direct) {
    // Members are written here rather than through visit(): their keys come encoded once
    // per list (memberKeys), and with `direct` no node is made at all.
    const writeMembers = (w, depth, ctx) => {
        w.open();
        let first = true;
        let index = 0;
        direct?.prepare?.();
        const list = items();
        const keys = memberKeys(list, nameOf, depth + 1, w.pretty);
        for (const item of list) {
            const i = index++;
            let source;
            let node;
            if (direct) {
                source = direct.fill(item, i);
                if (direct.fields.present && !direct.fields.present(source))
                    continue;
            }
            else {
                node = nodeOf(item, true);
                if (node instanceof FieldNode && !node.present(ctx))
                    continue;
            }
            const key = keys?.[i];
            if (key && !first)
                w.bytes(key);
            else
                w.key(nameOf(item), depth + 1, first);
            if (node)
                node.write(w, depth + 1, ctx);
            else
                writeField(direct.fields, source, w, depth + 1, ctx);
            first = false;
        }
        w.close(depth, first);
    };
    return new ObjectNode(() => Array.from(items(), (item) => [nameOf(item), nodeOf(item, false)]), (name) => {
        for (const item of items())
            if (nameOf(item) === name)
                return nodeOf(item, false);
        return undefined;
    }, label, undefined, undefined, (_ctx, visit) => {
        for (const item of items())
            visit(nameOf(item), nodeOf(item, true));
    }, writeMembers);
}
// Members' keys (",\n\t\t\"name\": "), encoded once per list of items: a configuration's
// list stays the same array until the configuration changes, and ten thousand peer names
// looked up one by one in the map of every name would each miss the cache.
const keysByList = new WeakMap();
function memberKeys(list, nameOf, depth, pretty) {
    if (!Array.isArray(list))
        return undefined;
    let forList = keysByList.get(list);
    if (!forList)
        keysByList.set(list, (forList = []));
    const slot = depth * 2 + (pretty ? 1 : 0);
    const keys = forList[slot];
    if (keys?.length === list.length)
        return keys;
    return (forList[slot] = list.map((item) => prefix(nameOf(item), depth, false, pretty)));
}
/** The usual family branch: one flat instance per configured zone (a zone's text is the
 * flat `group_field value` form), labelled `zone` above it, made from its declarations. */
export function zoneCollection(items, fields, sourceOf) {
    return collection('zone', items, (item) => (typeof item === 'string' ? item : item.name), (item) => new FieldNode(fields, sourceOf(item), true));
}
//# sourceMappingURL=tree.js.map