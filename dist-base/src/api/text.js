export const TEXT_CONTENT_TYPE = 'text/plain; version=0.0.4';
function numeric(node, value) {
    if (typeof value === 'number')
        return value;
    if (typeof value === 'boolean')
        return value ? 1 : 0;
    return node.numeric ? node.numeric(value) : undefined;
}
function flatName(parts) {
    return parts.join('_').replace(/[^A-Za-z0-9_:]/g, '_');
}
function flatLines(node, parts, ctx, out, only) {
    if (node.kind === 'leaf') {
        const v = node.json(ctx);
        const n = v === undefined ? undefined : numeric(node, v);
        if (n !== undefined && (!only || only.includes(parts[parts.length - 1])))
            out.push(`${flatName(parts)} ${n}`);
        return;
    }
    for (const [name, child] of node.members(ctx))
        flatLines(child, [...parts, name], ctx, out, only);
}
const escapeLabel = (v) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const escapeHelp = (v) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
// Metric names by path, shared by every instance on that path (every peer's
// selected/total is the same family): a render looks names up one segment at a time
// rather than building and cleaning a string per sample.
class NameNode {
    constructor(name) {
        this.name = name;
        this.children = new Map();
    }
    child(segment) {
        let c = this.children.get(segment);
        if (!c)
            this.children.set(segment, (c = new NameNode(`${this.name}_${segment.replace(/[^A-Za-z0-9_:]/g, '_')}`)));
        return c;
    }
}
function labelled(node, at, labels, ctx, families) {
    if (node.kind === 'leaf') {
        if (!node.metric)
            return;
        const v = node.json(ctx);
        const n = v === undefined ? undefined : numeric(node, v);
        if (n === undefined)
            return;
        let family = at.family;
        if (!family) {
            const name = node.metric === 'counter' && !at.name.endsWith('_total') ? `${at.name}_total` : at.name;
            family = families.get(name);
            if (!family)
                families.set(name, (family = { type: node.metric, help: node.help ?? name, samples: [] }));
            at.family = family;
        }
        family.samples.push(labels ? `{${labels}} ${n}` : ` ${n}`);
        return;
    }
    const label = node.label;
    node.visit(ctx, (name, child) => {
        if (label)
            labelled(child, at, `${labels ? labels + ',' : ''}${label}="${escapeLabel(name)}"`, ctx, families);
        else
            labelled(child, at.child(name), labels, ctx, families);
    });
}
/** The text of the node at the end of `trail` (trail[0] is the /status root). */
export function exposition(trail, ctx) {
    const flatAt = trail.findIndex((s) => s.node.flat);
    const target = trail[trail.length - 1].node;
    if (flatAt >= 0) {
        const lines = [];
        const rel = trail.slice(flatAt + 1).map((s) => s.name);
        flatLines(target, rel, ctx, lines, trail[flatAt].node.textOnly);
        return lines.length ? lines.join('\n') + '\n' : '';
    }
    let at = new NameNode('zonal');
    const labels = [];
    for (let i = 1; i < trail.length; i++) {
        const parent = trail[i - 1].node;
        if (parent.label)
            labels.push(`${parent.label}="${escapeLabel(trail[i].name)}"`);
        else
            at = at.child(trail[i].name);
    }
    const families = new Map();
    labelled(target, at, labels.join(','), ctx, families);
    const out = [];
    for (const [name, f] of families) {
        out.push(`# HELP ${name} ${escapeHelp(f.help)}\n# TYPE ${name} ${f.type}\n`);
        for (const sample of f.samples)
            out.push(name, sample, '\n');
    }
    return out.join('');
}
//# sourceMappingURL=text.js.map