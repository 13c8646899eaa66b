'use strict';
// QueryPilot for Node.js: the loadable extension, packaged.
//
//   const Database = require('better-sqlite3');   // or require('libsql')
//   const querypilot = require('querypilot');
//   const db = new Database('shop.db');
//   querypilot.load(db);
//   db.prepare("SELECT row FROM ask('How many orders are there?')").all();
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

module.exports = { getLoadablePath, load };
