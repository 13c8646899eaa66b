// SqlRefs: what a query's text refers to in a Schema.
//
// Pure functions over the SQL tokenizer and the Schema: the tables a query
// names and their aliases, the words of an identifier, and the places where a
// column is compared with a text literal. They guide hints and checks; they
// never decide whether SQL is safe (SQLite decides that, in the critic).
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/schema_model.h"

namespace querypilot {

// The lower-case words of an identifier or phrase: "customerName" and
// "customer_name" give {customer, name}; words of one letter are dropped and
// a crude singular is added ("customers" also gives "customer").
std::set<std::string> IdentifierWords(std::string_view name);

// Names within `max_distance` edits of `name` (case-insensitive) or sharing a
// word with it, closest first, at most `limit`.
std::vector<std::string> ClosestNames(std::string_view name,
                                      const std::vector<std::string>& candidates, size_t limit);

struct QueryTables {
  std::vector<const TableInfo*> tables;              // schema tables the SQL names, in order
  std::map<std::string, const TableInfo*> by_alias;  // lower-case alias or name -> table
};

// Tables the SQL mentions and the aliases given to them ("orders o",
// "orders AS o"). Pointers point into `schema`.
QueryTables FindQueryTables(std::string_view sql, const Schema& schema);

// A column compared with a text literal: `c.country = 'usa'`,
// `'usa' = country`, `country IN ('usa', 'uk')`, `name LIKE 'Jo%'`; or
// tested with `IS NULL`.
struct LiteralComparison {
  const TableInfo* table = nullptr;  // the column's table (into the Schema)
  std::string column;                // as the schema spells it
  std::string op;                    // "=", "in", "like" or "is null"
  std::string literal;               // the value, unquoted ("" for is null)
};

// Every comparison of a column of a schema table with a text literal, in the
// order they appear; a comparison whose column cannot be tied to one table of
// the query is left out. A double-quoted word that names no column of the
// query's tables counts as a literal, as SQLite reads it that way.
std::vector<LiteralComparison> FindLiteralComparisons(std::string_view sql, const Schema& schema);

// Two qualified columns compared for equality, as in a join condition:
// `T1.id = T2.hero_id`. Both sides resolve through the query's aliases.
struct ColumnEquality {
  const TableInfo* left = nullptr;
  std::string left_column;
  const TableInfo* right = nullptr;
  std::string right_column;
};

std::vector<ColumnEquality> FindColumnEqualities(std::string_view sql, const Schema& schema);

}  // namespace querypilot
