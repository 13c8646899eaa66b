#include "eval/score.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <sqlite3.h>

#include "agent/sqltokens.h"
#include "agent/statement.h"
#include "agent/text.h"

namespace querypilot::eval {
namespace {

using Clock = std::chrono::steady_clock;

int StopAtDeadline(void* arg) {
  auto* deadline = static_cast<Clock::time_point*>(arg);
  return Clock::now() >= *deadline ? 1 : 0;
}

// Values are joined with a separator that cannot be confused with their
// bytes: every key is length-prefixed where it holds arbitrary bytes.
void AppendValue(std::string& row, std::string_view key) {
  row += key;
  row += '\x1f';
}

}  // namespace

std::string IntegerKey(long long v) { return fmt::format("i{}", v); }

std::string RealKey(double v, bool tolerant) {
  if (std::isnan(v)) return "rnan";
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18) {
    return IntegerKey(static_cast<long long>(v));
  }
  if (tolerant) {
    double rounded = std::stod(fmt::format("{:.9g}", v));
    if (rounded == std::floor(rounded) && std::fabs(rounded) < 9.2e18) {
      return IntegerKey(static_cast<long long>(rounded));
    }
    return fmt::format("r{:.9g}", v);
  }
  return fmt::format("r{:.17g}", v);
}

std::string TextKey(std::string_view v) { return fmt::format("t{}:{}", v.size(), v); }

std::string BlobKey(std::string_view v) {
  std::string key = fmt::format("b{}:", v.size());
  for (unsigned char c : v) key += fmt::format("{:02x}", c);
  return key;
}

std::string NullKey() { return "n"; }

QueryResult ExecuteForScoring(sqlite3* db, std::string_view sql, int timeout_ms, size_t max_rows) {
  QueryResult out;
  std::string tail;
  Result<Statement> stmt = Statement::Prepare(db, sql, &tail);
  if (!stmt.ok()) {
    out.error = stmt.status().message();
    return out;
  }
  if (!stmt->get()) {
    out.error = "no SQL statement";
    return out;
  }
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  sqlite3_progress_handler(db, 1000, StopAtDeadline, &deadline);
  struct Restore {
    sqlite3* db;
    ~Restore() { sqlite3_progress_handler(db, 0, nullptr, nullptr); }
  } restore{db};

  sqlite3_stmt* s = stmt->get();
  const int columns = sqlite3_column_count(s);
  for (;;) {
    int rc = stmt->Step();
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      if (rc == SQLITE_INTERRUPT) {
        out.timed_out = true;
        out.error = fmt::format("ran past the {} s budget", timeout_ms / 1000.0);
      } else {
        out.error = sqlite3_errmsg(db);
      }
      out.rows.clear();
      out.tolerant.clear();
      return out;
    }
    if (out.rows.size() >= max_rows) {
      out.error = fmt::format("more than {} rows", max_rows);
      out.rows.clear();
      out.tolerant.clear();
      return out;
    }
    std::string exact, tolerant;
    for (int i = 0; i < columns; ++i) {
      switch (sqlite3_column_type(s, i)) {
        case SQLITE_INTEGER: {
          std::string k = IntegerKey(sqlite3_column_int64(s, i));
          AppendValue(exact, k);
          AppendValue(tolerant, k);
          break;
        }
        case SQLITE_FLOAT: {
          double v = sqlite3_column_double(s, i);
          AppendValue(exact, RealKey(v, false));
          AppendValue(tolerant, RealKey(v, true));
          break;
        }
        case SQLITE_TEXT: {
          const char* p = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
          std::string k = TextKey(std::string_view(p ? p : "", sqlite3_column_bytes(s, i)));
          AppendValue(exact, k);
          AppendValue(tolerant, k);
          break;
        }
        case SQLITE_BLOB: {
          const char* p = static_cast<const char*>(sqlite3_column_blob(s, i));
          std::string k = BlobKey(std::string_view(p ? p : "", sqlite3_column_bytes(s, i)));
          AppendValue(exact, k);
          AppendValue(tolerant, k);
          break;
        }
        default:
          AppendValue(exact, NullKey());
          AppendValue(tolerant, NullKey());
      }
    }
    out.rows.push_back(std::move(exact));
    out.tolerant.push_back(std::move(tolerant));
  }
  out.ok = true;
  return out;
}

bool HasOrderBy(std::string_view gold_sql) {
  std::vector<Token> tokens = TokenizeSql(gold_sql);
  for (size_t i = 0; i + 1 < tokens.size(); ++i) {
    if (tokens[i].kind == TokenKind::kWord && tokens[i + 1].kind == TokenKind::kWord &&
        text::EqualsIgnoreCase(tokens[i].text, "order") &&
        text::EqualsIgnoreCase(tokens[i + 1].text, "by")) {
      return true;
    }
  }
  return false;
}

namespace {

bool SameSet(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  return std::set<std::string>(a.begin(), a.end()) == std::set<std::string>(b.begin(), b.end());
}

bool SameBag(std::vector<std::string> a, std::vector<std::string> b) {
  if (a.size() != b.size()) return false;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

}  // namespace

Verdict Compare(const QueryResult& gold, const QueryResult& pred, bool ordered) {
  Verdict v;
  if (!gold.ok || !pred.ok) return v;
  v.set_ok = SameSet(gold.rows, pred.rows);
  v.bag_ok = ordered ? gold.rows == pred.rows : SameBag(gold.rows, pred.rows);
  v.tolerant_ok = SameSet(gold.tolerant, pred.tolerant);
  return v;
}

}  // namespace querypilot::eval
