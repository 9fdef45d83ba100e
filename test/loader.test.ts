// The tests run the TypeScript sources through test/tsx.mjs, not the built code: they
// must get what tsc builds from them. tsx applies a tsconfig only to the files it
// includes; run without tsconfig.test.json, these files got define semantics for class
// fields, and a field a base class's constructor set through a method was wiped.
import t from 'tap';

class Base {
  constructor() {
    this.init();
  }
  init(): void {}
}

class Derived extends Base {
  // Declared without an initializer: with `useDefineForClassFields: false` (tsconfig.json,
  // as dist/ is built) this emits nothing; with define semantics it redefines the field
  // as undefined after Base's constructor has run.
  value?: number;
  override init(): void {
    this.value = 5;
  }
}

t.equal(new Derived().value, 5, 'a field without an initializer is not redefined after the base constructor');

// tap rebuilds itself when its plugins change only after the run that found them changed
// has started its test files: those would load ts-node and tsx both (scripts/test.mjs
// builds tap first). Compiling every file twice cost the suite a third of its time.
t.notOk(
  process.execArgv.some((arg) => arg.includes('@tapjs/typescript')),
  "this file runs without tap's ts-node plugin: tsx alone compiles it",
);
