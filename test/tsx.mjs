// tap runs every test file, and the TypeScript fixtures they fork, through this: tsx
// (esbuild) compiles each file once and caches it, where tap's own ts-node plugin took
// some two seconds a file compiling the same sources again. tsconfig.test.json is named
// because tsx applies a tsconfig only to the files it includes, and tsconfig.json does
// not include the tests: without it, tests would get define semantics for class fields
// (`useDefineForClassFields: false` is what the built code has).
import { register } from 'tsx/esm/api';

register({ tsconfig: new URL('../tsconfig.test.json', import.meta.url).pathname });
