// Gold replay: every gold query of a dataset answers its own question,
// through the real extension, one attempt. Gold is right by construction, so
// every result check that sends one back is a false alarm. Reported per
// finding, per database and per half of the databases (DatabaseHalf), so a
// rule tuned on one half is measured on the other.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "eval/runner.h"

namespace querypilot::eval {

struct GoldSpec {
  std::string extension_path;
  std::string half;  // "A", "B" or "" for every database
  size_t sample =
      0;  // at most this many questions (a fixed sample by CRC-32 of their ids); 0 = all
  int timeout_ms = 30000;
};

struct GoldReport {
  size_t questions = 0;                      // replayed
  size_t gold_failed = 0;                    // the gold SQL itself failed to run (not counted)
  size_t ran = 0;                            // the first attempt ran
  size_t sent_back = 0;                      // ... and a result check sent it back
  std::map<std::string, size_t> by_finding;  // critical finding kind -> gold queries it sent back
  struct Database {
    size_t ran = 0, sent_back = 0;
    std::string half;
  };
  std::map<std::string, Database> by_database;
  struct Half {
    size_t ran = 0, sent_back = 0;
  };
  std::map<std::string, Half> by_half;
  struct Example {
    std::string id, db_id, finding, sql;
    std::string detail;  // what grounding found: 'literal' in table.column -> values
  };
  std::vector<Example> examples;  // every gold query sent back
};

// The questions of `spec.half`, sampled as `spec.sample` says.
std::vector<Question> SelectGold(const std::vector<Question>& questions, const GoldSpec& spec);

// Replays `questions`' gold SQL (max_attempts 1) and counts what the result
// checks sent back.
Result<GoldReport> EvaluateGold(const std::vector<Question>& questions, const GoldSpec& spec,
                                const Progress& progress);

void PrintGold(std::ostream& out, const GoldReport& report, size_t examples_shown);

}  // namespace querypilot::eval
