// Prompts: every message the agent sends to the model is built here.
//
// A run is one conversation. The first call is [system: rules + schema,
// user: question]. A correction appends [assistant: the failed reply,
// user: the correction], so the model sees its earlier attempts, and the
// unchanged prefix lets providers reuse their prompt cache.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/knowledge/value_index.h"
#include "agent/memory/examples.h"
#include "agent/providers/llm.h"
#include "agent/quality/reflect.h"

namespace querypilot {

// --- Editable texts ---------------------------------------------------------
// The parts of the prompts a user may rewrite (agent_prompt(), agent_prompts):
// the rules of the system message, the clarification rules, and each
// correction strategy's instruction. The frame around them (the schema, the
// question, the error, the findings, the reply format) stays in code.
struct PromptText {
  std::string_view name;  // "rules", "correction.schema", ...
  std::string_view description;
  std::string_view text;  // the default
};
const std::vector<PromptText>& DefaultPromptTexts();

// Texts set by the user, by name; a name not here has its default.
using PromptOverrides = std::map<std::string, std::string>;

// The text of `name`: the override when there is one, else the default.
std::string_view PromptTextFor(const PromptOverrides& overrides, std::string_view name);

// Checks a new text for `name`: a known name, non-empty UTF-8 text of at
// most 20,000 bytes.
Status ValidatePromptText(std::string_view name, std::string_view text);

enum class CorrectionStrategy { kSchema, kAggregation, kReadOnly, kGeneric };

std::string_view CorrectionStrategyName(CorrectionStrategy s);

// column: unknown or ambiguous tables and columns; aggregation: aggregate
// misuse; read_only: a refused query (a write, a file function, several
// statements); generic: everything else.
CorrectionStrategy ChooseStrategy(ErrorKind kind);

// The system message: the rules of the reply and the rendered schema. With
// `candidates` 1: the reply holds exactly one query ("reply.one"); with
// `clarify`, the model may reply with clarifying
// questions in a ```clarify block instead of SQL when the question cannot be
// answered well as asked; without it, it is told to take the most likely
// reading. With `candidates` 2 or 3: it answers the most likely reading and,
// only where another reading could give a different answer, adds up to
// candidates - 1 alternative queries ("candidates"); with `clarify` it asks
// back only when nothing in the schema fits any reading ("clarify.none_fits").
std::string SystemPrompt(std::string_view rendered_schema, bool clarify = true,
                         const PromptOverrides& texts = {}, int candidates = 1);

// The first user message: the question, then the database values it seems
// to name (from the value index), if any, so that the model writes them
// exactly as stored.
// Verified examples (question and SQL, most similar first) come before the
// question when there are any; then the session's earlier turns (oldest
// first), with the "follow_up" text asking for a "Standalone:" line.
std::string QuestionPrompt(std::string_view question, const std::vector<ValueHint>& hints = {},
                           const std::vector<Example>& examples = {},
                           const std::vector<Example>& conversation = {},
                           const PromptOverrides& texts = {});

// The "Standalone: ..." line a reply may hold (at the start of a line),
// restating a follow-up question on its own: returned (at most 1,000 bytes)
// and taken out of `*reply`. "" and `*reply` unchanged when there is none.
std::string TakeStandaloneQuestion(std::string* reply);

// The user message after a failed attempt: the failed SQL's error, its kind,
// the hint, and the strategy's instruction. Short by design.
std::string CorrectionPrompt(ErrorKind kind, std::string_view error, std::string_view hint,
                             CorrectionStrategy strategy, const PromptOverrides& texts = {});

// The user message after a query that ran but whose result looks wrong: the
// findings (critical first, with the real values grounding found), the
// instruction of each critical finding (its row's prompt, findings.cpp: the
// row whose strategy agent_attempts.strategy records for the strongest), and
// leave to reply with the same query when it is right as it is. With no
// critical finding, the "result.relax" text.
std::string ResultCorrectionPrompt(const std::vector<ReflectionIssue>& issues,
                                   const PromptOverrides& texts = {});

}  // namespace querypilot
