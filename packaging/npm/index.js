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

// The advance widths of the printable ASCII characters (' ' to '~') in
// Helvetica, in thousandths of the font size (Adobe's Helvetica.afm; Arial's
// are the same).
const HELVETICA_WIDTHS = [
  278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
  556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
  1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
  667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
  333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
  556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
];

// The width of `text` drawn in a sans-serif font of `size` px: Helvetica's
// widths, 1.15 times (bold: 1.3 times), as wide as DejaVu Sans draws it, the
// widest of the fonts "sans-serif" names (Helvetica, Arial, DejaVu Sans), so
// no text is drawn past the room made for it; other characters 0.6 of the
// size, East Asian wide ones the whole size.
function sansSerifWidth(text, size, bold) {
  let thousandths = 0;
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (code >= 32 && code <= 126) thousandths += HELVETICA_WIDTHS[code - 32];
    else if (code >= 0x2e80 && code <= 0xffdc) thousandths += 1000;
    else thousandths += 600;
  }
  return (thousandths / 1000) * size * (bold ? 1.3 : 1.15);
}

// What vega measures text with where it has no canvas (Node without npm's
// canvas): its own guess is 0.8 of the font size a character, about half as
// much again as a sans-serif font draws, so labels are truncated early and
// an axis title is placed below where their text would end, far below its
// labels. While any chartSvg() draws, vega's textMetrics.width (which vega
// lets a caller set) is sansSerifWidth; it is restored when the last ends.
let measuring = 0;
let vegaWidth = null;
function measureWhileDrawing(vega) {
  const metrics = vega.textMetrics;
  if (!metrics || (measuring === 0 && metrics.width !== metrics.estimateWidth)) {
    return () => {};  // vega measures with a canvas, or a width of the caller's
  }
  if (measuring++ === 0) {
    vegaWidth = metrics.width;
    metrics.width = (item, text) => {
      const size = item.fontSize != null ? +item.fontSize || 0 : 11;
      const line = text == null ? '' : String(text).trim();
      const width = sansSerifWidth(line, size, /bold|[6-9]00/.test(String(item.fontWeight || '')));
      // A label past its limit is drawn truncated to it.
      return item.limit > 0 ? Math.min(width, +item.limit) : width;
    };
  }
  return () => {
    if (--measuring === 0) {
      metrics.width = vegaWidth;
      vegaWidth = null;
    }
  };
}

// The same chart drawn as SVG text, in this process, by npm's vega and
// vega-lite (optional dependencies of this package: installed beside it
// unless npm could not fetch them). Nothing is fetched while drawing. Where
// vega has no canvas to measure text with, text is measured as a sans-serif
// font draws it (sansSerifWidth), not with vega's rougher guess.
async function chartSvg(db, runId) {
  let vega, vegaLite;
  try {
    vega = require('vega');
    vegaLite = require('vega-lite');
  } catch (e) {
    throw new Error('querypilot.chartSvg(): npm\'s vega and vega-lite are not installed (npm install vega@5 vega-lite@5): ' + e.message);
  }
  const compiled = vegaLite.compile(chart(db, runId)).spec;
  const done = measureWhileDrawing(vega);
  let view;
  try {
    view = new vega.View(vega.parse(compiled), { renderer: 'none' });
    return await view.toSVG();
  } finally {
    if (view) view.finalize();
    done();
  }
}

module.exports = { getLoadablePath, load, chart, chartSvg };
