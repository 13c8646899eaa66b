// AnswerCache: the verified SQL of questions already answered on a
// connection, so that asking again costs no model call.
//
// A hit is a question that normalises to the same text, asked while the
// schema is the one the SQL was verified on (PRAGMA schema_version). The SQL
// is run again, so the rows always reflect the data as it is now; only the
// model call is saved. Thread-safe; bounded (the oldest entry goes first).
#pragma once

#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "agent/base/thread_annotations.h"

namespace querypilot {

// The question as a cache key: ASCII lower case, runs of white space as one
// space, without leading and trailing space and trailing ?, ! and . marks.
// "How many  orders?" and "how many orders" are the same key.
std::string NormaliseQuestion(std::string_view question);

struct CachedAnswer {
  std::string sql;
  int64_t run_id = 0;  // the run that produced and verified the SQL
  int64_t schema_version = -1;
};

class AnswerCache {
 public:
  explicit AnswerCache(size_t capacity = 256) : capacity_(capacity) {}
  AnswerCache(const AnswerCache&) = delete;
  AnswerCache& operator=(const AnswerCache&) = delete;

  // The entry for `question` if it was verified on `schema_version`.
  std::optional<CachedAnswer> Find(std::string_view question, int64_t schema_version);
  // Records (or replaces) the answer to `question`.
  void Put(std::string_view question, CachedAnswer answer);
  // Drops the entry for `question` (its SQL no longer runs).
  void Forget(std::string_view question);
  // Drops the entries run `run_id` verified (agent_forget, a verdict of
  // 'bad').
  void ForgetRun(int64_t run_id);
  // Drops every entry: what the model is told changed (a description), so an
  // answer it gave before may not be the one it would give now.
  void Clear();
  size_t size() const;

 private:
  mutable Mutex mu_;
  size_t capacity_;
  std::list<std::string> order_ GUARDED_BY(mu_);  // keys, oldest first
  std::unordered_map<std::string, CachedAnswer> entries_ GUARDED_BY(mu_);
};

}  // namespace querypilot
