#include "eval/dataset.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "agent/base/text.h"

namespace querypilot::eval {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Collapses runs of white space so that a prediction file's copy of a
// question matches the dataset's even if spacing differs.
std::string QuestionKey(std::string_view q) {
  std::string out;
  bool space = false;
  for (char c : text::Trim(q)) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty()) out += ' ';
    space = false;
    out += c;
  }
  return out;
}

std::string FindDatabase(const fs::path& dir, const std::string& db_id) {
  for (const fs::path& p :
       {dir / (db_id + ".sqlite"), dir / db_id / (db_id + ".sqlite"),
        dir / "database" / db_id / (db_id + ".sqlite"), dir / (db_id + ".db")}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return "";
}

std::string StringField(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  return it->dump();
}

Status LoadOne(const fs::path& file, std::vector<Question>& out) {
  std::ifstream in(file);
  if (!in) return Status::InvalidArgument(fmt::format("cannot open {}", file.string()));
  const fs::path dir = file.parent_path();
  const std::string dataset = fs::absolute(dir).lexically_normal().filename().string();
  const bool spider_like = text::Lower(dataset).find("spider") != std::string::npos;
  std::map<std::string, std::string> db_paths;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (text::Trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return Status::InvalidArgument(fmt::format("{}:{}: not a JSON object", file.string(), n));
    }
    Question q;
    q.dataset = dataset;
    q.id = StringField(j, "id");
    if (q.id.empty()) q.id = fmt::format("{}-{}", dataset, n);
    q.db_id = StringField(j, "db_id");
    q.question = StringField(j, "question");
    q.gold_sql = StringField(j, "gold_sql");
    if (q.gold_sql.empty()) q.gold_sql = StringField(j, "SQL");    // BIRD's own files
    if (q.gold_sql.empty()) q.gold_sql = StringField(j, "query");  // Spider's own files
    q.evidence = StringField(j, "evidence");
    q.difficulty = StringField(j, "difficulty");
    q.scoring = spider_like ? "bag" : "set";
    if (q.db_id.empty() || q.question.empty() || q.gold_sql.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: needs db_id, question and gold_sql", file.string(), n));
    }
    auto [it, inserted] = db_paths.try_emplace(q.db_id);
    if (inserted) it->second = FindDatabase(dir, q.db_id);
    if (it->second.empty()) {
      return Status::InvalidArgument(fmt::format(
          "{}:{}: no database for db_id '{}' (looked for {}/{}.sqlite, {}/{}/{}.sqlite and "
          "{}/database/{}/{}.sqlite)",
          file.string(), n, q.db_id, dir.string(), q.db_id, dir.string(), q.db_id, q.db_id,
          dir.string(), q.db_id, q.db_id));
    }
    q.db_path = it->second;
    out.push_back(std::move(q));
  }
  return Status::Ok();
}

}  // namespace

std::string Question::AskText() const {
  if (evidence.empty()) return question;
  return fmt::format("{}\nHint: {}", question, evidence);
}

Result<std::vector<Question>> LoadQuestions(const std::string& paths) {
  std::vector<Question> all;
  size_t start = 0;
  while (start <= paths.size()) {
    size_t comma = paths.find(',', start);
    const std::string one =
        paths.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!one.empty()) {
      Result<std::vector<Question>> part = LoadQuestionsAt(one);
      if (!part.ok()) return part.status();
      for (Question& q : *part) all.push_back(std::move(q));
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (all.empty()) return Status::InvalidArgument(fmt::format("no questions at {}", paths));
  return all;
}

Result<std::vector<Question>> LoadQuestionsAt(const std::string& path) {
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_regular_file(path, ec)) {
    files.push_back(path);
  } else if (fs::is_directory(path, ec)) {
    if (fs::is_regular_file(fs::path(path) / "questions.jsonl", ec)) {
      files.push_back(fs::path(path) / "questions.jsonl");
    } else {
      for (const auto& entry : fs::directory_iterator(path, ec)) {
        fs::path f = entry.path() / "questions.jsonl";
        if (entry.is_directory() && fs::is_regular_file(f, ec)) files.push_back(f);
      }
      std::sort(files.begin(), files.end());
    }
  } else {
    return Status::InvalidArgument(fmt::format("no dataset at {}", path));
  }
  if (files.empty()) {
    return Status::InvalidArgument(fmt::format("no questions.jsonl in {} or in its folders", path));
  }
  std::vector<Question> out;
  for (const auto& f : files) {
    if (Status st = LoadOne(f, out); !st.ok()) return st;
  }
  return out;
}

const Prediction* PredictionFile::Find(const Question& q) const {
  auto it = by_question.find({q.db_id, QuestionKey(q.question)});
  return it == by_question.end() ? nullptr : &it->second;
}

uint32_t Crc32(std::string_view s) {
  uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

std::string DatabaseHalf(std::string_view db_id) {
  return Crc32(db_id) % 2 == 0 ? "A" : "B";
}

PredictionFile GoldAsPredictions(const std::vector<Question>& questions, const std::string& name) {
  PredictionFile file;
  file.name = name;
  for (const Question& q : questions) {
    file.by_question.try_emplace({q.db_id, QuestionKey(q.question)},
                                 Prediction{q.gold_sql, "", {}, {}, "", {}});
    ++file.lines;
  }
  return file;
}

Result<PredictionFile> LoadPredictions(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(fmt::format("cannot open {}", path));
  PredictionFile file;
  file.path = path;
  file.name = fs::path(path).stem().string();
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (text::Trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return Status::InvalidArgument(fmt::format("{}:{}: not a JSON object", path, n));
    }
    Prediction p;
    p.pred_sql = StringField(j, "pred_sql");
    p.repaired_sql = StringField(j, "repaired_sql");
    std::string db_id = StringField(j, "db_id");
    std::string question = StringField(j, "question");
    if (db_id.empty() || question.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}:{}: needs db_id, question and pred_sql", path, n));
    }
    file.by_question[{db_id, QuestionKey(question)}] = std::move(p);
    ++file.lines;
  }
  return file;
}

Result<std::vector<PredictionFile>> LoadRecording(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::InvalidArgument(fmt::format("cannot open {}", path));
  json all = json::parse(in, nullptr, false);
  if (all.is_discarded() || !all.is_array() || all.empty()) {
    return Status::InvalidArgument(fmt::format("{}: not a JSON array of recorded replies", path));
  }
  size_t count = SIZE_MAX;
  for (size_t i = 0; i < all.size(); ++i) {
    const json& e = all[i];
    if (!e.is_object() || StringField(e, "db_id").empty() || StringField(e, "question").empty() ||
        !e.contains("replies") || !e["replies"].is_array() || e["replies"].empty()) {
      return Status::InvalidArgument(fmt::format(
          "{}: entry {} needs db_id, question and a non-empty array of replies", path, i + 1));
    }
    for (const json& r : e["replies"]) {
      if (!r.is_string()) {
        return Status::InvalidArgument(
            fmt::format("{}: entry {} has a reply that is not text", path, i + 1));
      }
    }
    count = std::min(count, e["replies"].size());
  }
  std::vector<PredictionFile> files(count);
  for (size_t k = 0; k < count; ++k) {
    PredictionFile& file = files[k];
    file.path = path;
    file.name = fmt::format("{} reply {}", fs::path(path).stem().string(), k + 1);
    for (const json& e : all) {
      Prediction p;
      const std::vector<std::string> replies = e["replies"].get<std::vector<std::string>>();
      for (size_t d = 0; d < replies.size(); ++d)
        p.replies.push_back(replies[(k + d) % replies.size()]);
      p.recorded_request = StringField(e, "request");
      file.by_question[{StringField(e, "db_id"), QuestionKey(StringField(e, "question"))}] =
          std::move(p);
      ++file.lines;
    }
  }
  return files;
}

Result<std::vector<std::string>> ListPredictionFiles(const std::string& path) {
  std::error_code ec;
  std::vector<std::string> out;
  if (fs::is_regular_file(path, ec)) {
    out.push_back(path);
  } else if (fs::is_directory(path, ec)) {
    for (const auto& entry : fs::directory_iterator(path, ec)) {
      if (entry.is_regular_file() && entry.path().extension() == ".jsonl") {
        out.push_back(entry.path().string());
      }
    }
    std::sort(out.begin(), out.end());
  }
  if (out.empty()) return Status::InvalidArgument(fmt::format("no prediction files at {}", path));
  return out;
}

}  // namespace querypilot::eval
