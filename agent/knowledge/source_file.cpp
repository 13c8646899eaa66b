// What the value index reads of a source database file itself (source_file.h).
#include "agent/knowledge/source_file.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>

#include "agent/base/sqlite.h"
#include "agent/base/text.h"
#include "agent/knowledge/value_store.h"

namespace querypilot {
namespace {

constexpr int64_t kSmallFileBytes = 1 << 20;

// A file changed this recently gets no stamp: a write within the same tick
// of the file system's clock (up to 2 s on some) would leave its times as
// they are.
constexpr int64_t kStampSettledNs = int64_t{3'000'000'000};

}  // namespace

bool SmallFile(sqlite3* db, const std::string& database) {
  auto st = Statement::Prepare(
      db, fmt::format(
              "SELECT page_count * page_size FROM pragma_page_count({0}), pragma_page_size({0})",
              text::QuoteSqlString(database)));
  return st.ok() && st->Step() == SQLITE_ROW && st->ColumnInt(0) <= kSmallFileBytes;
}

std::optional<std::string> SourceStamp(sqlite3* db, sqlite3* host, const std::string& database) {
  if (db == host && !sqlite3_get_autocommit(db)) return std::nullopt;
  const char* file = sqlite3_db_filename(db, database.c_str());
  if (!file || !*file) return std::nullopt;
  const std::string schema = QuoteIdentifier(database);
  auto mode = Statement::Prepare(db, fmt::format("PRAGMA {}.journal_mode", schema));
  if (!mode.ok() || mode->Step() != SQLITE_ROW || text::Lower(mode->ColumnText(0)) == "wal")
    return std::nullopt;
  auto cookie = Statement::Prepare(db, fmt::format("PRAGMA {}.schema_version", schema));
  auto pages = Statement::Prepare(db, fmt::format("PRAGMA {}.page_count", schema));
  if (!cookie.ok() || !pages.ok() || cookie->Step() != SQLITE_ROW || pages->Step() != SQLITE_ROW)
    return std::nullopt;
  struct stat sb;
  if (stat(file, &sb) != 0 || !S_ISREG(sb.st_mode)) return std::nullopt;
  auto ns = [](const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  if (now - std::max(ns(sb.st_mtim), ns(sb.st_ctim)) < kStampSettledNs) return std::nullopt;
  return fmt::format("{}:{}:{}:{}:{}:{}:{}", static_cast<uint64_t>(sb.st_dev),
                     static_cast<uint64_t>(sb.st_ino), static_cast<int64_t>(sb.st_size),
                     ns(sb.st_mtim), ns(sb.st_ctim), cookie->ColumnInt(0), pages->ColumnInt(0));
}

int64_t DataVersion(sqlite3* db, const std::string& database) {
  auto st =
      Statement::Prepare(db, fmt::format("PRAGMA {}.data_version", QuoteIdentifier(database)));
  return st.ok() && st->Step() == SQLITE_ROW ? st->ColumnInt(0) : -1;
}

std::optional<std::pair<std::string, bool>> ValueStore::Stamp(const std::string& source) {
  MutexLock lock(&mu_);
  auto st = Prepare("SELECT stamp, complete FROM qp_stamps WHERE source = ?1");
  if (!st.ok()) return std::nullopt;
  st->Bind(1, source);
  if (Step(*st) != SQLITE_ROW) return std::nullopt;
  return std::make_pair(st->ColumnText(0), st->ColumnInt(1) != 0);
}

void ValueStore::SetStamp(const std::string& source, const std::string& stamp, bool complete) {
  MutexLock lock(&mu_);
  auto st =
      Prepare("INSERT OR REPLACE INTO qp_stamps(source, stamp, complete) VALUES (?1, ?2, ?3)");
  if (!st.ok()) return;
  st->Bind(1, source);
  st->Bind(2, stamp);
  st->BindInt(3, complete ? 1 : 0);
  Step(*st);
}

}  // namespace querypilot
