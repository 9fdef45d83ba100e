import { type Catalog } from './catalog.js';
import type { Status } from './status.js';
import { type StatusNode } from './tree.js';
export interface Branch {
    readonly path: readonly string[];
    present(catalog: Catalog): boolean;
    node(status: Status): StatusNode;
}
export declare const branches: Branch[];
export declare function statusRoot(status: Status): StatusNode;
