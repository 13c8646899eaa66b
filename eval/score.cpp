#include "eval/score.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "agent/base/text.h"
#include "agent/quality/agreement.h"
#include "agent/sql/check_connection.h"
#include "agent/sql/executor.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/statement.h"

namespace querypilot::eval {
namespace {

// Values are joined with a separator that cannot be confused with their
// bytes: every key is length-prefixed where it holds arbitrary bytes.
void AppendValue(std::string& row, std::string_view key) {
  row += key;
  row += '\x1f';
}

std::string ValueKey(const Value& v, bool tolerant) {
  if (auto* i = std::get_if<int64_t>(&v)) return IntegerKey(*i);
  if (auto* d = std::get_if<double>(&v)) return RealKey(*d, tolerant);
  if (auto* t = std::get_if<std::string>(&v)) return TextKey(*t);
  if (auto* b = std::get_if<Blob>(&v)) return BlobKey(b->bytes);
  return NullKey();
}

}  // namespace

std::string IntegerKey(long long v) {
  return fmt::format("i{}", v);
}

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

std::string TextKey(std::string_view v) {
  return fmt::format("t{}:{}", v.size(), v);
}

std::string BlobKey(std::string_view v) {
  std::string key = fmt::format("b{}:", v.size());
  for (unsigned char c : v) key += fmt::format("{:02x}", c);
  return key;
}

std::string NullKey() {
  return "n";
}

QueryResult ExecuteForScoring(sqlite3* db, std::string_view sql, int timeout_ms, size_t max_rows) {
  QueryResult out;
  auto fail = [&](const Status& st) {
    out.timed_out = st.kind() == ErrorKind::kTimeout;
    out.error =
        out.timed_out ? fmt::format("ran past the {} s budget", timeout_ms / 1000.0) : st.message();
    out.rows.clear();
    out.tolerant.clear();
    return out;
  };
  Result<Statement> stmt = Statement::Prepare(db, sql);
  if (!stmt.ok()) return fail(stmt.status());
  if (!stmt->get()) return fail(Status::InvalidArgument("no SQL statement"));
  // The agent's own executor: the same time budget (time inside
  // sqlite3_step) and row cap as ask() itself; no probe, rows stream.
  ExecutionLimits limits{timeout_ms, static_cast<int64_t>(max_rows), 0};
  limits.stop = StopMethod::kProgressHandler;  // the harness's own connection
  auto live = LiveQuery::Start(SqlTarget::Own(db), std::move(stmt).value(), limits);
  if (!live.ok()) return fail(live.status());
  Row row;
  out.columns = (*live)->column_names();
  out.values_kept = true;
  for (;;) {
    Result<bool> got = (*live)->Next(&row);
    if (!got.ok()) return fail(got.status());
    if (!got.value()) break;
    if (out.values_kept && out.values.size() < QueryResult::kUserRows) {
      out.values.push_back(row);
    } else if (out.values_kept) {
      out.values_kept = false;
      out.values.clear();
    }
    std::string exact, tolerant;
    for (const Value& v : row) {
      AppendValue(exact, ValueKey(v, false));
      AppendValue(tolerant, ValueKey(v, true));
    }
    out.rows.push_back(std::move(exact));
    out.tolerant.push_back(std::move(tolerant));
  }
  if ((*live)->truncated()) {
    return fail(Status::InvalidArgument(fmt::format("more than {} rows", max_rows)));
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

// The cells of a row key, in order: each is a value key as AppendValue wrote
// it. Text and blob keys carry their length, so a separator byte inside a
// value is read as data.
std::vector<std::string> Cells(std::string_view row) {
  std::vector<std::string> cells;
  size_t i = 0;
  while (i < row.size()) {
    size_t end = row.find('\x1f', i);
    if (row[i] == 't' || row[i] == 'b') {
      const size_t colon = row.find(':', i);
      const size_t length = std::stoul(std::string(row.substr(i + 1, colon - i - 1)));
      end = colon + 1 + (row[i] == 'b' ? 2 * length : length);
    }
    if (end == std::string_view::npos || end > row.size()) end = row.size();
    cells.emplace_back(row.substr(i, end - i));
    i = end + 1;
  }
  return cells;
}

// Spider's own comparison (test-suite-sql-eval's result_eq): the same bag of
// rows, in order where the gold SQL orders them, under some order of the
// predicted columns. The columns must be as many as gold's. Only orders that
// map each column to one holding the same values are tried, at most a
// bounded number of them.
bool SameBagAnyColumnOrder(const std::vector<std::string>& gold,
                           const std::vector<std::string>& pred, bool ordered) {
  if (gold.size() != pred.size()) return false;
  if (ordered ? gold == pred : SameBag(gold, pred)) return true;
  if (gold.empty()) return true;
  std::vector<std::vector<std::string>> g, p;
  for (const std::string& r : gold) g.push_back(Cells(r));
  for (const std::string& r : pred) p.push_back(Cells(r));
  const size_t n = g.front().size();
  if (n < 2 || p.front().size() != n) return false;
  auto column = [&](const std::vector<std::vector<std::string>>& rows, size_t c) {
    std::vector<std::string> values;
    for (const auto& r : rows) values.push_back(r.size() == n ? r[c] : std::string());
    if (!ordered) std::sort(values.begin(), values.end());
    return values;
  };
  // fits[i]: the predicted columns that hold gold column i's values.
  std::vector<std::vector<size_t>> fits(n);
  for (size_t i = 0; i < n; ++i) {
    const std::vector<std::string> want = column(g, i);
    for (size_t j = 0; j < n; ++j) {
      if (column(p, j) == want) fits[i].push_back(j);
    }
    if (fits[i].empty()) return false;
  }
  std::vector<size_t> order(n);
  std::vector<bool> used(n, false);
  size_t tried = 0;
  constexpr size_t kMaxOrders = 5000;
  std::function<bool(size_t)> place = [&](size_t i) -> bool {
    if (i == n) {
      if (++tried > kMaxOrders) return false;
      std::vector<std::string> rows;
      for (const auto& r : p) {
        std::string key;
        for (size_t c = 0; c < n; ++c) AppendValue(key, r[order[c]]);
        rows.push_back(std::move(key));
      }
      return ordered ? rows == gold : SameBag(rows, gold);
    }
    for (size_t j : fits[i]) {
      if (used[j]) continue;
      used[j] = true;
      order[i] = j;
      if (place(i + 1)) return true;
      used[j] = false;
      if (tried > kMaxOrders) return false;
    }
    return false;
  };
  return place(0);
}

}  // namespace

Verdict Compare(const QueryResult& gold, const QueryResult& pred, bool ordered) {
  Verdict v;
  if (!gold.ok || !pred.ok) return v;
  v.set_ok = SameSet(gold.rows, pred.rows);
  v.bag_ok = SameBagAnyColumnOrder(gold.rows, pred.rows, ordered);
  v.tolerant_ok = SameSet(gold.tolerant, pred.tolerant);
  if (gold.values_kept && pred.values_kept) {
    v.user_ok = CompareResults({&gold.columns, &gold.values, true},
                               {&pred.columns, &pred.values, true}) == Agreement::kSame;
  } else {
    v.user_ok = v.tolerant_ok;
  }
  return v;
}

}  // namespace querypilot::eval
