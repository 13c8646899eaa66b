#include "agent/memory/answer_cache.h"

#include <algorithm>
#include <cctype>

namespace querypilot {

std::string NormaliseQuestion(std::string_view question) {
  std::string out;
  out.reserve(question.size());
  bool space = false;
  for (char c : question) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  while (!out.empty() &&
         (out.back() == '?' || out.back() == '!' || out.back() == '.' || out.back() == ' ')) {
    out.pop_back();
  }
  return out;
}

std::optional<CachedAnswer> AnswerCache::Find(std::string_view question, int64_t schema_version) {
  MutexLock lock(&mu_);
  auto it = entries_.find(NormaliseQuestion(question));
  if (it == entries_.end() || it->second.schema_version != schema_version) return std::nullopt;
  return it->second;
}

void AnswerCache::Put(std::string_view question, CachedAnswer answer) {
  std::string key = NormaliseQuestion(question);
  MutexLock lock(&mu_);
  if (entries_.count(key)) order_.remove(key);
  entries_[key] = std::move(answer);
  order_.push_back(key);
  while (entries_.size() > capacity_) {
    entries_.erase(order_.front());
    order_.pop_front();
  }
}

void AnswerCache::Forget(std::string_view question) {
  std::string key = NormaliseQuestion(question);
  MutexLock lock(&mu_);
  if (entries_.erase(key)) order_.remove(key);
}

void AnswerCache::ForgetRun(int64_t run_id) {
  MutexLock lock(&mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.run_id == run_id) {
      order_.remove(it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

void AnswerCache::Clear() {
  MutexLock lock(&mu_);
  entries_.clear();
  order_.clear();
}

size_t AnswerCache::size() const {
  MutexLock lock(&mu_);
  return entries_.size();
}

}  // namespace querypilot
