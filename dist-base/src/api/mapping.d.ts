import type { ApiMount } from './types.js';
export interface Mapped {
    readonly mount: ApiMount;
    /** The API element, normalised: `/status/http/server_zones/x`. */
    readonly path: string;
}
export interface MappingError {
    readonly error: 'BadRequest';
    readonly description: string;
}
export interface RequestVars {
    /** The request path as received, percent-encoded. */
    readonly path: string;
    readonly query: URLSearchParams;
    readonly host?: string;
}
/** Percent-decodes once and joins repeated slashes; undefined when the encoding is bad. */
export declare function decodePath(raw: string): string | undefined;
/** The mount a decoded URI falls in, in nginx's order: an exact location first, then
 * the first regex that matches, in order of appearance, then the longest prefix. */
export declare function findMount(mounts: readonly ApiMount[], uri: string): {
    mount: ApiMount;
    captures: string[];
} | undefined;
/** The API element a request names, or why it names none. undefined: no mount. */
export declare function mapRequest(mounts: readonly ApiMount[], vars: RequestVars): Mapped | MappingError | undefined;
