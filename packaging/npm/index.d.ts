// QueryPilot for Node.js: the loadable extension, packaged.

/** Any database with loadExtension(path): better-sqlite3's and libsql's Database. */
export interface LoadableDatabase {
  loadExtension(path: string, entryPoint?: string): unknown;
}

/** The absolute path of the packaged library, querypilot.so, suffix included (as Python's loadable_path()). */
export function getLoadablePath(): string;

/** Loads QueryPilot into `db`; throws TypeError when `db` cannot load extensions. */
export function load(db: LoadableDatabase): void;
