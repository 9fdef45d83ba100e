// Where a zone's or a peer's histograms live, and with which bounds. Bounds come from the
// catalog (`status_zone_histogram`): `true` means the default ones, `false` or absent none. A
// histogram's block is keyed by its bounds too, so that a reload that changes them starts
// a new histogram rather than reading old counts against new bounds.
import { Histogram, histogramLength, ZoneFullError } from '../engine/index.js';
import type { HistogramSetting } from './catalog.js';
import type { StatusStore } from './store.js';

/**
 * Milliseconds, 1-2-5 steps from 1 ms to 10 s: 13 bounds, 14 buckets. Each bound is
 * about 2.2 times the last, so an interpolated percentile is off by less than a bucket's
 * width, and the `le` values (0.001 ... 10 seconds) are round numbers an operator reads
 * at a glance and can compare with an SLO.
 */
export const DEFAULT_BOUNDS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

export function boundsOf(setting: HistogramSetting | undefined): readonly number[] | undefined {
  return setting === true ? DEFAULT_BOUNDS : setting || undefined;
}

const boundKeys = new WeakMap<readonly number[], string>();
function boundsKey(bounds: readonly number[]): string {
  let k = boundKeys.get(bounds);
  if (k === undefined) boundKeys.set(bounds, (k = bounds.join(',')));
  return k;
}

/** The keys of a zone's or peer's histograms, to free them with its other blocks. */
export function histogramKey(base: string, quantity: string, bounds: readonly number[]): string {
  return `${base}/histogram/${quantity}/${boundsKey(bounds)}`;
}

const made = new WeakMap<object, Histogram>();

/**
 * The histogram of `quantity` under `base` in `zone`, made on first use; undefined when
 * the setting is off, or when the zone has no room left for it: a full zone loses its
 * histograms, never its spec counters.
 */
export function histogramIn(status: StatusStore, zone: string, base: string, quantity: string, setting: HistogramSetting | undefined): Histogram | undefined {
  const bounds = boundsOf(setting);
  if (!bounds) return undefined;
  let block;
  try {
    block = status.counters(zone, histogramKey(base, quantity, bounds), histogramLength(bounds));
  } catch (e) {
    if (e instanceof ZoneFullError) return undefined;
    throw e;
  }
  let h = made.get(block);
  if (!h) made.set(block, (h = new Histogram(block, bounds)));
  return h;
}
