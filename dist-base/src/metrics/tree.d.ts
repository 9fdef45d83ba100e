import { JsonWriter } from './json.js';
import { type Field, type Group, type Json, type MetricType, type RenderContext, type Scalar } from './shape.js';
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
}
/** An object whose members come from a function: the tree's branches and collections. */
export declare class ObjectNode implements StatusNode {
    private readonly list;
    private readonly find?;
    readonly label?: string | undefined;
    readonly flat?: boolean | undefined;
    readonly textOnly?: readonly string[] | undefined;
    /** Visits the members without listing them first: for collections of thousands. */
    private readonly each?;
    /** Writes the members' JSON directly, without making nodes: what renders ten thousand peers. */
    private readonly writeMembers?;
    readonly kind = "object";
    constructor(list: (ctx: RenderContext) => Array<[string, StatusNode]>, find?: ((name: string, ctx: RenderContext) => StatusNode | undefined) | undefined, label?: string | undefined, flat?: boolean | undefined, textOnly?: readonly string[] | undefined, 
    /** Visits the members without listing them first: for collections of thousands. */
    each?: ((ctx: RenderContext, visit: (name: string, node: StatusNode) => void) => void) | undefined, 
    /** Writes the members' JSON directly, without making nodes: what renders ten thousand peers. */
    writeMembers?: ((w: JsonWriter, depth: number, ctx: RenderContext) => void) | undefined);
    members(ctx: RenderContext): Array<[string, StatusNode]>;
    write(w: JsonWriter, depth: number, ctx: RenderContext): boolean;
    visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void;
    child(name: string, ctx: RenderContext): StatusNode | undefined;
    json(ctx: RenderContext): Json;
}
/** A declared field (see shape.ts) of one instance, read from that instance's source. */
export declare class FieldNode<S> implements StatusNode {
    private readonly field;
    private readonly source;
    readonly flat?: boolean | undefined;
    readonly kind: 'object' | 'leaf';
    readonly label?: string;
    readonly metric?: MetricType;
    readonly help?: string;
    numeric?: (value: Scalar) => number;
    constructor(field: Field<S>, source: S, flat?: boolean | undefined);
    members(ctx: RenderContext): Array<[string, StatusNode]>;
    child(name: string, ctx: RenderContext): StatusNode | undefined;
    visit(ctx: RenderContext, fn: (name: string, node: StatusNode) => void): void;
    /** Whether the field exists for this instance now. */
    present(ctx: RenderContext): boolean;
    json(ctx: RenderContext): Json | undefined;
    write(w: JsonWriter, depth: number, ctx: RenderContext): boolean;
}
/** A bare value: an entry of an `entries` field, or a value a branch computes. */
export declare class ValueNode implements StatusNode {
    private readonly value;
    readonly metric?: MetricType | undefined;
    readonly help?: string | undefined;
    readonly kind = "leaf";
    constructor(value: Scalar, metric?: MetricType | undefined, help?: string | undefined);
    members(): Array<[string, StatusNode]>;
    visit(): void;
    child(): undefined;
    json(): Json;
    write(w: JsonWriter): boolean;
}
/** fieldJson's twin that writes JSON bytes: the same declarations, compiled (below). */
export declare function writeField<S>(field: Field<S>, source: S, w: JsonWriter, depth: number, ctx: RenderContext): boolean;
/** The JSON of a field straight from its declaration, without making nodes: what
 * rendering a whole tree of thousands of peers runs. */
export declare function fieldJson<S>(field: Field<S>, source: S, ctx: RenderContext): Json | undefined;
/** A collection: one member per instance, named by the instance (zone, upstream, peer).
 * With `fields` and `fill`, its JSON is written straight from the declarations with one
 * source object refilled for each member, and no node is made. */
export declare function collection<T, S = unknown>(label: string, items: () => Iterable<T>, nameOf: (item: T) => string, 
/** `transient`: the node is written at once and dropped, so it may read its values
 * into memory the next member reuses. */
nodeOf: (item: T, transient: boolean) => StatusNode, direct?: {
    fields: Group<S>;
    fill: (item: T, index: number) => S;
    /** Runs before the members are written: a chance to read all their memory at once. */
    prepare?: () => void;
}): ObjectNode;
/** The usual family branch: one flat instance per configured zone (a zone's text is the
 * flat `group_field value` form), labelled `zone` above it, made from its declarations. */
export declare function zoneCollection<T extends string | {
    readonly name: string;
}, S>(items: () => Iterable<T>, fields: Group<S>, sourceOf: (item: T) => S): ObjectNode;
