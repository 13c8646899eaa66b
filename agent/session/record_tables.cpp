// The record tables as one table (RecordTables()): each one's name, its
// columns (how a record shows in each) and its rows, read from the session.
#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "agent/knowledge/descriptions.h"
#include "agent/memory/history.h"
#include "agent/memory/metrics.h"
#include "agent/session/session.h"

namespace querypilot {
namespace {

// A record table's columns: each one's declaration and how a record shows it.
template <typename Record>
struct RecordColumn {
  std::string declaration;  // "name TYPE"
  std::function<RecordCell(const Record&)> show;
};

RecordCell CellText(std::string s) {
  return {Value(std::move(s))};
}

// agent_runs' and agent_attempts' columns: one per row of their field table
// (agent/memory/history.h), which says each one's name, type and value.
template <typename Record, size_t N>
std::vector<RecordColumn<Record>> RecordFieldColumns(const RecordField<Record> (&fields)[N]) {
  std::vector<RecordColumn<Record>> cols;
  for (const RecordField<Record>& f : fields) {
    cols.push_back(
        {std::string(f.column) + " " + std::string(DeclaredType(f)), [&f](const Record& r) {
           ShownValue shown = ShowField(f, r);
           return RecordCell{std::move(shown.value), shown.json};
         }});
  }
  return cols;
}

template <typename Record>
const std::vector<RecordColumn<Record>>& RecordColumnsOf();

template <>
const std::vector<RecordColumn<RunRecord>>& RecordColumnsOf() {
  static const auto* cols =
      new std::vector<RecordColumn<RunRecord>>(RecordFieldColumns(kRunFields));
  return *cols;
}

template <>
const std::vector<RecordColumn<AttemptRecord>>& RecordColumnsOf() {
  static const auto* cols =
      new std::vector<RecordColumn<AttemptRecord>>(RecordFieldColumns(kAttemptFields));
  return *cols;
}

template <>
const std::vector<RecordColumn<MetricRecord>>& RecordColumnsOf() {
  static const auto* cols = new std::vector<RecordColumn<MetricRecord>>{
      {"metric TEXT", [](const MetricRecord& m) { return CellText(m.metric); }},
      {"value NUMERIC",
       [](const MetricRecord& m) {
         if (!m.value) return RecordCell{};
         if (m.kind == MetricKind::kCount) return RecordCell{static_cast<int64_t>(*m.value)};
         return RecordCell{*m.value};
       }},
      {"description TEXT", [](const MetricRecord& m) { return CellText(m.description); }},
  };
  return *cols;
}

template <>
const std::vector<RecordColumn<PromptRecord>>& RecordColumnsOf() {
  static const auto* cols = new std::vector<RecordColumn<PromptRecord>>{
      {"name TEXT", [](const PromptRecord& p) { return CellText(p.name); }},
      {"text TEXT", [](const PromptRecord& p) { return CellText(p.text); }},
      {"is_default INTEGER",
       [](const PromptRecord& p) { return RecordCell{int64_t{p.is_default ? 1 : 0}}; }},
      {"description TEXT", [](const PromptRecord& p) { return CellText(p.description); }},
  };
  return *cols;
}

template <>
const std::vector<RecordColumn<Description>>& RecordColumnsOf() {
  static const auto* cols = new std::vector<RecordColumn<Description>>{
      {"target TEXT", [](const Description& d) { return CellText(d.Target()); }},
      {"database TEXT", [](const Description& d) { return CellText(d.database); }},
      {"table_name TEXT", [](const Description& d) { return CellText(d.table); }},
      {"column_name TEXT",
       [](const Description& d) { return d.column.empty() ? RecordCell{} : CellText(d.column); }},
      {"description TEXT", [](const Description& d) { return CellText(d.text); }},
  };
  return *cols;
}

template <typename Record>
const std::vector<std::string>& RecordDeclarations() {
  static const auto* out = [] {
    auto* v = new std::vector<std::string>();
    for (const auto& c : RecordColumnsOf<Record>()) v->push_back(c.declaration);
    return v;
  }();
  return *out;
}

// A scan's records, each cell shown as its column shows it when read; in
// `order` (places in `records`) when given, else as kept.
template <typename Record>
class ShownRecords final : public RecordRows {
 public:
  explicit ShownRecords(std::vector<Record> records, std::vector<size_t> order = {})
      : records_(std::move(records)), order_(std::move(order)) {}
  size_t size() const override { return records_.size(); }
  RecordCell Cell(size_t row, size_t column) const override {
    const std::vector<RecordColumn<Record>>& columns = RecordColumnsOf<Record>();
    if (row >= records_.size() || column >= columns.size()) return RecordCell{};
    return columns[column].show(records_[order_.empty() ? row : order_[row]]);
  }

 private:
  std::vector<Record> records_;
  std::vector<size_t> order_;
};

// A record table's rows: `read`'s records now.
template <typename Record, std::vector<Record> (Session::*read)() const>
std::unique_ptr<RecordRows> RecordsOf(const Session& session, const RecordQuery&) {
  return std::make_unique<ShownRecords<Record>>((session.*read)());
}

int64_t KeyOf(const RunRecord& r) {
  return r.id;
}
int64_t KeyOf(const AttemptRecord& a) {
  return a.run_id;
}

// A keyed record table's rows: `read`'s records of the query's key (all
// when it names none), in its order (records of one key as they were kept).
template <typename Record, std::vector<Record> (Session::*read)(std::optional<int64_t>) const>
std::unique_ptr<RecordRows> KeyedRecordsOf(const Session& session, const RecordQuery& query) {
  std::vector<Record> records = (session.*read)(query.key);
  std::vector<size_t> order;
  if (query.order != RecordQuery::Order::kAny) {
    // The places sorted, not the records (a run's record is large).
    const bool ascending = query.order == RecordQuery::Order::kAscending;
    order.resize(records.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return ascending ? KeyOf(records[a]) < KeyOf(records[b])
                       : KeyOf(records[a]) > KeyOf(records[b]);
    });
  }
  return std::make_unique<ShownRecords<Record>>(std::move(records), std::move(order));
}

constexpr RecordTableSpec kRecordTables[] = {
    {"agent_runs", RecordDeclarations<RunRecord>, "id", KeyedRecordsOf<RunRecord, &Session::Runs>},
    {"agent_attempts", RecordDeclarations<AttemptRecord>, "run_id",
     KeyedRecordsOf<AttemptRecord, &Session::Attempts>},
    {"agent_metrics", RecordDeclarations<MetricRecord>, nullptr,
     RecordsOf<MetricRecord, &Session::Metrics>},
    {"agent_prompts", RecordDeclarations<PromptRecord>, nullptr,
     RecordsOf<PromptRecord, &Session::Prompts>},
    {"agent_descriptions", RecordDeclarations<Description>, nullptr,
     RecordsOf<Description, &Session::Descriptions>},
};

}  // namespace

std::span<const RecordTableSpec> RecordTables() {
  return kRecordTables;
}

}  // namespace querypilot
