// QueryPilot for Node.js: the loadable extension, packaged.

/** Any database with loadExtension(path): better-sqlite3's and libsql's Database. */
export interface LoadableDatabase {
  loadExtension(path: string, entryPoint?: string): unknown;
}

/** The absolute path of the packaged library, querypilot.so, suffix included (as Python's loadable_path()). */
export function getLoadablePath(): string;

/** Loads QueryPilot into `db`; throws TypeError when `db` cannot load extensions. */
export function load(db: LoadableDatabase): void;

/** Any database whose prepare(sql).get(...params) returns a row object: better-sqlite3's and libsql's. */
export interface QueryableDatabase {
  prepare(sql: string): { get(...params: unknown[]): unknown };
}

/** Run `runId`'s chart (agent_chart): a Vega-Lite v5 specification, its rows embedded. */
export function chart(db: QueryableDatabase, runId: number | bigint): Record<string, unknown>;

/** The same chart as SVG text, drawn in this process by npm's vega and vega-lite. */
export function chartSvg(db: QueryableDatabase, runId: number | bigint): Promise<string>;
