import type { Catalog } from './catalog.js';
import type { Status } from './status.js';
import { type StatusNode } from './tree.js';
interface ServerSource {
    readonly catalog: Catalog;
}
export declare const serverFields: import("./shape.js").Group<ServerSource>;
/** The server branch: declared fields, then `config_files` where allowed. It is marked
 * flat, and the text format shows only its generation. */
export declare function serverNode(status: Status): StatusNode;
export {};
