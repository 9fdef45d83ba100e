// JSON text straight from the tree, without building objects first: rendering thousands
// of peers this way makes no garbage but the text itself. The layout is that of
// JSON.stringify(value, null, '\t') when pretty, and of JSON.stringify(value) when not.

export class JsonWriter {
  // Pieces joined once at the end: appending to one string would keep a rope node per
  // piece alive, a million small objects for a large tree (measured: slower, mostly GC).
  readonly parts: string[] = [];
  constructor(readonly pretty: boolean) {}

  open(): void {
    this.parts.push('{');
  }

  /** Writes the key of a member at `depth` (the object's own depth + 1). */
  key(name: string, depth: number, first: boolean): void {
    this.parts.push(prefix(name, depth, first, this.pretty));
  }

  close(depth: number, empty: boolean): void {
    this.parts.push(empty || !this.pretty ? '}' : closing(depth));
  }

  scalar(value: number | string | boolean): void {
    this.parts.push(scalarText(value));
  }

  text(): string {
    return this.parts.join('');
  }
}

export function scalarText(value: number | string | boolean): string {
  return typeof value === 'string' ? JSON.stringify(value) : typeof value === 'number' && !Number.isFinite(value) ? 'null' : String(value);
}

// "\n\t\t\"name\": " and its variants, made once per name, depth and position.
const prefixes = new Map<string, string[]>();
export function prefix(name: string, depth: number, first: boolean, pretty: boolean): string {
  let forName = prefixes.get(name);
  if (!forName) prefixes.set(name, (forName = []));
  const slot = depth * 4 + (first ? 2 : 0) + (pretty ? 1 : 0);
  let p = forName[slot];
  if (p === undefined) {
    p = (first ? '' : ',') + (pretty ? '\n' + '\t'.repeat(depth) : '') + JSON.stringify(name) + (pretty ? ': ' : ':');
    forName[slot] = p;
  }
  return p;
}

const closings: string[] = [];
export function closing(depth: number): string {
  return (closings[depth] ??= '\n' + '\t'.repeat(depth) + '}');
}
