// Runs SQL statements through a Node.js SQLite client with QueryPilot loaded,
// as an application would, and prints one JSON line per statement:
// {"columns": [...], "rows": [[...], ...]}, {"done": true} for a statement
// that returns no data, or {"error": "..."}.
//
// Usage: node node_client.js MODULE DATABASE EXTENSION STATEMENTS_JSON
//   MODULE is "better-sqlite3" or "libsql" (both export the same API).
// With QP_LEAK_FILE set, the application registers a function of its own,
// leak(x), that appends x to that file and returns it.
'use strict';
const fs = require('fs');
const [moduleName, dbPath, extension, statementsJson] = process.argv.slice(2);
const Database = require(moduleName);
const db = new Database(dbPath);
db.loadExtension(extension);
if (process.env.QP_LEAK_FILE) {
  db.function('leak', (x) => {
    fs.appendFileSync(process.env.QP_LEAK_FILE, String(x));
    return x;
  });
}
for (const sql of JSON.parse(statementsJson)) {
  try {
    const stmt = db.prepare(sql);
    if (stmt.reader === false) {
      stmt.run();
      console.log(JSON.stringify({ done: true }));
      continue;
    }
    const columns = stmt.columns().map((c) => c.name);
    const rows = stmt.raw(true).all();
    console.log(JSON.stringify({ columns, rows }));
  } catch (e) {
    console.log(JSON.stringify({ error: String(e.message) }));
  }
}
db.close();
