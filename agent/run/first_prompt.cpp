// The nodes before the first model call: cache (an answer found again) and
// load_schema (what the first prompt shows: the schema under the host's
// rules, its samples, the value hints, the descriptions, the examples and
// the session's turns). agent.cpp runs them (agent.h).
#include <fmt/format.h>

#include <chrono>
#include <optional>

#include "agent/base/sqlite.h"
#include "agent/prompt/prompts.h"
#include "agent/run/run_state.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

using Clock = std::chrono::steady_clock;

// The earlier turns of a session a question sees.
constexpr size_t kSessionTurns = 3;

}  // namespace

// The same question on the same schema: the verified SQL runs again, with no
// model call. SQL that no longer runs is forgotten and the run goes on as new.
void Agent::Cache(RunState& s) {
  // A session's earlier turns give a follow-up its meaning: "and last year?"
  // is not the same question in two conversations, so it is never looked up.
  if (!ctx_.config->session.empty()) {
    s.conversation = SessionTurns(ctx_.history->Runs(), ctx_.config->session, kSessionTurns);
  }
  if (!ctx_.answer_cache || !ctx_.config->answer_cache || !s.conversation.empty()) return;
  std::optional<CachedAnswer> hit =
      ctx_.answer_cache->Find(s.run.question, ReadSchemaVersion(ReadDb()));
  if (!hit) return;
  const ExecutionLimits limits = QueryLimits(*ctx_.config);
  auto start = Clock::now();
  auto query = RunVerified(ctx_.sql, hit->sql, limits);
  if (!query.ok()) {
    ctx_.answer_cache->Forget(s.run.question);
    if (IsDatabaseFault(query.status().kind())) {  // no model call can do better
      s.error = query.status();
      return;
    }
    if (StoppedConnection(query.status())) {
      s.connection_stopped = true;
      s.error = query.status();
    }
    return;
  }
  AttemptRecord rec;
  rec.run_id = s.run.id;
  rec.attempt = 1;
  rec.sql = hit->sql;
  rec.exec_ms = MsSince(start);
  s.reflection.is_acceptable = true;
  s.reflection.reasoning = fmt::format(
      "the same question was answered by run {} on this schema; its SQL ran again "
      "without a model call",
      hit->run_id);
  rec.reflection = s.reflection.ToJson();
  s.attempts.push_back(std::move(rec));
  s.sql = hit->sql;
  s.query = std::move(query).value();
  s.run.cached_from = hit->run_id;
  s.cached = ctx_.history->StandingOf(hit->run_id);
}

void Agent::LoadSchema(RunState& s) {
  if (!ctx_.llm && !ctx_.pause_for_model) {  // no model to ask: the run ends before any attempt
    s.error = ctx_.llm_status;
    return;
  }
  BuildFirstMessages(s);
}

Result<std::vector<ChatMessage>> Agent::FirstMessages(std::string_view question) {
  RunState s;
  s.started = Clock::now();
  s.mark = s.started;
  s.run.question = std::string(question);
  // The session's earlier turns, as Cache reads them for a run.
  if (!ctx_.config->session.empty()) {
    s.conversation = SessionTurns(ctx_.history->Runs(), ctx_.config->session, kSessionTurns);
  }
  BuildFirstMessages(s);
  if (!s.error.ok()) return s.error;
  return s.messages;
}

void Agent::BuildFirstMessages(RunState& s, bool check_every_table) {
  Clock::time_point started = Clock::now();
  // The host's connection decides what may be shown (its authorizer): every
  // table is checked, or the tables the prompt shows are, below.
  auto schema = ctx_.schema_cache->Get(ReadDb(), ctx_.config->sample_rows, ctx_.db,
                                       check_every_table ? nullptr : &s.whole_schema_checked);
  if (check_every_table) s.whole_schema_checked = true;
  if (!schema.ok()) {
    // A damaged or unreadable file says so in its own words; no model call.
    // The host's interrupt (Ctrl-C) ends the run as interrupted.
    const ErrorKind kind = schema.status().kind();
    if (kind == ErrorKind::kInterrupted) {
      s.run.stopped_reads.push_back(schema.status().message());
      s.error = schema.status();
      return;
    }
    s.error = Status(IsDatabaseFault(kind) ? kind : ErrorKind::kInternal,
                     "could not read the schema: " + schema.status().message());
    return;
  }
  // Reads stopped at their bound: what they would have read is not shown.
  s.run.stopped_reads = schema.value()->stopped_reads;
  // A user's table named ask is shown qualified, and the prompt says why
  // (WithAskTablesQualified).
  s.ruled_schema = schema.value();
  s.schema_notes.clear();
  s.schema = WithAskTablesQualified(schema.value(), &s.unreadable_note);
  // Sample rows are read for the tables the prompt shows (WriteFirstMessages),
  // unless the question may tie a table to what its samples add: its value
  // hints' ranking and its linking then read every table's.
  if (QuestionMayTieToSampleNotes(s.run.question)) {
    if (Status st = ReadSamples(s, {}, /*all=*/true); !st.ok()) {
      s.run.stopped_reads.push_back(st.message());
      s.error = st;
      return;
    }
  }
  s.AddTime("load_schema/schema", MsSince(started));
  // The user's descriptions, then what the data shows (coded columns): one
  // copy and one rendering of the schema when there are any.
  std::vector<Description> notes = ctx_.descriptions;
  std::vector<ValueHint>& hints = s.hints;
  if (ctx_.value_index && ctx_.config->value_hints) {
    started = Clock::now();
    s.values = ctx_.value_index->Get(ReadDb(), IndexOptions(*ctx_.config), ctx_.db);
  }
  // The last read of the user's files before the model answers: what follows
  // reads QueryPilot's own stores, so no other process need wait for it.
  if (ctx_.pre_model_reads) ctx_.pre_model_reads->End();
  if (s.values) {
    for (Description& d : CodeNotes(s.values->CodedColumns())) {
      if (ShowsColumn(*s.schema, d.database, d.table, d.column)) notes.push_back(std::move(d));
    }
  }
  s.schema_notes = notes;
  s.schema = WithDescriptions(s.schema, notes);
  if (s.values) {
    // The value index reads on a connection of its own: what it found is
    // shown only for columns the schema shows (the host's rules decide),
    // those of the tables the question points at first.
    // Ranking reads every table of the schema: made only when a phrase is
    // found in more than one column, which most asks' phrases are not.
    std::optional<HintRelevance> rank;
    hints = s.values->Lookup(s.run.question, 12, [&](const ValueHint& h) {
      if (!rank) rank = RankHintsFor(*s.schema, s.run.question);
      return (*rank)(h);
    });
    std::erase_if(hints, [&](const ValueHint& h) {
      return !ShowsColumn(*s.schema, h.database, h.table, h.column);
    });
    s.AddTime("load_schema/value_index", MsSince(started));
  }
  // Only runs marked good teach unless learn_from_success: most asks skip this.
  if (ctx_.config->examples > 0 &&
      (ctx_.config->learn_from_success || ctx_.history->HasGoodRuns())) {
    s.examples = PickExamples(s.run.question,
                              TeachingRuns(ctx_.history->Runs(), ctx_.config->learn_from_success),
                              static_cast<size_t>(ctx_.config->examples));
    for (const Example& e : s.examples) {
      s.run.examples.push_back(e.run_id);
      s.example_sql.push_back(NormaliseSql(e.sql));
    }
  }
  started = Clock::now();
  const double samples_ms = s.samples_ms;
  if (Status st = WriteFirstMessages(s); !st.ok()) {  // the host's interrupt
    s.run.stopped_reads.push_back(st.message());
    s.error = st;
    return;
  }
  // The sample rows read for the tables linked are the schema's part.
  s.AddTime("load_schema/linking", MsSince(started) - (s.samples_ms - samples_ms));
  s.AddTime("load_schema/schema", s.samples_ms - samples_ms);
  if (s.whole_schema_checked) return;
  // The tables the prompt shows, under the host's rules now: those linked
  // and those its value hints name. One that changed since the last whole
  // check makes the prompt again from a schema all checked now.
  started = Clock::now();
  std::vector<SchemaCache::TableName> shown;
  for (const TableInfo* t : s.linked.kept) shown.emplace_back(t->database, t->name);
  for (const ValueHint& h : s.hints) {
    if (const TableInfo* t = s.schema->FindTable(h.table, h.database))
      shown.emplace_back(t->database, t->name);
  }
  Result<bool> confirmed = ctx_.schema_cache->Confirm(*schema.value(), shown, ReadDb(), ctx_.db);
  s.AddTime("load_schema/schema", MsSince(started));
  if (!confirmed.ok()) {  // the host's interrupt
    s.run.stopped_reads.push_back(confirmed.status().message());
    s.error = confirmed.status();
    return;
  }
  if (*confirmed) return;
  s.run.examples.clear();
  s.example_sql.clear();
  BuildFirstMessages(s, true);
}

Status Agent::WriteFirstMessages(RunState& s) {
  // Linked with the samples of the tables it keeps read, again until it
  // keeps none whose samples are not: as linked with every sample read
  // (SamplesToRead says why), which reads a thousand tables' for a few.
  for (;;) {
    const std::string& rendered = s.schema->rendered;
    std::vector<size_t> to_read = SamplesToRead(
        *s.schema, rendered.empty() ? RenderSchema(*s.schema) : rendered, s.run.question, s.hints,
        static_cast<size_t>(ctx_.config->schema_budget_tokens), &s.linked);
    if (to_read.empty()) break;
    if (Status st = ReadSamples(s, std::move(to_read)); !st.ok()) return st;
  }
  s.linked.rendered += s.unreadable_note;
  ChatMessage system{ChatRole::kSystem,
                     SystemPrompt(s.linked.rendered, ctx_.config->clarify, ctx_.config->prompts,
                                  ctx_.config->candidates)};
  ChatMessage question{ChatRole::kUser, QuestionPrompt(s.run.question, s.hints, s.examples,
                                                       s.conversation, ctx_.config->prompts)};
  if (s.messages.size() < 2) {
    s.messages = {std::move(system), std::move(question)};
  } else {
    s.messages[0] = std::move(system);
    s.messages[1] = std::move(question);
  }
  return Status::Ok();
}

Status Agent::ReadSamples(RunState& s, std::vector<size_t> tables, bool all) {
  if (all) {
    tables.clear();
    for (size_t i = 0; i < s.schema->tables.size(); ++i) {
      if (s.schema->tables[i].samples_pending) tables.push_back(i);
    }
  }
  if (tables.empty()) return Status::Ok();
  if (!s.ruled_schema) return Status(ErrorKind::kInternal, "no schema to read sample rows for");
  const Clock::time_point started = Clock::now();
  std::vector<SchemaCache::TableName> names;
  for (size_t i : tables)
    names.emplace_back(s.schema->tables[i].database, s.schema->tables[i].name);
  auto read = ctx_.schema_cache->WithSamples(
      *s.ruled_schema, names, ReadDb(), ctx_.config->sample_rows, ctx_.db, &s.sample_budget_end_ns);
  if (!read.ok()) return read.status();
  // The tables kept, by their places: the new schema has the same tables in
  // the same order.
  const std::shared_ptr<const Schema> before = s.schema;
  std::vector<size_t> kept;
  for (const TableInfo* t : s.linked.kept)
    kept.push_back(static_cast<size_t>(t - before->tables.data()));
  s.ruled_schema = std::move(read).value();
  s.schema =
      WithDescriptions(WithAskTablesQualified(s.ruled_schema, &s.unreadable_note), s.schema_notes);
  for (size_t k = 0; k < kept.size(); ++k) s.linked.kept[k] = &s.schema->tables[kept[k]];
  s.run.stopped_reads = s.schema->stopped_reads;
  s.samples_ms += MsSince(started);
  return Status::Ok();
}

void Agent::ApplyHostRulesNow(RunState& s) {
  if (!s.schema || s.messages.size() < 2) return;
  // The host's interrupt: the run ends with it, its reply recorded.
  if (Status st = RuleWholeSchema(s); !st.ok()) s.error = st;
}

Status Agent::RuleWholeSchema(RunState& s) {
  // Every table as the whole schema shows it: with its samples.
  if (Status st = ReadSamples(s, {}, /*all=*/true); !st.ok()) return st;
  // On the host's connection, compiled there and never run; compared with
  // QueryPilot's own connection where the run has one (AgentContext::read_db).
  Result<Schema> now = UnderHostRulesNow(*s.schema, ctx_.db, ctx_.read_db);
  if (ctx_.pre_model_reads) ctx_.pre_model_reads->End();
  if (!now.ok()) return now.status();
  s.whole_schema_checked = true;
  // Rules unchanged leave the conversation as it was sent.
  RenderInto(&now.value());
  if (now->rendered == RenderSchema(*s.schema)) return Status::Ok();
  s.schema = std::make_shared<const Schema>(std::move(now).value());
  s.ruled_schema.reset();  // no sample is pending
  std::erase_if(s.hints, [&](const ValueHint& h) {
    return !ShowsColumn(*s.schema, h.database, h.table, h.column);
  });
  return WriteFirstMessages(s);
}

}  // namespace querypilot
