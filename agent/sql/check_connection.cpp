#include "agent/sql/check_connection.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <tuple>

#include "agent/base/schema_model.h"
#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/database_list.h"
#include "agent/sql/sqlite_errors.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {
// ---- The mirror's stubs --------------------------------------------------

// A stub virtual table: declares the columns it is given and holds no rows.
// Nothing on the mirror ever steps; the cursor methods exist because SQLite
// requires them.
struct StubTable {
  sqlite3_vtab base{};
};
struct StubCursor {
  sqlite3_vtab_cursor base{};
};

int StubDeclare(sqlite3* db, const std::string& declaration, sqlite3_vtab** out, char** err) {
  int rc = sqlite3_declare_vtab(db, declaration.c_str());
  if (rc != SQLITE_OK) {
    *err = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    return rc;
  }
  auto* t = static_cast<StubTable*>(sqlite3_malloc(sizeof(StubTable)));
  if (!t) return SQLITE_NOMEM;
  *t = StubTable{};
  *out = &t->base;
  return SQLITE_OK;
}

// The table stubs' declarations, by {database, table} in lower case.
using Declarations = std::map<std::pair<std::string, std::string>, std::string>;

int TableStubConnect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
                     char** err) noexcept {
  try {
    if (argc < 3) return SQLITE_ERROR;
    const auto* decls = static_cast<const Declarations*>(aux);
    auto it = decls->find({text::Lower(argv[1]), text::Lower(argv[2])});
    if (it == decls->end()) {
      *err = sqlite3_mprintf("no declaration for %s.%s", argv[1], argv[2]);
      return SQLITE_ERROR;
    }
    return StubDeclare(db, it->second, out, err);
  } catch (...) {
    return SQLITE_NOMEM;
  }
}

int EponymousStubConnect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** out,
                         char** err) noexcept {
  return StubDeclare(db, *static_cast<const std::string*>(aux), out, err);
}

int StubBestIndex(sqlite3_vtab*, sqlite3_index_info* info) noexcept {
  info->estimatedCost = 1e6;
  return SQLITE_OK;
}
int StubDisconnect(sqlite3_vtab* vtab) noexcept {
  sqlite3_free(vtab);
  return SQLITE_OK;
}
int StubOpen(sqlite3_vtab*, sqlite3_vtab_cursor** out) noexcept {
  auto* c = static_cast<StubCursor*>(sqlite3_malloc(sizeof(StubCursor)));
  if (!c) return SQLITE_NOMEM;
  *c = StubCursor{};
  *out = &c->base;
  return SQLITE_OK;
}
int StubClose(sqlite3_vtab_cursor* c) noexcept {
  sqlite3_free(c);
  return SQLITE_OK;
}
int StubFilter(sqlite3_vtab_cursor*, int, const char*, int, sqlite3_value**) noexcept {
  return SQLITE_OK;
}
int StubNext(sqlite3_vtab_cursor*) noexcept {
  return SQLITE_OK;
}
int StubEof(sqlite3_vtab_cursor*) noexcept {
  return 1;
}
int StubColumn(sqlite3_vtab_cursor*, sqlite3_context* ctx, int) noexcept {
  sqlite3_result_null(ctx);
  return SQLITE_OK;
}
int StubRowid(sqlite3_vtab_cursor*, sqlite3_int64* rowid) noexcept {
  *rowid = 0;
  return SQLITE_OK;
}

constexpr sqlite3_module MakeStubModule(bool eponymous) {
  sqlite3_module m{};
  m.iVersion = 0;
  m.xCreate = eponymous ? nullptr : TableStubConnect;  // NULL: eponymous only
  m.xConnect = eponymous ? EponymousStubConnect : TableStubConnect;
  m.xBestIndex = StubBestIndex;
  m.xDisconnect = StubDisconnect;
  m.xDestroy = StubDisconnect;
  m.xOpen = StubOpen;
  m.xClose = StubClose;
  m.xFilter = StubFilter;
  m.xNext = StubNext;
  m.xEof = StubEof;
  m.xColumn = StubColumn;
  m.xRowid = StubRowid;
  return m;
}

// Made when the library is compiled, not when it is loaded (constinit): a host
// may load QueryPilot on several threads at once, and nothing here may run
// then.
constinit const sqlite3_module kTableStubModule = MakeStubModule(false);
constinit const sqlite3_module kEponymousStubModule = MakeStubModule(true);
constexpr const char* kTableStubName = "querypilot_check_stub";

void StubScalar(sqlite3_context* ctx, int, sqlite3_value**) {
  sqlite3_result_null(ctx);
}
void StubStep(sqlite3_context*, int, sqlite3_value**) {}
void StubFinal(sqlite3_context* ctx) {
  sqlite3_result_null(ctx);
}
int StubCollate(void*, int n1, const void* a, int n2, const void* b) {
  int c = std::memcmp(a, b, static_cast<size_t>(std::min(n1, n2)));
  return c != 0 ? c : n1 - n2;
}
void DeleteString(void* p) {
  delete static_cast<std::string*>(p);
}

// The statement that makes the view `view_sql` (its CREATE VIEW as SQLite
// keeps it: "CREATE VIEW name ...", the name as written, no database) in
// `database` on the mirror; "" when it is not of that form.
std::string MirrorView(const std::string& database, const std::string& view_sql) {
  constexpr std::string_view kPrefix = "CREATE VIEW ";
  if (view_sql.size() <= kPrefix.size() ||
      !text::EqualsIgnoreCase(std::string_view(view_sql).substr(0, kPrefix.size()), kPrefix)) {
    return "";
  }
  const std::string_view rest = std::string_view(view_sql).substr(kPrefix.size());
  const std::vector<Token> tokens = TokenizeSql(rest);
  if (tokens.empty() ||
      (tokens[0].kind != TokenKind::kWord && tokens[0].kind != TokenKind::kQuotedIdentifier &&
       tokens[0].kind != TokenKind::kString)) {
    return "";
  }
  const std::string& name = tokens[0].text;
  if (rest.substr(0, name.size()) != name) return "";
  return fmt::format("CREATE VIEW {}.{}{}", QuoteIdentifier(database), name,
                     rest.substr(name.size()));
}

// {lower name, narg, type} of every function a connection has.
// With `registered_only`, only those registered on the connection, leaving out
// SQLite's built-in ones (the same on every connection of the library), where
// the library can say which those are (pragma_function_list's builtin
// column).
std::set<std::tuple<std::string, int, std::string>> ListFunctions(sqlite3* db,
                                                                  bool registered_only = false) {
  std::set<std::tuple<std::string, int, std::string>> out;
  auto st = Statement::Prepare(
      db, registered_only
              ? "SELECT DISTINCT name, narg, type FROM pragma_function_list WHERE builtin = 0"
              : "SELECT DISTINCT name, narg, type FROM pragma_function_list");
  if (!st.ok() && registered_only) return ListFunctions(db);
  if (!st.ok()) return out;
  while (st->Step() == SQLITE_ROW) {
    out.emplace(text::Lower(st->ColumnText(0)), static_cast<int>(st->ColumnInt(1)),
                st->ColumnText(2));
  }
  return out;
}

std::set<std::string> ListNames(sqlite3* db, const char* sql) {
  std::set<std::string> out;
  auto st = Statement::Prepare(db, sql);
  if (!st.ok()) return out;
  while (st->Step() == SQLITE_ROW) out.insert(text::Lower(st->ColumnText(0)));
  return out;
}

// The module a CREATE VIRTUAL TABLE statement names (lower case), or "".
std::string ModuleOf(std::string_view create_sql) {
  return text::Lower(VirtualTableModule(create_sql));
}

// A declaration for sqlite3_declare_vtab: every column by name, hidden ones
// HIDDEN. Declared types are left out: nothing is stored or compared.
std::string Declaration(const std::vector<std::pair<std::string, bool>>& columns) {
  std::string decl = "CREATE TABLE x(";
  for (size_t i = 0; i < columns.size(); ++i) {
    if (i) decl += ", ";
    decl += QuoteIdentifier(columns[i].first);
    if (columns[i].second) decl += " HIDDEN";
  }
  return decl + ")";
}

// The columns of `table` in `database` on `db` ("" database: an eponymous
// table, found by name), hidden ones flagged; empty when SQLite cannot say.
std::vector<std::pair<std::string, bool>> ColumnsOf(sqlite3* db, const std::string& table,
                                                    const std::string& database) {
  std::vector<std::pair<std::string, bool>> out;
  auto st = Statement::Prepare(
      db, database.empty() ? "SELECT name, hidden FROM pragma_table_xinfo(?1) ORDER BY cid"
                           : "SELECT name, hidden FROM pragma_table_xinfo(?1, ?2) ORDER BY cid");
  if (!st.ok()) return out;
  st->Bind(1, table);
  if (!database.empty()) st->Bind(2, database);
  while (st->Step() == SQLITE_ROW) out.emplace_back(st->ColumnText(0), st->ColumnInt(1) == 1);
  return out;
}

// What a fresh connection of this SQLite library brings: its functions
// ({lower name, narg, type}), modules and collations.
struct LibrarySurface {
  std::set<std::tuple<std::string, int, std::string>> functions;
  std::set<std::string> modules;
  std::set<std::string> collations;
};

// The library's surface, read from the fresh connection `fresh`
// once per process (the library does not change under it, and every mirror
// would read the same) and again with `read_again`, when a check finds a
// name missing (an auto extension cancelled since).
std::shared_ptr<const LibrarySurface> LibraryOf(sqlite3* fresh, bool read_again) {
  struct Kept {
    Mutex mu;
    std::shared_ptr<const LibrarySurface> surface GUARDED_BY(mu);
  };
  static auto* kept = new Kept();  // never destroyed: checks may run after static destructors
  MutexLock lock(&kept->mu);
  if (!kept->surface || read_again) {
    auto surface = std::make_shared<LibrarySurface>();
    surface->functions = ListFunctions(fresh);
    surface->modules = ListNames(fresh, "SELECT name FROM pragma_module_list");
    surface->collations = ListNames(fresh, "SELECT name FROM pragma_collation_list");
    // A list SQLite could not give is read again next time.
    if (surface->functions.empty()) return surface;
    kept->surface = std::move(surface);
  }
  return kept->surface;
}

// The declaration of QueryPilot's own eponymous module `module` as `host`
// connects it ("" when it cannot say): the same on every connection (ext/
// declares each with fixed columns), so read once per process.
std::string OwnModuleDeclaration(sqlite3* host, const std::string& module) {
  struct Kept {
    Mutex mu;
    std::map<std::string, std::string> declarations GUARDED_BY(mu);
  };
  static auto* kept = new Kept();  // never destroyed: checks may run after static destructors
  {
    MutexLock lock(&kept->mu);
    if (auto it = kept->declarations.find(module); it != kept->declarations.end())
      return it->second;
  }
  auto columns = ColumnsOf(host, module, "");
  if (columns.empty()) return "";
  std::string decl = Declaration(columns);
  MutexLock lock(&kept->mu);
  kept->declarations.emplace(module, decl);
  return decl;
}

// A table, view or virtual table of the host's, as its schema table has it.
struct ListedTable {
  std::string name;
  std::string create_sql;  // a virtual table's CREATE VIRTUAL TABLE; "" for the others
  std::string view_sql;    // a view's CREATE VIEW; "" for the others
};

// The tables, views and virtual tables of `database` on `host` named one of
// `lower_names` (any case), or with `answer_tables`, every virtual table
// (what QueryPilot's own answer tables are); nullopt when the host cannot
// say. Read from the schema table alone, which the host's connection holds
// parsed: a table without a root page is virtual, and only views' and
// virtual tables' SQL is read. The mirror looks up only the names a
// statement may read, never a thousand tables it does not name
// (pragma_table_list would also count every table's columns first).
std::optional<std::vector<ListedTable>> LookUpTables(sqlite3* host, const std::string& database,
                                                     const std::vector<std::string>& lower_names,
                                                     bool answer_tables) {
  std::vector<ListedTable> out;
  // At most 100 names a statement: every SQLite binds at least 999.
  constexpr size_t kChunk = 100;
  size_t from = 0;
  do {
    const size_t n = std::min(kChunk, lower_names.size() - from);
    std::string params;
    for (size_t i = 0; i < n; ++i) params += fmt::format("{}?{}", i ? ", " : "", i + 1);
    auto list = Statement::Prepare(
        host, fmt::format("SELECT name, type, CASE WHEN type = 'view' OR rootpage = 0 THEN sql END "
                          "FROM {}.sqlite_master WHERE type IN ('table', 'view') AND "
                          "(name COLLATE NOCASE IN ({}){})",
                          QuoteIdentifier(database), params,
                          answer_tables ? " OR (type = 'table' AND rootpage = 0)" : ""));
    if (!list.ok()) return std::nullopt;
    for (size_t i = 0; i < n; ++i) list->Bind(static_cast<int>(i + 1), lower_names[from + i]);
    int rc;
    while ((rc = list->Step()) == SQLITE_ROW) {
      if (list->ColumnType(0) != SQLITE_TEXT) return std::nullopt;  // the host hid it
      ListedTable t;
      t.name = list->ColumnText(0);
      if (text::Lower(t.name).rfind("sqlite_", 0) == 0) continue;  // the mirror has its own
      (list->ColumnText(1) == "view" ? t.view_sql : t.create_sql) = list->ColumnText(2);
      out.push_back(std::move(t));
    }
    if (rc != SQLITE_DONE) return std::nullopt;
    from += n;
    answer_tables = false;
  } while (from < lower_names.size());
  return out;
}

// The same from pragma_table_list, for a host that keeps its schema table's
// names from its SQL (an authorizer that ignores or denies reading it).
std::optional<std::vector<ListedTable>> LookUpTablesByPragma(
    sqlite3* host, const std::string& database, const std::vector<std::string>& lower_names,
    bool answer_tables) {
  auto list = Statement::Prepare(
      host, fmt::format("SELECT l.name, l.type, coalesce(m.sql, '') FROM pragma_table_list AS l "
                        "LEFT JOIN {}.sqlite_master AS m ON m.name = l.name AND m.type IN "
                        "('table', 'view') WHERE l.schema = ?1",
                        QuoteIdentifier(database)));
  if (!list.ok()) return std::nullopt;
  list->Bind(1, database);
  const std::set<std::string> wanted(lower_names.begin(), lower_names.end());
  std::vector<ListedTable> out;
  while (list->Step() == SQLITE_ROW) {
    const std::string name = list->ColumnText(0);
    const std::string lower = text::Lower(name);
    const std::string type = list->ColumnText(1);
    if (lower.rfind("sqlite_", 0) == 0) continue;
    if (!wanted.count(lower) && !(answer_tables && type == "virtual")) continue;
    ListedTable t;
    t.name = name;
    if (type == "virtual") t.create_sql = list->ColumnText(2);
    if (type == "view") t.view_sql = list->ColumnText(2);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

struct CheckConnection::Stubs {
  Declarations tables;  // the virtual tables' stubs, read by their module
  // The host's databases the mirror has: {as the host spells it, lower
  // case}, in the host's order (main, temp, then the attached ones).
  std::vector<std::pair<std::string, std::string>> databases;
  // The names looked up on the host so far (lower case).
  std::set<std::string> looked_up;
  // The host's tables of the names looked up, by {database, name} in lower
  // case; made on the mirror when a statement first names them.
  std::map<std::pair<std::string, std::string>, HostTable> host_tables;
};

CheckConnection::CheckConnection(sqlite3* host, sqlite3* mirror, OwnSurface own)
    : host_(host), mirror_(mirror), own_(std::move(own)), stubs_(std::make_unique<Stubs>()) {}

CheckConnection::~CheckConnection() {
  sqlite3_close_v2(mirror_);
}

Result<std::unique_ptr<CheckConnection>> CheckConnection::Open(sqlite3* host, OwnSurface own) {
  // The mirror itself is opened by the first Refresh().
  return std::unique_ptr<CheckConnection>(new CheckConnection(host, nullptr, std::move(own)));
}

Status CheckConnection::Refresh(bool force) {
  // The host's fingerprint: each database's name, file and schema_version.
  std::string fingerprint;
  std::optional<std::vector<DatabaseInfo>> databases = ListDatabases(host_);
  if (!databases) {
    return Status(
        ErrorKind::kRefused,
        "QueryPilot could not list this connection's databases (PRAGMA database_list), which it "
        "needs to check generated SQL; none runs");
  }
  for (const DatabaseInfo& d : *databases) {
    auto st =
        Statement::Prepare(host_, fmt::format("PRAGMA {}.schema_version", QuoteIdentifier(d.name)));
    std::string version = st.ok() && st->Step() == SQLITE_ROW ? st->ColumnText(0) : "?";
    fingerprint += d.name + '\x1f' + d.file + '\x1f' + version + '\x1e';
  }
  if (!force && built_ && fingerprint == fingerprint_ &&
      fingerprint.find('?') == std::string::npos) {
    return Status::Ok();
  }
  Status s = Rebuild(force);
  if (s.ok()) fingerprint_ = fingerprint;
  return s;
}

Status CheckConnection::Rebuild(bool read_library) {
  // A fresh mirror each time: the old one's stubs, attachments and
  // registrations go with it.
  sqlite3* fresh = nullptr;
  if (int rc = OpenOwnConnection(":memory:", &fresh, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
      rc != SQLITE_OK) {
    const std::string why = fresh ? sqlite3_errmsg(fresh) : sqlite3_errstr(rc);
    sqlite3_close_v2(fresh);
    return Status(ErrorKind::kInternal, "could not open QueryPilot's check connection: " + why);
  }
  sqlite3_close_v2(mirror_);
  mirror_ = fresh;
  // The host's views are made here as views (EnsureTables), over stubs of
  // the host's functions: never refused as untrusted here, where nothing
  // runs; the host's own setting holds where the statement runs.
  sqlite3_exec(mirror_, "PRAGMA trusted_schema = 1", nullptr, nullptr, nullptr);
  built_ = false;
  auto stubs = std::make_unique<Stubs>();
  AuthRules rules;
  for (const auto& f : own_.functions) rules.own_functions.insert(text::Lower(f));
  for (const auto& m : own_.modules) rules.own_modules.insert(text::Lower(m));

  // What SQLite's own library brings to any connection.
  const std::shared_ptr<const LibrarySurface> library = LibraryOf(mirror_, read_library);
  const auto& library_functions = library->functions;
  for (const auto& f : library_functions) rules.library_functions.insert(std::get<0>(f));
  rules.library_modules = library->modules;
  const std::set<std::string>& library_collations = library->collations;

  int rc =
      sqlite3_create_module_v2(mirror_, kTableStubName, &kTableStubModule, &stubs->tables, nullptr);
  if (rc != SQLITE_OK)
    return Status(ErrorKind::kInternal, "could not register the check connection's stubs");

  // The host's functions, collations and eponymous modules that the library
  // lacks, and QueryPilot's own.
  for (const auto& [name, narg, type] : ListFunctions(host_, true)) {
    if (library_functions.count({name, narg, type})) continue;
    if (type == "w") {
      sqlite3_create_window_function(mirror_, name.c_str(), narg, SQLITE_UTF8, nullptr, StubStep,
                                     StubFinal, StubFinal, StubStep, nullptr);
    } else if (type == "a") {
      sqlite3_create_function_v2(mirror_, name.c_str(), narg, SQLITE_UTF8, nullptr, nullptr,
                                 StubStep, StubFinal, nullptr);
    } else {
      sqlite3_create_function_v2(mirror_, name.c_str(), narg, SQLITE_UTF8, nullptr, StubScalar,
                                 nullptr, nullptr, nullptr);
    }
  }
  for (const std::string& f : rules.own_functions) {
    sqlite3_create_function_v2(mirror_, f.c_str(), -1, SQLITE_UTF8, nullptr, StubScalar, nullptr,
                               nullptr, nullptr);
  }
  for (const std::string& c : ListNames(host_, "SELECT name FROM pragma_collation_list")) {
    if (library_collations.count(c)) continue;
    sqlite3_create_collation_v2(mirror_, c.c_str(), SQLITE_UTF8, nullptr, StubCollate, nullptr);
  }
  std::set<std::string> eponymous = rules.own_modules;
  for (const std::string& m : ListNames(host_, "SELECT name FROM pragma_module_list")) {
    if (!rules.library_modules.count(m)) eponymous.insert(m);
  }
  for (const std::string& m : eponymous) {
    // QueryPilot's own are refused by name whatever their columns; read as
    // they are declared, so that a query meets the authorizer, not a
    // missing column.
    const bool own = rules.own_modules.count(m) > 0;
    std::string decl;
    if (own) {
      decl = OwnModuleDeclaration(host_, m);
    } else if (auto columns = ColumnsOf(host_, m, ""); !columns.empty()) {
      decl = Declaration(columns);
    }
    if (decl.empty()) {
      if (!own) continue;  // not eponymous: usable only by CREATE VIRTUAL TABLE, refused
      decl = "CREATE TABLE x(value, a1 HIDDEN, a2 HIDDEN, a3 HIDDEN, a4 HIDDEN)";
    }
    if (sqlite3_create_module_v2(mirror_, m.c_str(), &kEponymousStubModule, new std::string(decl),
                                 DeleteString) == SQLITE_OK) {
      rules.known_modules.insert(m);
    }
  }
  // Every module the mirror knows: the library's, the stubs'.
  rules.known_modules.insert(rules.library_modules.begin(), rules.library_modules.end());
  rules.known_modules.insert(kTableStubName);

  // The host's databases, by the same names; their tables are looked up as
  // statements name them (LookUp).
  std::optional<std::vector<DatabaseInfo>> databases = ListDatabases(host_);
  if (!databases) return Status(ErrorKind::kRefused, "could not list the connection's databases");
  for (const DatabaseInfo& d : *databases) {
    const std::string database = text::Lower(d.name);
    if (database != "main" && database != "temp") {
      auto attach = Statement::Prepare(
          mirror_, fmt::format("ATTACH ':memory:' AS {}", QuoteIdentifier(d.name)));
      if (!attach.ok() || attach->Step() != SQLITE_DONE) continue;
    }
    stubs->databases.emplace_back(d.name, database);
  }
  rules_ = std::move(rules);
  stubs_ = std::move(stubs);
  built_ = true;
  // QueryPilot's own tables, found with the first statement's names, are
  // made before it is judged (Check).
  answer_tables_pending_ = true;
  return Status::Ok();
}

void CheckConnection::LookUp(const std::set<std::string>& lower_names, bool answer_tables) {
  std::vector<std::string> wanted;
  for (const std::string& name : lower_names) {
    if (stubs_->looked_up.insert(name).second) wanted.push_back(name);
  }
  if (wanted.empty() && !answer_tables) return;
  for (const auto& [spelled, database] : stubs_->databases) {
    std::optional<std::vector<ListedTable>> tables =
        LookUpTables(host_, spelled, wanted, answer_tables);
    if (!tables) tables = LookUpTablesByPragma(host_, spelled, wanted, answer_tables);
    if (!tables) continue;
    for (ListedTable& t : *tables) {
      const std::pair<std::string, std::string> key{database, text::Lower(t.name)};
      if (!rules_.tables.insert(key).second) continue;  // listed already
      if (!t.create_sql.empty()) {
        if (IsAnswerTable(t.create_sql)) rules_.own_tables.insert(key);
        rules_.virtual_tables[key] = ModuleOf(t.create_sql);
      }
      std::vector<std::string>& holders = rules_.table_databases[key.second];
      holders.push_back(database);
      // temp first, then main, then the attached databases in the host's
      // order: the order SQLite reads a bare name in.
      auto rank = [this](const std::string& db) {
        if (db == "temp") return size_t{0};
        for (size_t i = 0; i < stubs_->databases.size(); ++i) {
          if (stubs_->databases[i].second == db) return i + 1;
        }
        return stubs_->databases.size() + 1;
      };
      std::stable_sort(
          holders.begin(), holders.end(),
          [&](const std::string& x, const std::string& y) { return rank(x) < rank(y); });
      stubs_->host_tables[key] = {spelled, std::move(t.name), !t.create_sql.empty(),
                                  std::move(t.view_sql), false};
    }
  }
}

bool CheckConnection::EnsureTables(const std::string& lower_name) {
  auto holders = rules_.table_databases.find(lower_name);
  if (holders == rules_.table_databases.end()) return false;
  bool made = false;
  // Every database's table of that name, so that a bare name resolves on the
  // mirror to the database it resolves to on the host.
  for (const std::string& database : holders->second) {
    auto it = stubs_->host_tables.find({database, lower_name});
    if (it == stubs_->host_tables.end() || it->second.made) continue;
    it->second.made = true;
    const HostTable& t = it->second;
    if (std::string view = MirrorView(t.database, t.view_sql); !view.empty()) {
      // A view as the host has it, so that what its own SQL calls and reads
      // (functions, eponymous tables) meets the authorizer as the
      // statement's own SQL does; the tables it reads are made as a "no
      // such table" names them. One the mirror cannot make is an empty
      // table, as below.
      auto st = Statement::Prepare(mirror_, view);
      if (st.ok() && st->Step() == SQLITE_DONE) {
        made = true;
        continue;
      }
    }
    auto columns = ColumnsOf(host_, t.name, t.database);
    if (columns.empty()) continue;  // a view over a missing table: the host refuses it too
    std::string create;
    if (!t.is_virtual) {
      // A table (or a view the mirror could not make): an empty table of the
      // same columns, so that every statement meets the authorizer as it
      // would on the host.
      std::vector<std::string> names;
      for (const auto& c : columns) names.push_back(QuoteIdentifier(c.first));
      create = fmt::format("CREATE TABLE {}.{}({})", QuoteIdentifier(t.database),
                           QuoteIdentifier(t.name), fmt::join(names, ", "));
    } else {
      stubs_->tables[{database, lower_name}] = Declaration(columns);
      create = fmt::format("CREATE VIRTUAL TABLE {}.{} USING {}", QuoteIdentifier(t.database),
                           QuoteIdentifier(t.name), kTableStubName);
    }
    auto st = Statement::Prepare(mirror_, create);
    if (st.ok() && st->Step() == SQLITE_DONE) made = true;
  }
  return made;
}

bool CheckConnection::EnsureNamedTable(std::string_view message) {
  // "no such table: name" or "no such table: database.name".
  constexpr std::string_view kPrefix = "no such table: ";
  if (message.substr(0, kPrefix.size()) != kPrefix) return false;
  const std::string named = text::Lower(message.substr(kPrefix.size()));
  LookUp({named}, false);
  if (EnsureTables(named)) return true;
  const size_t dot = named.find('.');
  if (dot == std::string::npos) return false;
  LookUp({named.substr(dot + 1)}, false);
  return EnsureTables(named.substr(dot + 1));
}

CheckConnection::Verdict CheckConnection::Check(std::string_view sql) {
  Verdict out;
  bool rebuilt = false;
  if (Status s = Refresh(false); !s.ok()) {
    out.status = s;
    return out;
  }
  // The host's tables the statement names, made on the mirror before it is
  // judged (the mirror does not copy a thousand tables a query never names):
  // every name SQLite's parser could read as one, whatever it turns out to be.
  std::set<std::string> names;
  for (const Token& t : TokenizeSql(sql)) {
    if (t.kind == TokenKind::kWord || t.kind == TokenKind::kQuotedIdentifier)
      names.insert(text::Lower(t.name()));
  }
  auto make_named = [&] {
    if (answer_tables_pending_) {
      // QueryPilot's own tables at once: a bare name must find them as on
      // the host. The others as statements name them (EnsureTables).
      LookUp(names, true);
      answer_tables_pending_ = false;
      for (const auto& key : std::set<std::pair<std::string, std::string>>(rules_.own_tables))
        EnsureTables(key.second);
    } else {
      LookUp(names, false);
    }
    for (const std::string& name : names) EnsureTables(name);
  };
  make_named();
  for (;;) {
    RulesJudgement judged = JudgeUnderRules(mirror_, sql, rules_);
    if (judged.rc != SQLITE_OK && judged.status.kind() != ErrorKind::kRefused) {
      // A table of the host's the mirror has not made yet (a name the
      // tokens above did not give): made, and the statement judged again.
      // Each table is made once, so this ends.
      if (EnsureNamedTable(judged.message)) {
        continue;
      }
      // A function or collation the host registered since the mirror was
      // read: read the host again, once.
      const std::string lower = text::Lower(judged.message);
      if (!rebuilt &&
          (lower.rfind("no such function", 0) == 0 || lower.rfind("no such collation", 0) == 0)) {
        rebuilt = true;
        if (Refresh(true).ok()) {
          make_named();
          continue;
        }
      }
    }
    out.status = judged.status;
    out.statement_bytes = judged.statement_bytes;
    return out;
  }
}

HostCheck::HostCheck(sqlite3* host, OwnSurface own) : host_(host), own_(std::move(own)) {}

std::shared_ptr<HostCheck> HostCheck::Adopt(sqlite3* host, OwnSurface own) {
  return std::shared_ptr<HostCheck>(new HostCheck(host, std::move(own)));
}

HostCheck::~HostCheck() {
  // A check still running (from another thread, on a connection closing)
  // ends before the mirror closes.
  MutexLock lock(&mu_);
  check_.reset();
}

void HostCheck::AllowFunctions(std::set<std::string> names) {
  MutexLock lock(&mu_);
  allowed_functions_ = std::move(names);
}

std::set<std::string> HostCheck::allowed_functions() const {
  MutexLock lock(&mu_);
  return allowed_functions_;
}

CheckConnection::Verdict HostCheck::Check(std::string_view sql) {
  MutexLock lock(&mu_);
  if (!check_) {
    auto opened = CheckConnection::Open(host_, own_);
    if (!opened.ok()) {
      CheckConnection::Verdict v;
      v.status = opened.status();
      return v;
    }
    check_ = std::move(opened).value();
  }
  return check_->Check(sql);
}

}  // namespace querypilot
