// The record tables as one table (RecordTables()): each one's name, its
// columns (how a record shows in each) and its rows, read from the session.
#include <functional>
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

template <typename Record>
std::vector<RecordRow> ShownRecords(const std::vector<Record>& records) {
  std::vector<RecordRow> rows;
  rows.reserve(records.size());
  for (const Record& r : records) {
    RecordRow row;
    for (const auto& c : RecordColumnsOf<Record>()) row.push_back(c.show(r));
    rows.push_back(std::move(row));
  }
  return rows;
}

// A record table's rows: `read`'s records now, each shown as its columns show it.
template <typename Record, std::vector<Record> (Session::*read)() const>
std::vector<RecordRow> RecordsOf(const Session& session) {
  return ShownRecords((session.*read)());
}

constexpr RecordTableSpec kRecordTables[] = {
    {"agent_runs", RecordDeclarations<RunRecord>, RecordsOf<RunRecord, &Session::Runs>},
    {"agent_attempts", RecordDeclarations<AttemptRecord>,
     RecordsOf<AttemptRecord, &Session::Attempts>},
    {"agent_metrics", RecordDeclarations<MetricRecord>, RecordsOf<MetricRecord, &Session::Metrics>},
    {"agent_prompts", RecordDeclarations<PromptRecord>, RecordsOf<PromptRecord, &Session::Prompts>},
    {"agent_descriptions", RecordDeclarations<Description>,
     RecordsOf<Description, &Session::Descriptions>},
};

}  // namespace

std::span<const RecordTableSpec> RecordTables() {
  return kRecordTables;
}

}  // namespace querypilot
