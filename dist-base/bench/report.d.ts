export type Cell = string | number;
/** Wall-clock nanoseconds as a Number: exact for about 104 days, plenty for a run. */
export declare function nowNs(): number;
/** Nanoseconds one call of `run` takes. */
export declare function timeNs(run: () => void): number;
export declare function median(values: readonly number[]): number;
/** Median nanoseconds of `rounds` timed calls of `run`, after `warmup` untimed ones that
 * give V8 the chance to optimise it. The median, not the mean: on a shared machine one
 * round that loses its core to another process says nothing about the code. */
export declare function medianNs(run: () => void, rounds: number, warmup?: number): number;
/** Rounds to 2 decimals, which is all the precision a noisy benchmark has. */
export declare function round2(x: number): number;
/** Formats a number for a table: thousands separated; whole numbers without decimals,
 * others with exactly `digits`, so that a column's decimal points line up. */
export declare function fmt(x: number, digits?: number): string;
/** Prints a titled table with aligned columns: numbers right-aligned, text left. */
export declare function table(title: string, columns: readonly string[], rows: readonly (readonly Cell[])[]): void;
/** Prints the machine-readable result as the last line of output. Numbers are rounded
 * to 2 decimals; call this once, after everything else has been printed. */
export declare function finish(name: string, results: Record<string, number>): void;
/** Prints the message to stderr and ends the run as a failure: for a benchmark whose
 * measured code turned out to be wrong, whose figures would then be meaningless. */
export declare function fail(message: string): never;
