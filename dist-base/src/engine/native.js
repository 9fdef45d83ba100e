// The only module that loads the addon. Everything else in src/ goes through engine/.
import { createRequire } from 'node:module';
import { endianness } from 'node:os';
/** Kinds of directory entries, as native/layout.h numbers them. */
export const EntryKind = { Block: 1, Counters: 2, Cells: 3, Record: 4 };
// Counters are written as their low 32-bit halves (see counters.ts): that needs the
// little-endian word order of every platform Node ships for on Linux.
if (endianness() !== 'LE')
    throw new Error('zonal needs a little-endian machine');
// This file runs from src/engine (tests) and from dist/src/engine (everything else).
function load() {
    const require = createRequire(import.meta.url);
    const candidates = ['../../build/Release/zonal.node', '../../../build/Release/zonal.node'];
    for (const path of candidates) {
        try {
            return require(path);
        }
        catch (e) {
            if (e.code !== 'MODULE_NOT_FOUND')
                throw e;
        }
    }
    throw new Error('the zonal addon is not built: run `npm install` (or `npm run build`) first');
}
export const addon = load();
//# sourceMappingURL=native.js.map