'use strict';
// QueryPilot for Node.js: the loadable extension, packaged.
//
//   const Database = require('better-sqlite3');   // or require('libsql')
//   const querypilot = require('querypilot');
//   const db = new Database('shop.db');
//   querypilot.load(db);
//   db.prepare("SELECT row FROM ask('How many orders are there?')").all();
//   querypilot.chart(db, 1);            // run 1's chart: a Vega-Lite spec
//   await querypilot.chartSvg(db, 1);   // the same, drawn as SVG by vega
const path = require('path');

// The absolute path of the packaged library, querypilot.so, suffix included
// (as Python's querypilot.loadable_path() gives it).
function getLoadablePath() {
  return path.join(__dirname, 'lib', 'querypilot.so');
}

// Loads QueryPilot into a better-sqlite3 or libsql Database.
function load(db) {
  if (!db || typeof db.loadExtension !== 'function') {
    throw new TypeError('querypilot.load(db): db must be a better-sqlite3 or libsql Database (it has no loadExtension method)');
  }
  db.loadExtension(getLoadablePath());
}

// The Vega-Lite v5 specification of run `runId`'s answer (agent_chart), as
// an object. Throws the database's error when the run has no chart.
function chart(db, runId) {
  if (!Number.isInteger(runId) && typeof runId !== 'bigint') {
    throw new TypeError('querypilot.chart(db, runId): runId is an integer (agent_runs.id)');
  }
  const row = db.prepare('SELECT agent_chart(CAST(? AS INTEGER)) AS spec').get(runId);
  return JSON.parse(row.spec);
}

// The same chart drawn as SVG text, in this process, by npm's vega and
// vega-lite (optional dependencies of this package: installed beside it
// unless npm could not fetch them). Nothing is fetched while drawing.
async function chartSvg(db, runId) {
  let vega, vegaLite;
  try {
    vega = require('vega');
    vegaLite = require('vega-lite');
  } catch (e) {
    throw new Error('querypilot.chartSvg(): npm\'s vega and vega-lite are not installed (npm install vega@5 vega-lite@5): ' + e.message);
  }
  const compiled = vegaLite.compile(chart(db, runId)).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

module.exports = { getLoadablePath, load, chart, chartSvg };
