// querypilot-eval: execution accuracy and cost of QueryPilot on a dataset.
//
// Usage:
//   querypilot-eval --data ../shared/datasets --replay ../shared/datasets/predictions
//       --max-attempts 1,3 --json eval.json --chart eval.svg   (one command line)
//   querypilot-eval --data my_dataset/ --base-url http://127.0.0.1:11434/v1 --model qwen2.5-coder
//   querypilot-eval compare no_retry.json retry.json
//
// See `querypilot-eval --help` and eval/README.md.
#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "eval/dataset.h"
#include "eval/examples_eval.h"
#include "eval/gold_eval.h"
#include "eval/linking_eval.h"
#include "eval/mutants.h"
#include "eval/replay.h"
#include "eval/report.h"
#include "eval/review_report.h"
#include "eval/review_set.h"
#include "eval/runner.h"
#include "querypilot_version.h"

namespace qe = querypilot::eval;
namespace fs = std::filesystem;

namespace {

constexpr const char* kUsage =
    R"(querypilot-eval: execution accuracy and cost of QueryPilot on a dataset

usage:
  querypilot-eval --data PATH [options]
  querypilot-eval compare A.json B.json
  querypilot-eval gold --data PATH [--half A|B] [--sample N] [--show N]
                         replay every gold query as the model's answer (one attempt) and
                         count what the result checks send back: every one is a false alarm
  querypilot-eval review-set --data PATH --systems PATH[,PATH] --out DIR [--count DATASET=N,...]
                         the answers the review is measured on: per data set with the
                         systems' predictions, N silently wrong and N right answers (one
                         per question each), per half of one without, N gold answers and
                         N mutants; written as prediction files (eval/review_set.h)
  querypilot-eval mutants --data PATH [--half A|B] [--sample N] [--candidates [--show N] [--json F]]
                         the gold queries with one generic mistake each (a literal's case, a
                         dropped filter, a missing LIMIT, a wrong aggregate or join key, ids
                         for names): recall of the result checks per kind of mistake; with
                         --candidates, gold and its mutants as one reply's readings (gold
                         first with an agreeing rewrite, gold first with mutants, a mutant
                         first with gold): the answer returned and the confidence's calibration

  --data PATH[,PATH...]  questions.jsonl, a folder with one, or a folder of such folders
                         (Spider/BIRD shape: db_id, question, gold_sql, [evidence, difficulty])
  --replay PATH          answer with a prediction file's SQL (or every *.jsonl in a folder,
                         one run each) through a replay model on 127.0.0.1; without it,
                         the provider configured as for the extension answers
  --recording FILE       answer with a recording of a model's replies to QueryPilot's first
                         prompt (JSON: [{db_id, question, request, replies[]}], as
                         shared/tools/merge_replies.py writes it): one run per reply, the
                         k-th answering each first prompt with reply k and a request for n
                         choices with n replies in turn; corrections are not recorded (the
                         first reply again), so use --max-attempts 1
  --alternatives F2,F3|K with --replay: the first reply also holds, as further ```sql
                         blocks, these files' SQL for the same question (db_id and
                         question), or with a number K the next K files of --replay's
                         folder in turn (each file's run gets the K after it)
  --samples F2,F3|K      with --replay: independent samples (the `samples` setting's n
                         choices of the first prompt): choice 1 is the prediction's reply,
                         choice 2 on these files' SQL for the same question in order (or,
                         with a number K, the next K files of --replay's folder); set
                         --set samples=N with N at most 1 + the files given
  --review LIST          e.g. 0,1: one run each with the `review` setting off and on
                         (a replay given no --review-recording runs with review 0)
  --review-recording FILE
                         answer review requests (the review, the correction it sends back
                         and the review of that correction) with recorded replies: JSON
                         [{request, replies[]}] keyed by the request's exact text as
                         shared/tools/model_bridge.py writes it (eval/merge_review_replies.py
                         makes it); a request with none gets HTTP 400 (the ask goes on
                         unreviewed); prints the review's figures (eval/review_report.h)
  --review-reply K       which recorded reply answers (1 = the first; default 1)
  --dump-missing DIR     write each review request with no recorded reply to
                         DIR/NNNN.request.txt (model_bridge.py's form) for a model to
                         answer as DIR/NNNN.response.txt
  --provider NAME        openai or anthropic      } these three set agent_config; otherwise the
  --base-url URL         the model's endpoint     } QUERYPILOT_* and OPENAI_/ANTHROPIC_ environment
  --model NAME           the model name           } variables apply; the key is read only from there
  --max-attempts LIST    e.g. 1 (no retry) or 1,3 (one run each); default 3
  --set KEY=VALUE        any other agent_config setting, for every connection (repeatable)
  --limit N              only the first N questions of each run
  --timeout-s S          budget for each query, gold and predicted (default 30)
  --name NAME            the run's name (default: the prediction file, or "live")
  --extension PATH       querypilot.so (default: next to this program)
  --json FILE            every result as JSON (for `compare` and for machines)
  --chart FILE           an SVG chart: accuracy by attempt, cost per question
  --no-evidence          ask the question alone, without the dataset's evidence ("Hint:")
  --descriptions         give each database's own column descriptions (BIRD's
                         <db_id>_description/*.csv) to agent_describe before asking
  --quiet                no progress line
)";

struct Options {
  std::string alternatives, samples;
  std::string review_recording, dump_missing;
  size_t review_reply = 1;
  std::vector<std::string> review_modes;
  std::string recording;
  std::string data, replay, provider, base_url, model, name, extension, json_path, chart_path;
  std::vector<int> max_attempts;
  std::vector<std::pair<std::string, std::string>> settings;
  size_t limit = 0;
  int timeout_ms = 30000;
  bool quiet = false;
  bool evidence = true;
  bool descriptions = false;
};

// Every run of an evaluation as JSON (for `compare` and for machines); false,
// said on stderr, when the file cannot be written.
bool WriteRunsJson(const std::string& path, const std::string& data,
                   const std::vector<qe::RunOutput>& outputs,
                   const std::vector<qe::Summary>& summaries,
                   const qe::ReviewReport* review = nullptr) {
  nlohmann::ordered_json j;
  j["querypilot_version"] = QUERYPILOT_VERSION;
  j["data"] = data;
  j["runs"] = nlohmann::ordered_json::array();
  for (size_t i = 0; i < outputs.size(); ++i)
    j["runs"].push_back(qe::EvalRunToReportJson(outputs[i], summaries[i]));
  if (review) j["review"] = qe::ReviewReportJson(*review);
  std::ofstream f(path);
  f << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  if (!f) fmt::print(stderr, "querypilot-eval: cannot write {}\n", path);
  return static_cast<bool>(f);
}

int Usage(const std::string& error) {
  fmt::print(stderr, "querypilot-eval: {}\n\n{}", error, kUsage);
  return 2;
}

std::string DefaultExtension(const char* argv0) {
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) self = fs::absolute(argv0);
  return (self.parent_path() / "querypilot.so").string();
}

int Compare(const std::string& a_path, const std::string& b_path) {
  auto load = [](const std::string& path, nlohmann::json& out) {
    std::ifstream in(path);
    if (!in) {
      fmt::print(stderr, "querypilot-eval: cannot open {}\n", path);
      return false;
    }
    out = nlohmann::json::parse(in, nullptr, false);
    if (out.is_discarded() || !out.contains("runs")) {
      fmt::print(stderr, "querypilot-eval: {} is not a querypilot-eval JSON file\n", path);
      return false;
    }
    return true;
  };
  nlohmann::json a, b;
  if (!load(a_path, a) || !load(b_path, b)) return 1;
  try {
    qe::PrintComparison(std::cout, a, b);
  } catch (const std::exception& e) {
    fmt::print(stderr, "querypilot-eval: cannot compare: {}\n", e.what());
    return 1;
  }
  return 0;
}

// The prediction files of a path (a file, or every *.jsonl of a folder),
// loaded, or an error naming what could not be read.
querypilot::Result<std::vector<qe::PredictionFile>> LoadPredictionFiles(const std::string& path) {
  auto files = qe::ListPredictionFiles(path);
  if (!files.ok()) return files.status();
  std::vector<qe::PredictionFile> out;
  for (const std::string& f : files.value()) {
    auto p = qe::LoadPredictions(f);
    if (!p.ok()) return p.status();
    out.push_back(std::move(p).value());
  }
  return out;
}

}  // namespace

// querypilot-eval linking --data PATH [--budgets LIST] [--distractors N] [--db-out FILE]
//                         [--descriptions 1]
// querypilot-eval linking --data PATH --attach N [--half A|B] [--budgets LIST]
// querypilot-eval linking --wide 50,500 [--budgets LIST]
int Linking(const std::vector<std::string>& args) {
  std::string data;
  qe::LinkingSpec spec;
  bool attached = false;
  auto numbers = [](const std::string& v) {
    std::vector<size_t> out;
    for (size_t p = 0; p <= v.size();) {
      size_t comma = std::min(v.find(',', p), v.size());
      out.push_back(std::stoul(v.substr(p, comma - p)));
      p = comma + 1;
    }
    return out;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (i + 1 >= args.size()) return Usage(fmt::format("{} needs a value", args[i]));
    const std::string& a = args[i];
    const std::string& v = args[++i];
    try {
      if (a == "--data") {
        data = v;
      } else if (a == "--distractors") {
        spec.distractors = std::stoul(v);
      } else if (a == "--db-out") {
        spec.db_out = v;
      } else if (a == "--descriptions") {
        spec.descriptions = v == "1";
      } else if (a == "--budgets") {
        spec.budgets = numbers(v);
      } else if (a == "--attach") {
        spec.attach = std::stoul(v);
        attached = true;
      } else if (a == "--half") {
        if (v != "A" && v != "B") return Usage("linking: --half is A or B");
        spec.half = v;
      } else if (a == "--show") {
        spec.show = std::stoul(v);
      } else if (a == "--wide") {
        spec.wide = numbers(v);
      } else {
        return Usage(fmt::format("linking: unknown option {}", a));
      }
    } catch (const std::exception&) {
      return Usage(fmt::format("linking: bad value for {}: {}", a, v));
    }
  }
  if (!spec.wide.empty()) {
    auto wide = qe::EvaluateWide(spec);
    if (!wide.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", wide.status().message());
      return 1;
    }
    qe::PrintWide(std::cout, *wide);
    if (data.empty()) return 0;
  }
  if (data.empty()) return Usage("linking needs --data (or --wide)");
  auto questions = qe::LoadQuestions(data);
  if (!questions.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", questions.status().message());
    return 1;
  }
  if (attached) {
    auto report = qe::EvaluateAttached(*questions, spec);
    if (!report.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", report.status().message());
      return 1;
    }
    qe::PrintAttached(std::cout, *report, spec);
    return 0;
  }
  auto report = qe::EvaluateLinking(*questions, spec);
  if (!report.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", report.status().message());
    return 1;
  }
  qe::PrintLinking(std::cout, *report);
  return 0;
}

// querypilot-eval gold --data PATH [--half A|B] [--sample N] [--show N]
// querypilot-eval mutants --data PATH [--half A|B] [--sample N]
int Gold(const std::vector<std::string>& args, const std::string& extension, bool mutants) {
  std::string data;
  qe::GoldSpec spec;
  spec.extension_path = extension;
  size_t show = 0;
  std::string json_path;
  bool candidates = false;
  std::vector<std::string> pairs;
  for (const std::string& a : args) {
    if (mutants && a == "--candidates") {
      candidates = true;
    } else {
      pairs.push_back(a);
    }
  }
  const std::vector<std::string>& args_ = pairs;
  for (size_t i = 0; i + 1 < args_.size(); i += 2) {
    const std::string& a = args_[i];
    const std::string& v = args_[i + 1];
    try {
      if (a == "--data")
        data = v;
      else if (a == "--half")
        spec.half = v;
      else if (a == "--sample")
        spec.sample = std::stoul(v);
      else if (a == "--show")
        show = std::stoul(v);
      else if (a == "--json" && candidates)
        json_path = v;
      else if (a == "--extension")
        spec.extension_path = v;
      else
        return Usage(fmt::format("gold: unknown option {}", a));
    } catch (const std::exception&) {
      return Usage(fmt::format("gold: bad value for {}: {}", a, v));
    }
  }
  if (data.empty() || args_.size() % 2) return Usage("gold needs --data PATH");
  if (!spec.half.empty() && spec.half != "A" && spec.half != "B")
    return Usage("gold: --half is A or B");
  auto questions = qe::LoadQuestions(data);
  if (!questions.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", questions.status().message());
    return 1;
  }
  if (candidates) {
    auto runs = qe::EvaluateMutantCandidates(qe::SelectGold(*questions, spec), spec);
    if (!runs.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", runs.status().message());
      return 1;
    }
    qe::PrintMutantCandidates(std::cout, *runs, show);
    std::vector<qe::Summary> summaries;
    for (const qe::RunOutput& run : *runs) summaries.push_back(qe::Summarise(run));
    if (!json_path.empty() && !WriteRunsJson(json_path, data, *runs, summaries)) return 1;
    return 0;
  }
  if (mutants) {
    auto report = qe::EvaluateMutants(qe::SelectGold(*questions, spec), spec);
    if (!report.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", report.status().message());
      return 1;
    }
    qe::PrintMutants(std::cout, *report);
    return 0;
  }
  auto report = qe::EvaluateGold(qe::SelectGold(*questions, spec), spec, nullptr);
  if (!report.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", report.status().message());
    return 1;
  }
  qe::PrintGold(std::cout, *report, show);
  return 0;
}

// querypilot-eval examples --data PATH [--k N]
int Examples(const std::vector<std::string>& args) {
  std::string data;
  size_t k = 3;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    if (args[i] == "--data") {
      data = args[i + 1];
    } else if (args[i] == "--k") {
      k = static_cast<size_t>(std::atoi(args[i + 1].c_str()));
    } else {
      return Usage(fmt::format("examples: unknown option {}", args[i]));
    }
  }
  if (data.empty() || args.size() % 2) return Usage("examples needs --data PATH [--k N]");
  auto questions = qe::LoadQuestions(data);
  if (!questions.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", questions.status().message());
    return 1;
  }
  qe::PrintExamples(std::cout, qe::EvaluateExamples(*questions, k), k);
  return 0;
}

// querypilot-eval review-set --data PATH --systems PATH[,PATH] --out DIR [--count D=N,...]
int ReviewSet(const std::vector<std::string>& args) {
  std::string data, systems;
  qe::ReviewSetSpec spec;
  for (size_t i = 0; i + 1 < args.size(); i += 2) {
    const std::string& a = args[i];
    const std::string& v = args[i + 1];
    try {
      if (a == "--data") {
        data = v;
      } else if (a == "--systems") {
        systems = v;
      } else if (a == "--out") {
        spec.out_dir = v;
      } else if (a == "--count") {
        std::stringstream ss(v);
        std::string part;
        while (std::getline(ss, part, ',')) {
          const size_t eq = part.find('=');
          if (eq == std::string::npos)
            spec.default_count = std::stoul(part);
          else
            spec.counts[part.substr(0, eq)] = std::stoul(part.substr(eq + 1));
        }
      } else {
        return Usage(fmt::format("review-set: unknown option {}", a));
      }
    } catch (const std::exception&) {
      return Usage(fmt::format("review-set: bad value for {}: {}", a, v));
    }
  }
  if (data.empty() || spec.out_dir.empty() || args.size() % 2)
    return Usage("review-set needs --data PATH and --out DIR");
  auto questions = qe::LoadQuestions(data);
  if (!questions.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", questions.status().message());
    return 1;
  }
  std::stringstream ss(systems);
  std::string part;
  while (!systems.empty() && std::getline(ss, part, ',')) {
    auto files = LoadPredictionFiles(part);
    if (!files.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", files.status().message());
      return 1;
    }
    for (qe::PredictionFile& f : files.value()) spec.systems.push_back(std::move(f));
  }
  if (querypilot::Status st = qe::WriteReviewSet(*questions, spec, std::cout); !st.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", st.message());
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "review-set") {
    return ReviewSet(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args[0] == "examples") {
    return Examples(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  if (!args.empty() && args[0] == "compare") {
    if (args.size() != 3) return Usage("compare takes two JSON files");
    return Compare(args[1], args[2]);
  }
  if (!args.empty() && (args[0] == "gold" || args[0] == "mutants")) {
    return Gold(std::vector<std::string>(args.begin() + 1, args.end()), DefaultExtension(argv[0]),
                args[0] == "mutants");
  }
  if (!args.empty() && args[0] == "linking") {
    return Linking(std::vector<std::string>(args.begin() + 1, args.end()));
  }
  Options o;
  o.extension = DefaultExtension(argv[0]);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* {
      if (i + 1 >= args.size()) return nullptr;
      return &args[++i];
    };
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    }
    if (a == "--quiet") {
      o.quiet = true;
      continue;
    }
    if (a == "--no-evidence") {
      o.evidence = false;
      continue;
    }
    if (a == "--descriptions") {
      o.descriptions = true;
      continue;
    }
    const std::string* v = value();
    if (!v) return Usage(fmt::format("{} needs a value", a));
    try {
      if (a == "--data")
        o.data = *v;
      else if (a == "--replay")
        o.replay = *v;
      else if (a == "--recording")
        o.recording = *v;
      else if (a == "--alternatives")
        o.alternatives = *v;
      else if (a == "--samples")
        o.samples = *v;
      else if (a == "--review-recording")
        o.review_recording = *v;
      else if (a == "--dump-missing")
        o.dump_missing = *v;
      else if (a == "--review-reply") {
        o.review_reply = std::stoul(*v);
        if (o.review_reply < 1) return Usage("--review-reply counts from 1");
      } else if (a == "--review") {
        o.review_modes.clear();
        std::stringstream ss(*v);
        std::string part;
        while (std::getline(ss, part, ',')) {
          if (part != "0" && part != "1") return Usage("--review takes 0, 1 or 0,1");
          o.review_modes.push_back(part);
        }
      } else if (a == "--provider")
        o.provider = *v;
      else if (a == "--base-url")
        o.base_url = *v;
      else if (a == "--model")
        o.model = *v;
      else if (a == "--name")
        o.name = *v;
      else if (a == "--extension")
        o.extension = *v;
      else if (a == "--json")
        o.json_path = *v;
      else if (a == "--chart")
        o.chart_path = *v;
      else if (a == "--limit")
        o.limit = std::stoul(*v);
      else if (a == "--timeout-s")
        o.timeout_ms = static_cast<int>(std::stod(*v) * 1000);
      else if (a == "--max-attempts") {
        o.max_attempts.clear();  // the last --max-attempts wins
        std::stringstream ss(*v);
        std::string part;
        while (std::getline(ss, part, ',')) o.max_attempts.push_back(std::stoi(part));
      } else if (a == "--set") {
        size_t eq = v->find('=');
        if (eq == std::string::npos) return Usage("--set takes KEY=VALUE");
        o.settings.emplace_back(v->substr(0, eq), v->substr(eq + 1));
      } else {
        return Usage(fmt::format("unknown option {}", a));
      }
    } catch (const std::exception&) {
      return Usage(fmt::format("{} needs a number, not '{}'", a, *v));
    }
  }
  if (o.data.empty()) return Usage("--data is required");
  if (o.max_attempts.empty()) o.max_attempts.push_back(3);
  for (int m : o.max_attempts) {
    if (m < 1 || m > 10) return Usage("--max-attempts takes numbers from 1 to 10");
  }
  if (o.timeout_ms < 100) return Usage("--timeout-s must be at least 0.1");
  std::error_code ec;
  if (!fs::is_regular_file(o.extension, ec)) {
    fmt::print(stderr, "querypilot-eval: no extension at {} (build it, or pass --extension)\n",
               o.extension);
    return 1;
  }

  auto questions = qe::LoadQuestions(o.data);
  if (!questions.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", questions.status().message());
    return 1;
  }
  std::vector<qe::PredictionFile> predictions;
  if (!o.replay.empty()) {
    auto files = LoadPredictionFiles(o.replay);
    if (!files.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", files.status().message());
      return 1;
    }
    predictions = std::move(files).value();
  }
  if (!o.recording.empty()) {
    if (!o.replay.empty())
      return Usage("--recording and --replay are two kinds of answers: give one");
    if (!o.alternatives.empty()) return Usage("--alternatives needs --replay, not --recording");
    auto files = qe::LoadRecording(o.recording);
    if (!files.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", files.status().message());
      return 1;
    }
    predictions = std::move(files).value();
  }
  // Other files' SQL for each run's questions: --alternatives as further
  // readings of the first reply, --samples as further choices. The value is
  // F2,F3 or a number K (the next K files of --replay's folder in turn).
  const std::vector<qe::PredictionFile> snapshot = predictions;  // each file's own SQL
  auto add_sources = [&](const std::string& option, const std::string& value,
                         std::vector<std::string> qe::Prediction::*field,
                         const std::string& suffix) -> int {
    if (value.empty()) return -1;
    if (predictions.empty()) return Usage(option + " needs --replay");
    std::vector<qe::PredictionFile> loaded;
    std::vector<std::vector<const qe::PredictionFile*>> sources(predictions.size());
    const bool rotation = std::all_of(value.begin(), value.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c));
    });
    if (rotation) {
      const size_t k = std::stoul(value);
      if (k >= predictions.size()) {
        return Usage(fmt::format("{} {} needs more than {} files in --replay", option, k, k));
      }
      for (size_t p = 0; p < predictions.size(); ++p) {
        for (size_t d = 1; d <= k; ++d) sources[p].push_back(&snapshot[(p + d) % snapshot.size()]);
      }
    } else {
      std::stringstream ss(value);
      std::string part;
      while (std::getline(ss, part, ',')) {
        auto f = qe::LoadPredictions(part);
        if (!f.ok()) {
          fmt::print(stderr, "querypilot-eval: {}\n", f.status().message());
          return 1;
        }
        loaded.push_back(std::move(f).value());
      }
      for (auto& s : sources) {
        for (const qe::PredictionFile& f : loaded) s.push_back(&f);
      }
    }
    for (size_t p = 0; p < predictions.size(); ++p) {
      for (auto& [key, pred] : predictions[p].by_question) {
        for (const qe::PredictionFile* f : sources[p]) {
          auto it = f->by_question.find(key);
          if (it != f->by_question.end()) (pred.*field).push_back(it->second.pred_sql);
        }
      }
      predictions[p].name += suffix;
    }
    return -1;
  };
  if (!o.samples.empty() && !o.recording.empty())
    return Usage("--samples needs --replay, not --recording");
  if (int rc = add_sources("--alternatives", o.alternatives, &qe::Prediction::alternatives, "+alt");
      rc >= 0)
    return rc;
  if (int rc = add_sources("--samples", o.samples, &qe::Prediction::samples, "+samples"); rc >= 0)
    return rc;

  qe::ReviewReplies review_replies;
  const bool reviewing = !o.review_recording.empty() || !o.dump_missing.empty();
  if (reviewing && predictions.empty())
    return Usage("--review-recording and --dump-missing need --replay or --recording");
  if (!o.review_recording.empty()) {
    if (auto st = review_replies.Load(o.review_recording, o.review_reply - 1); !st.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", st.message());
      return 1;
    }
  }
  if (!o.dump_missing.empty()) {
    if (auto st = review_replies.SetDumpFolder(o.dump_missing); !st.ok()) {
      fmt::print(stderr, "querypilot-eval: {}\n", st.message());
      return 1;
    }
  }

  std::vector<std::pair<std::string, std::string>> settings;
  if (!o.provider.empty()) settings.emplace_back("provider", o.provider);
  if (!o.base_url.empty()) settings.emplace_back("base_url", o.base_url);
  if (!o.model.empty()) settings.emplace_back("model", o.model);
  // A replay has no model to review its answers unless recorded reviews are
  // given: `review` is then 0 (a --set or --review says otherwise).
  if (!predictions.empty() && o.review_recording.empty() && o.review_modes.empty()) {
    settings.emplace_back("review", "0");
  }
  settings.insert(settings.end(), o.settings.begin(), o.settings.end());

  std::vector<qe::RunSpec> specs;
  const size_t sources = predictions.empty() ? 1 : predictions.size();
  if (o.review_modes.empty()) o.review_modes.push_back("");
  for (size_t p = 0; p < sources; ++p) {
    for (const std::string& review : o.review_modes) {
      for (int m : o.max_attempts) {
        qe::RunSpec spec;
        spec.review_replies = &review_replies;
        spec.extension_path = o.extension;
        spec.max_attempts = m;
        spec.timeout_ms = o.timeout_ms;
        spec.settings = settings;
        spec.limit = o.limit;
        spec.evidence = o.evidence;
        spec.descriptions = o.descriptions;
        std::string base = !o.name.empty()       ? o.name
                           : predictions.empty() ? std::string("live")
                                                 : predictions[p].name;
        if (!predictions.empty()) spec.replay = &predictions[p];
        spec.name = o.max_attempts.size() > 1 ? fmt::format("{} x{}", base, m) : base;
        if (!review.empty()) {
          spec.settings.emplace_back("review", review);
          spec.name += review == "1" ? " review on" : " review off";
        }
        specs.push_back(std::move(spec));
      }
    }
  }

  const bool tty = isatty(STDERR_FILENO) && !o.quiet;
  qe::ResultCache cache;
  std::vector<qe::RunOutput> outputs;
  std::vector<qe::Summary> summaries;
  for (size_t r = 0; r < specs.size(); ++r) {
    const qe::RunSpec& spec = specs[r];
    size_t last_decile = 0;
    auto progress = [&](size_t done, size_t total, size_t correct) {
      if (o.quiet) return;
      if (tty) {
        fmt::print(stderr, "\r[{}/{}] {}: {}/{} questions, {} right   ", r + 1, specs.size(),
                   spec.name, done, total, correct);
        if (done == total) fmt::print(stderr, "\n");
      } else if (size_t decile = done * 10 / total; decile != last_decile || done == total) {
        last_decile = decile;
        if (decile % 5 == 0 || done == total) {
          fmt::print(stderr, "[{}/{}] {}: {}/{} questions, {} right\n", r + 1, specs.size(),
                     spec.name, done, total, correct);
        }
      }
    };
    auto out = qe::RunEvaluation(questions.value(), spec, cache, progress);
    if (!out.ok()) {
      fmt::print(stderr, "querypilot-eval: {}: {}\n", spec.name, out.status().message());
      return 1;
    }
    summaries.push_back(qe::Summarise(out.value()));
    outputs.push_back(std::move(out).value());
  }

  fmt::print("\n");
  qe::PrintTable(std::cout, summaries);
  qe::PrintReflectionTable(std::cout, summaries);
  qe::PrintCalibration(std::cout, summaries);
  const qe::ReviewReport review_report = qe::BuildReviewReport(outputs);
  const bool review_on = review_report.modes.count("review on") > 0;
  if (review_on || reviewing) qe::PrintReviewReport(std::cout, review_report);
  if (auto st = review_replies.Flush(); !st.ok()) {
    fmt::print(stderr, "querypilot-eval: {}\n", st.message());
    return 1;
  }
  if (reviewing) {
    fmt::print("\nreview requests: {} recorded replies, {} served, {} without a reply",
               review_replies.entries(), review_replies.served(), review_replies.missing());
    if (!o.dump_missing.empty())
      fmt::print(", {} newly written to {}", review_replies.dumped(), o.dump_missing);
    fmt::print("\n");
  }

  if (!o.json_path.empty()) {
    if (!WriteRunsJson(o.json_path, o.data, outputs, summaries,
                       review_on || reviewing ? &review_report : nullptr))
      return 1;
    fmt::print("\nJSON: {}\n", o.json_path);
  }
  if (!o.chart_path.empty()) {
    std::ofstream f(o.chart_path);
    f << qe::ChartSvg(summaries);
    if (!f) {
      fmt::print(stderr, "querypilot-eval: cannot write {}\n", o.chart_path);
      return 1;
    }
    fmt::print("chart: {}\n", o.chart_path);
  }
  return 0;
}
