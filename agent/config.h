// Config: one connection's settings, and how the provider endpoint is resolved.
//
// Settings come from the environment when the extension loads and can be
// changed per connection with agent_config(key, value). Every setting is a
// member below (its default the member's initializer, its meaning the
// comment beside it) and one row of a table in config.cpp (its name and, for
// a whole number, its range); the variables read at load are a table there
// too. The provider part resolves against agent/providers/provider.h's rows
// and names no provider itself.
//
// The API key is special: a key set with agent_config('api_key', ...) lives
// only in this struct's memory; a key from the environment is read at request
// time and never copied here. Get() never returns a key, only whether one is
// set and where it comes from.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "agent/base/status.h"
#include "agent/providers/provider.h"

namespace querypilot {

// The names in an `allow_functions` value: separated by commas or white
// space, lower-cased; an error naming the first that is no function name.
Result<std::set<std::string>> ParseFunctionNames(std::string_view value);

// A QUERYPILOT_* variable whose value could not be used.
struct EnvironmentError {
  std::string variable;  // "QUERYPILOT_MAX_ATTEMPTS"
  std::string key;       // the setting it gives, or would give: "max_attempts"; "" for none
  std::string message;   // "QUERYPILOT_MAX_ATTEMPTS must be a whole number from 1 to 10, not '50'"
};

// history_file's value for none: the history stays in memory.
inline constexpr std::string_view kHistoryOff = "off";

struct Config {
  // A provider's name (Providers(): "openai", "anthropic"), or "" (decided
  // by the environment).
  std::string provider;
  // "" = from the environment or the provider's default. May hold
  // credentials (userinfo, ?key=...): they are sent, and never shown (Get
  // and ToJson give it redacted).
  std::string base_url;
  std::string model;  // "" = from the environment (QUERYPILOT_MODEL)
  // The model for correction turns (attempts after the first); "" = `model`.
  // A cheaper model can answer first and a stronger one correct, or the
  // reverse.
  std::string correction_model;
  // The model for agent_explain(); "" = `model`. Explanations are an easy
  // job for a cheaper model.
  std::string explain_model;
  // The model of the review (`review` 1); "" = `model`. A small local
  // model's answers can be reviewed by a stronger one.
  std::string review_model;
  // What ask() gives for an answer with no rows that QueryPilot doubts (a
  // critical finding standing, or a review not accepting it): "error" (an
  // error that says why, with its confidence and run id) or "rows" (the
  // empty result, as any other).
  std::string empty_doubtful = "error";
  // True where such an answer is an error (empty_doubtful "error").
  bool DoubtfulEmptyIsError() const { return empty_doubtful != "rows"; }
  // The conversation this connection's asks belong to; "" = none. A question
  // in a session sees the session's last few answered runs, so that "what
  // about last year?" can follow up on them.
  std::string session;
  // A SQLite file of its own where agent_runs, agent_attempts, verdicts,
  // explanations and descriptions are kept across restarts and shared by
  // every connection and process that uses it. "" = the default: for a
  // database file, a file of QueryPilot's own in the cache folder named by the
  // database's identity ($XDG_CACHE_HOME/querypilot/history); memory only for
  // a memory or temporary database. kHistoryOff = memory only. Set before the
  // first ask (or with QUERYPILOT_HISTORY_FILE).
  std::string history_file;
  // A SQLite file of its own for the value index of database files, shared
  // by every connection and process that names it and kept across restarts;
  // "" = a temporary one per process. Never the user's database.
  std::string value_index_file;
  // The node_modules folder holding npm's vega, vega-lite and vega-embed,
  // whose scripts agent_chart_html() inlines; "" = look in the usual places
  // (agent/chart/chart.h's ChartScriptFolders).
  std::string chart_scripts;
  // Functions generated SQL may call besides SQLite's own, by name,
  // separated by commas ("regexp, my_score"): an application's or the
  // shell's, which may read or write files (agent/sql/program.h). "" = none.
  std::string allow_functions;
  // Prompt texts the user rewrote (agent_prompt()), by name; see
  // agent/prompt/prompts.h. Not a setting of agent_config().
  std::map<std::string, std::string> prompts;
  std::optional<std::string> api_key;  // set in SQL only; never read back

  // Runs the history file keeps at most: past it, each run kept drops the
  // oldest (agent_runs shows at most History::kMemoryRuns of them).
  int max_history_runs = 10000;
  int max_attempts = 3;  // 1..10 SQL generations per ask()
  // The process's threads for the model calls of ask_start runs, at most
  // (agent/answers/async_runs.h): the largest asked for by any ask_start so far.
  int async_threads = 4;
  int connect_timeout_ms = 5000;
  int request_timeout_ms = 60000;  // one HTTP try, connect included
  int http_retries = 2;            // extra tries on 429/5xx
  int retry_base_ms = 500;         // first backoff; doubles each retry
  int retry_max_wait_ms = 20000;   // longest Retry-After we are willing to honour
  int sql_timeout_ms = 10000;      // time budget of one generated query
  // The least time the reply's other readings get from their start, beside
  // the first (agent/quality/readings.h); they get more when the first
  // reading is slow.
  int readings_wait_ms = 300;
  int max_rows = 10000;       // rows ask() returns at most (0 = no cap)
  int chart_max_rows = 5000;  // rows agent_chart() embeds at most
  // 1: where the answer's shape gives no chart, one model call proposes a
  // Vega-Lite specification, checked before it is returned (agent/chart/chart.h).
  int chart_model = 0;
  int sample_rows = 3;    // sample rows per table in the prompt
  int max_tokens = 1024;  // completion budget per model call
  double temperature = 0.0;
  int max_question_bytes = 8192;
  int clarify = 1;  // 1: the model may answer with clarifying questions
  // 1..3 queries a model's first reply may hold: the most likely reading and,
  // only where another reading could give a different answer, alternatives,
  // each run and compared (agent/quality/agreement.h).
  int candidates = 3;
  // 1: where the candidates disagree, one more model call picks among them.
  int candidate_select = 0;
  // 1..5 independent replies the first generation asks for (one call where
  // the provider takes "n"; calls side by side elsewhere). The first is the
  // reply as with 1; each other one's first reading runs and is compared
  // with the answer returned, for the confidence (agent/quality/samples.h).
  // 1: no samples.
  int samples = 1;
  // 1: after an answer runs and the rule checks accept it, one more model
  // call reviews it (agent/quality/review.h): the question, the tables and
  // columns the SQL reads, the SQL and the result's first review_rows rows.
  // One not accepted is sent back once; the correction replaces it only when
  // its own review accepts it. On by default; docs/confidence.md gives what
  // it was measured to catch and cost.
  int review = 1;
  // 0..100 result rows the review is shown; 0: only the column names and the
  // row count.
  int review_rows = 10;
  int examples = 3;  // most verified question/SQL pairs shown in a first prompt
  // 1: runs answered at the first attempt teach too, not only runs marked good.
  int learn_from_success = 0;
  int answer_cache = 1;  // 1: a repeated question on the same schema re-runs its verified SQL
  int value_hints = 1;   // 1: list the database values a question names in its prompt
  // 1: database files are read for the value index on a connection of their
  // own, beside the asks; 0: in slices during asks, as memory databases are.
  int value_index_background = 1;
  // How long an ask waits for a database file's value index to be complete
  // (the first ask of a connection); past it, it uses what has been read.
  int value_index_wait_ms = 50;
  // What the asks of a connection spend in all reading a database file of
  // more than 1 MiB that no thread reads in the background (a file in
  // rollback-journal mode), 60 ms at most each; past it they read only what
  // changes, and SELECT agent_index() reads the rest. 0: asks never read it.
  int value_index_ask_ms = 1000;
  // 1: with no value_index_file, the index of a database file of more than
  // 1 MiB is kept in the user's cache folder (DefaultValueIndexCacheDir(),
  // agent/knowledge/value_index.h), one file per database file, so that the
  // next process need not read the file again; 0: a temporary one per process.
  int value_index_cache = 1;
  // The most the kept value indexes (value_index_cache's folder) may take on
  // disk, in MB; past it the index of the database used least recently is
  // removed first. 0: no bound.
  int cache_max_mb = 1024;
  // Prune a bigger schema to the tables a question needs (0 = never); 2000
  // measured in eval/README.md ("Schema linking").
  int schema_budget_tokens = 2000;
  // 0: a query past sql_timeout_ms is stopped by sqlite3_interrupt from a
  // watchdog thread and the connection's own progress handler is never
  // touched; the stop ends the asking statement. 1: QueryPilot's own progress
  // handler runs while its SQL runs (replacing the host's), so a slow query
  // can be sent back to the model for a faster one.
  int progress_handler = 0;

  // Sets one setting from its SQL text form, validating range and type.
  // Unknown keys and out-of-range values are InvalidArgument; the Config is
  // unchanged on error.
  Status Set(const std::string& key, const std::string& value);

  // The text form of one setting; base_url redacted (RedactUrl). For
  // "api_key": "set (agent_config)", "set (environment: NAME)" or "unset".
  // Unknown key: InvalidArgument.
  Result<std::string> Get(const std::string& key,
                          const std::function<const char*(const char*)>& getenv) const;

  // What SQL type a setting's value has, for agent_config to return it as:
  // kInteger for the whole-number settings, kReal for temperature, kText for
  // the rest (and for unknown keys).
  enum class ValueType { kText, kInteger, kReal };
  static ValueType TypeOf(const std::string& key);

  // Every setting as a JSON object (api_key masked and base_url redacted as
  // in Get()).
  std::string ToJson(const std::function<const char*(const char*)>& getenv) const;

  // Settings taken from QUERYPILOT_* variables: each setting of
  // EnvironmentKeys() from its EnvironmentVariable() (the key only checked,
  // never copied). A value that cannot be used keeps the setting's default
  // and is reported through `errors` (which may be null), naming the
  // variable and the form or range it takes; the value is shown only where
  // it is not a secret (a base URL redacted, a key never). A variable set to
  // nothing is reported too (it is no default: the setting would come from
  // elsewhere), and so is every other name of `names` (the process's
  // variables, EnvironmentNames()) that starts with QUERYPILOT in any case:
  // with the variable QueryPilot reads that is nearest to it, whose
  // setting's key it carries when it is near enough to be a slip of it
  // (QUERYPILOT_BASEURL: QUERYPILOT_BASE_URL), never with its value. Never
  // throws.
  static Config FromEnvironment(const std::function<const char*(const char*)>& getenv,
                                const std::vector<std::string>& names,
                                std::vector<EnvironmentError>* errors);

  // The settings read from their variables when the extension loads, in
  // display order: every setting but those whose row says it is set on the
  // connection only (the files, checked against the connection as they are
  // set, and progress_handler, checked against its SQLite).
  static std::vector<std::string> EnvironmentKeys();

  // Names of all settings, in display order.
  static std::vector<std::string> Keys();
};

// The keys agent_config shows besides the settings, read-only: their values
// are what the connection finds (its SQLite, its value index) or what
// QueryPilot is (its findings, its confidence), never set. Setting one is
// InvalidArgument saying what it shows.
enum class ReadOnlySetting { kHost, kInUse, kProblems, kValueIndex, kFindings, kConfidence };
struct ReadOnlySettingRow {
  ReadOnlySetting id;
  const char* key;
  const char* shows;  // "what this connection's SQLite provides"
  bool in_listing;    // shown by agent_config() too, after the settings
};
// Every read-only key, in the order agent_config() shows them.
std::span<const ReadOnlySettingRow> ReadOnlySettings();
// The row of the read-only key `key`; null for any other key.
const ReadOnlySettingRow* FindReadOnlySetting(std::string_view key);

// The variable that gives the setting `key` when the extension loads:
// QUERYPILOT_ and the key in capitals (QUERYPILOT_MAX_ATTEMPTS).
std::string EnvironmentVariable(std::string_view key);

// The names of this process's environment variables, for FromEnvironment.
std::vector<std::string> EnvironmentNames();

// Ok when `errors` is empty; else NotConfigured, saying that nothing was
// asked, each variable's message, and how to fix it (the variable, or the
// setting on the connection, where the error has a setting).
Status EnvironmentStatus(const std::vector<EnvironmentError>& errors);

// Resolution order: agent_config, then QUERYPILOT_*, then the ecosystem's own
// names, each provider's row of Providers() (OPENAI_API_KEY, OPENAI_BASE_URL
// which includes /v1; ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL which does not).
// With no provider set, the first provider whose own variables are set, else
// the default. NotConfigured when nothing says where a
// model is, or when no model name is known; the message says how to fix it.
// A base URL or key that is set but cannot be used (no http(s) scheme, no
// host, a space or control character) is NotConfigured naming where it came
// from: resolution never falls through to the next source. The endpoint is
// EndpointUrl(base, path): a base URL's query is kept after the path. A
// model named as another provider's (claude-... for openai) at this
// provider's public endpoint is NotConfigured too, with the provider to set.
// A base URL that is most likely wrong but is still sent to (the endpoint
// repeats its path's end; no path and no /v1: FindBaseUrlSlip) is named, with
// its fix, in likely_problems.
Result<ResolvedProvider> ResolveProvider(const Config& config,
                                         const std::function<const char*(const char*)>& getenv);

// The options of the provider client that the settings give.
ProviderOptions ProviderOptionsFrom(const Config& config);

}  // namespace querypilot
