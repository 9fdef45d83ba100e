// What each block of the configuration says by itself, before inheritance: the directive
// table fills these in, resolve.ts merges them into the model.
import type { AccessRule, ListenConfig, LocationConfig, Origin, ReturnConfig } from './model.js';
import type { Directive } from './syntax.js';

interface Level {
  /** The single-valued directives already seen in this block, for `is duplicate`. */
  readonly seen: Set<string>;
}

/** A setting with the directive that set it, for errors found later. */
export interface At<T> {
  readonly value: T;
  readonly origin: Origin;
}

export interface InheritableLevel extends Level {
  root?: string;
  /** Only the rules written in this block: a block with any replaces the outer list. */
  readonly access: AccessRule[];
  /** `false` for `auth_basic off`. */
  authBasic?: At<string | false>;
  authUserFile?: string;
}

export interface MainLevel extends Level {
  readonly kind: 'main';
  workerProcesses?: number;
  http?: HttpLevel;
}

export interface HttpLevel extends InheritableLevel {
  readonly kind: 'http';
  readonly servers: ServerLevel[];
}

export interface ServerLevel extends InheritableLevel {
  readonly kind: 'server';
  readonly directive: Directive;
  readonly listens: ListenConfig[];
  readonly names: string[];
  statusZone?: string;
  sslCertificate?: string;
  sslCertificateKey?: string;
  /** Milliseconds. */
  sslHandshakeTimeout?: number;
  return?: At<ReturnConfig>;
  readonly locations: LocationLevel[];
}

export interface LocationLevel extends InheritableLevel {
  readonly kind: 'location';
  readonly origin: Origin;
  readonly modifier: LocationConfig['modifier'];
  readonly path: string;
  readonly regex?: RegExp;
  /** `false` for `status_zone off`. */
  statusZone?: string | false;
  return?: At<ReturnConfig>;
  api?: At<string>;
  apiConfigFiles?: boolean;
  readonly locations: LocationLevel[];
}

export type AnyLevel = MainLevel | HttpLevel | ServerLevel | LocationLevel;
/** nginx's contexts: where a directive may be written. */
export type Context = AnyLevel['kind'];

/** What a directive's check needs besides its block. */
export interface Checker {
  /** Files come from the disk, so the files a directive names can be checked too. */
  readonly disk: boolean;
  readonly cpus: number;
  error(at: Origin, message: string): void;
  /** Applies directives to a block: a block directive's contents, an include's files. */
  walk(directives: readonly Directive[], level: AnyLevel): void;
}
