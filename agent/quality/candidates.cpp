#include "agent/quality/candidates.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>
#include <utility>

#include "agent/sql/interrupt.h"
#include "agent/sql/sqltokens.h"
#include "agent/sql/verified.h"

namespace querypilot {
namespace {

using CandidateClock = std::chrono::steady_clock;

double CandidateMsSince(CandidateClock::time_point t) {
  return std::chrono::duration<double, std::milli>(CandidateClock::now() - t).count();
}

void Snapshot(Candidate& c, const LiveQuery& q) {
  c.ran = true;
  c.columns = q.column_names();
  c.rows = q.buffered_rows();
  c.complete = q.complete_after_probe();
}

}  // namespace

std::string Candidate::WhyNot() const {
  if (lost == Lost::kDidNotRun) return LostText(lost, failure);
  if (lost == Lost::kExplainedAway) {
    const ReflectionIssue* hollow = HollowNote(issues);
    return LostText(lost, hollow ? hollow->kind() : std::string_view());
  }
  return LostText(lost);
}

const ReflectionIssue* HollowNote(const std::vector<ReflectionIssue>& issues) {
  for (const ReflectionIssue& i : issues) {
    if (i.tier != Tier::kCritical && i.finding && RowOf(*i.finding).hollow) return &i;
  }
  return nullptr;
}

size_t CountCritical(const std::vector<ReflectionIssue>& issues) {
  size_t n = 0;
  for (const ReflectionIssue& i : issues) n += i.critical();
  return n;
}

CandidatesResult RunCandidates(const std::string& question, const FirstReading& first,
                               std::vector<OtherReading> others, const CandidateRunner& runner) {
  const CandidateClock::time_point started = CandidateClock::now();
  CandidatesResult out;
  std::vector<Candidate>& candidates = out.candidates;
  std::vector<std::unique_ptr<LiveQuery>> live;  // [0]: the first reading's stays with the caller
  Candidate head;
  head.sql = first.sql;
  if (first.query) {
    Snapshot(head, *first.query);
    head.issues = first.issues;
  } else {
    head.failure = first.failure;
  }
  candidates.push_back(std::move(head));
  live.emplace_back();

  // The readings beside end by themselves (their share), or at the
  // deadline, or as the host asks the ask to stop (looked at every few
  // milliseconds): then every one still running is interrupted at once.
  const CandidateClock::time_point deadline =
      ReadingsDeadline(runner.launched, started, runner.first_ms, runner.floor_ms);
  const int allowed_ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - runner.launched).count());
  InterruptProbe host_interrupt(runner.db);
  bool interrupted = false;
  for (OtherReading& r : others) {
    if (!r.beside) continue;
    while (!r.beside->WaitUntil(
        std::min(deadline, CandidateClock::now() + std::chrono::milliseconds(20)))) {
      interrupted = host_interrupt.Interrupted();
      if (interrupted || CandidateClock::now() >= deadline) break;
    }
    if (interrupted || CandidateClock::now() >= deadline) break;
  }
  for (OtherReading& r : others) {
    if (r.beside) r.beside->Interrupt();
  }
  out.wait_ms = CandidateMsSince(started);

  for (OtherReading& r : others) {
    Candidate c;
    c.sql = r.sql;
    live.emplace_back();
    if (!r.checked.ok()) {
      c.failure = r.checked.message();
    } else if (r.same_as && *r.same_as < candidates.size()) {
      // The same program as an earlier reading: its answer, not run again.
      const Candidate& earlier = candidates[*r.same_as];
      c.same_as = r.same_as;
      c.ran = earlier.ran;
      c.failure = earlier.failure;
      c.columns = r.columns.size() == earlier.columns.size() ? r.columns : earlier.columns;
      c.rows = earlier.rows;
      c.complete = earlier.complete;
      c.issues = earlier.issues;
    } else if (r.beside) {
      c.beside = true;
      r.beside->Stop();  // ended or interrupted above: waits for its thread
      auto& query = r.beside->result();
      if (query.ok()) {
        Snapshot(c, **query);
        if (runner.check) c.issues = runner.check(c.sql, **query, r.beside->ms());
        live.back() = std::move(query).value();
      } else if (r.beside->stopped()) {
        c.failure =
            interrupted
                ? std::string("stopped: the ask was interrupted")
                : fmt::format(
                      "past its time beside the first reading ({} ms from its start: {:.0f}% "
                      "of the first reading's {:.0f} ms past its end, at least {} ms): dropped",
                      allowed_ms, kReadingsShareOfFirst * 100, runner.first_ms, runner.floor_ms);
      } else if (query.status().kind() == ErrorKind::kTimeout) {
        c.failure = fmt::format("past its share of the time budget ({} ms): dropped",
                                runner.beside_share_ms);
      } else {
        c.failure = query.status().message();
      }
    } else if (runner.limits.stop == StopMethod::kBetweenSteps) {
      // On the host's connection nothing could stop a step that never ends
      // without ending the ask.
      c.failure = fmt::format(
          "not run: it cannot run beside your connection ({}), and on your connection a "
          "single step past its share could not be stopped without ending the ask "
          "(agent_config('progress_handler', 1) allows QueryPilot's progress handler)",
          NotBesideText(r.not_beside));
    } else {
      const CandidateClock::time_point start = CandidateClock::now();
      auto query = RunVerified(runner.sql, c.sql, runner.limits);
      const double ms = CandidateMsSince(start);
      if (!query.ok()) {
        c.failure = query.status().kind() == ErrorKind::kTimeout
                        ? fmt::format("past its share of the time budget ({} ms): dropped",
                                      runner.limits.timeout_ms)
                        : query.status().message();
      } else {
        Snapshot(c, **query);
        if (runner.check) c.issues = runner.check(c.sql, **query, ms);
        live.back() = std::move(query).value();
      }
    }
    candidates.push_back(std::move(c));
  }

  std::vector<CandidateOutcome> outcomes;
  for (const Candidate& c : candidates) {
    CandidateOutcome o;
    o.ran = c.ran;
    o.critical = CountCritical(c.issues);
    o.hollow = HollowNote(c.issues) != nullptr;
    outcomes.push_back(o);
  }
  const size_t n = candidates.size();
  std::vector<Agreement> agree(n * n, Agreement::kUnknown);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < n; ++j) {
      if (i == j || !candidates[i].ran || !candidates[j].ran) continue;
      agree[i * n + j] =
          j < i ? agree[j * n + i] : CompareResults(candidates[i].View(), candidates[j].View());
    }
  }
  auto agrees = [&](size_t i, size_t j) { return agree[i * n + j]; };
  auto exactly = [&](size_t i, size_t j) {
    return agrees(i, j) == Agreement::kSame &&
           SameExactly(candidates[i].View(), candidates[j].View());
  };
  Pick pick = PickCandidate(outcomes, agrees, exactly);
  if (pick.contested && runner.ask_model) {
    // The answers left after the checks, one query each.
    std::vector<size_t> shown;
    for (size_t i = 0; i < n; ++i) {
      if (!candidates[i].ran ||
          (i != pick.index && pick.lost[i] != Lost::kNot && !LostOnAgreement(pick.lost[i]))) {
        continue;
      }
      bool repeat = false;
      for (size_t j : shown) repeat = repeat || agrees(i, j) == Agreement::kSame;
      if (!repeat) shown.push_back(i);
    }
    std::optional<size_t> chosen;
    if (shown.size() >= 2) {
      if (std::optional<std::string> reply =
              runner.ask_model(SelectionPrompt(question, candidates, shown))) {
        chosen = ParseSelection(*reply, shown);
      }
    }
    if (chosen && *chosen != pick.index) {
      for (size_t i : shown) pick.lost[i] = i == *chosen ? Lost::kNot : Lost::kNotSelected;
      pick.index = *chosen;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    candidates[i].returned = i == pick.index;
    if (i != pick.index && agrees(i, pick.index) != Agreement::kSame) {
      candidates[i].lost = pick.lost[i];
    }
  }
  if (pick.index != 0 && live[pick.index] && candidates[pick.index].beside) {
    // Its rows reach the asker from the host's connection: it is read again
    // there, under the first reading's limits. Should that fail, the first
    // reading is returned.
    Candidate& c = candidates[pick.index];
    live[pick.index].reset();
    auto again = RunVerified(runner.sql, c.sql, runner.reread);
    if (again.ok()) {
      live[pick.index] = std::move(again).value();
    } else {
      out.stopped_connection =
          again.status().kind() == ErrorKind::kTimeout && ConnectionInterrupted(runner.db);
      c.returned = false;
      c.lost = Lost::kDidNotRun;
      c.failure = "read again on your connection: " + again.status().message();
      candidates[0].returned = true;
      candidates[0].lost = Lost::kNot;
      pick.index = 0;
    }
  }
  // The statements beside end before their connections close (`others`).
  for (size_t i = 1; i < live.size(); ++i) {
    if (i != pick.index && candidates[i].beside) live[i].reset();
  }
  out.picked = pick.index;
  if (pick.index != 0) out.query = std::move(live[pick.index]);
  return out;
}

std::string SelectionPrompt(const std::string& question, const std::vector<Candidate>& candidates,
                            const std::vector<size_t>& shown) {
  std::string listed;
  for (size_t k = 0; k < shown.size(); ++k) {
    const Candidate& c = candidates[shown[k]];
    listed += fmt::format("Query {}:\n```sql\n{}\n```\nFirst rows ({}{} in all):\n", k + 1, c.sql,
                          c.complete ? "" : "more than ", c.rows.size());
    const std::vector<std::string> names = UniqueColumnNames(c.columns);
    size_t i = 0;
    for (const Row& r : c.rows) {
      if (i++ == 5) break;
      listed += RowToJson(names, r) + "\n";
    }
  }
  return fmt::format(
      "Question: {}\n\n{}\nWhich query answers the question? Reply with its number only.", question,
      listed);
}

std::optional<size_t> ParseSelection(const std::string& reply, const std::vector<size_t>& shown) {
  for (char ch : reply) {
    if (ch >= '1' && ch <= '9') {
      size_t k = static_cast<size_t>(ch - '1');
      return k < shown.size() ? std::optional<size_t>(shown[k]) : std::nullopt;
    }
  }
  return std::nullopt;
}

ConfidenceVerdict AnswerConfidence(const std::vector<Candidate>& candidates,
                                   const ReturnedAnswer& answer) {
  ConfidenceInputs in;
  in.answer_attempt = answer.answer_attempt;
  in.example_reused = answer.example_reused;
  if (answer.issues) {
    const std::vector<ReflectionIssue>& issues = *answer.issues;
    in.critical = CountCritical(issues);
    in.notes = ConfidenceNotes(issues);
    const ReflectionIssue* hollow = HollowNote(issues);
    in.hollow = hollow != nullptr;
    if (hollow) in.hollow_name = std::string(hollow->kind());
    for (const ReflectionIssue& i : issues) {
      if (i.critical()) {
        in.critical_names.emplace_back(i.kind());
      } else if (i.tier == Tier::kNote && i.finding && RowOf(*i.finding).counts_toward_confidence) {
        in.note_names.emplace_back(i.kind());
      }
    }
  }
  // Agreement: the first reply's candidates that ran, against the rows of
  // the answer returned.
  const bool from_candidates = answer.answer_attempt == 1 && !candidates.empty();
  in.ran = from_candidates ? 0 : 1;
  in.agreeing = in.ran;
  in.unknown = 0;
  for (const Candidate& c : candidates) {
    if (!c.ran) continue;
    ++in.ran;
    const Agreement a =
        from_candidates && c.returned ? Agreement::kSame : CompareResults(c.View(), answer.rows);
    in.agreeing += a == Agreement::kSame;
    in.unknown += a == Agreement::kUnknown;
    if (a == Agreement::kDifferent && in.other_answer.empty()) {
      in.other_answer = DescribeAnswer(c.View());
    }
  }
  in.samples = answer.samples;
  in.samples_agreeing = answer.samples_agreeing;
  in.voted = answer.voted;
  in.review = answer.review;
  in.review_reasoning = answer.review_reasoning;
  // Where the samples are the signal, the reason names what one of them gives.
  if (SamplesRule(in.samples, in.samples_agreeing)) in.other_answer = answer.sample_other_answer;
  return JudgeConfidence(in);
}

std::string AlternativesJson(const std::vector<Candidate>& candidates) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Candidate& c : candidates) {
    nlohmann::ordered_json j;
    j["sql"] = c.sql;
    j["ran"] = c.ran;
    if (!c.ran) j["error"] = c.failure;
    if (c.ran) {
      j["rows"] = c.complete ? nlohmann::ordered_json(c.rows.size()) : nlohmann::ordered_json();
      const std::vector<std::string> names = UniqueColumnNames(c.columns);
      nlohmann::ordered_json first = nlohmann::ordered_json::array();
      size_t i = 0;
      for (const Row& r : c.rows) {
        if (i++ == 3) break;
        first.push_back(nlohmann::ordered_json::parse(RowToJson(names, r), nullptr, false));
      }
      j["first_rows"] = std::move(first);
      nlohmann::ordered_json findings = nlohmann::ordered_json::array();
      for (const ReflectionIssue& issue : c.issues) {
        if (issue.tier != Tier::kInfo) findings.push_back(issue.kind());
      }
      j["findings"] = std::move(findings);
    }
    if (c.same_as) j["same_as"] = *c.same_as;
    j["returned"] = c.returned;
    j["agrees"] = c.ran && c.lost == Lost::kNot;
    if (c.lost != Lost::kNot) j["why_not"] = c.WhyNot();
    out.push_back(std::move(j));
  }
  return out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace querypilot
