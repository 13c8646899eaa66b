#include "agent/explain.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "agent/base/text.h"
#include "agent/model_calls.h"
#include "agent/prompt/prompts.h"
#include "agent/sql/critic.h"
#include "agent/sql/executor.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

// The reply without its fenced blocks (```...```), trimmed.
std::string ProseOf(std::string_view reply) {
  std::string out;
  size_t at = 0;
  while (at < reply.size()) {
    size_t open = reply.find("```", at);
    if (open == std::string_view::npos) {
      out.append(reply.substr(at));
      break;
    }
    out.append(reply.substr(at, open - at));
    size_t close = reply.find("```", open + 3);
    at = close == std::string_view::npos ? reply.size() : close + 3;
  }
  return text::Trim(out);
}

// Why `reply` is code rather than an explanation, or "" when it is prose: a
// reply that is only fenced blocks, or that SQLite parses as a statement
// (prose fails to parse; nothing is run).
std::string CodeInsteadOfProse(const SqlTarget& target, std::string_view reply) {
  const std::string prose = ProseOf(reply);
  if (prose.empty()) return "its reply was only a code block";
  Result<Statement> parsed = CheckSql(target, prose);
  const ErrorKind kind = parsed.status().kind();
  if (parsed.ok() || (kind != ErrorKind::kSyntaxError && kind != ErrorKind::kNoSql)) {
    return "its reply was SQL";
  }
  return "";
}

// The reply without a lead-in: a first paragraph that is one line ending in
// a colon ("Here is the explanation:"), set apart by a blank line from what it
// announces. The prompt asks for sentences, and a sentence ends with a full
// stop, so the line is known by that shape, not by its words. A reply that is
// nothing but such a line is returned whole.
std::string WithoutLeadIn(std::string_view reply) {
  std::string whole = text::Trim(reply);
  const std::string_view all = whole;
  const size_t first_end = all.find('\n');
  if (first_end == std::string_view::npos) return whole;
  const std::string first = text::Trim(all.substr(0, first_end));
  if (first.empty() || first.back() != ':') return whole;
  const size_t blank_end = all.find('\n', first_end + 1);
  const std::string_view blank =
      all.substr(first_end + 1, blank_end == std::string_view::npos ? std::string_view::npos
                                                                    : blank_end - first_end - 1);
  if (!text::Trim(blank).empty()) return whole;
  std::string rest = text::Trim(all.substr(first_end + 1));
  return rest.empty() ? whole : rest;
}

}  // namespace

Result<std::string> ExplainRun(const AgentContext& ctx, int64_t run_id) {
  constexpr size_t kRows = 20;
  Result<RunRecord> run = ctx.history->AnsweredRun(run_id, "result to explain");
  if (!run.ok()) return run.status();
  if (!ModelCalls(ctx).available()) return ModelCalls(ctx).unavailable();
  ExecutionLimits limits = QueryLimits(*ctx.config);
  limits.probe_rows = kRows;
  auto query = RunAgainVerified(ctx.sql, run->sql, limits);
  if (!query.ok()) return query.status();
  std::string rows;
  for (const Row& row : (*query)->buffered_rows()) {
    AppendRowJson(rows, (*query)->column_names(), row);
    rows += "\n";
  }
  const size_t shown = (*query)->buffered_rows().size();
  std::string count = (*query)->complete_after_probe()
                          ? fmt::format("{} row{}", shown, shown == 1 ? "" : "s")
                          : fmt::format("the first {} rows of more", shown);
  CallCost cost;
  Result<ChatReply> reply =
      ModelCalls(ctx).Ask(ModelStep::kExplanation,
                          fmt::format("Question: {}\nSQL: {}\nResult ({}):\n{}", run->question,
                                      run->sql, count, rows.empty() ? "(no rows)\n" : rows),
                          &cost);
  if (!reply.ok()) return reply.status();
  std::string explanation = WithoutLeadIn(reply->text);
  if (explanation.empty())
    return Status(ErrorKind::kProviderBadResponse, "the model's explanation was empty");
  if (std::string why = CodeInsteadOfProse(ctx.sql, explanation); !why.empty()) {
    return Status(
        ErrorKind::kProviderBadResponse,
        fmt::format("the model gave code, not an explanation ({}); nothing was recorded, ask again "
                    "or set agent_config('explain_model', ...)",
                    why));
  }
  ctx.history->SetExplanation(run_id, explanation, cost.prompt_tokens, cost.completion_tokens);
  return explanation;
}

}  // namespace querypilot
