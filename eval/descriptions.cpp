#include "eval/descriptions.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace querypilot::eval {
namespace {

std::string Squeeze(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
      continue;
    }
    if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(field));
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(std::move(field));
        rows.push_back(std::move(row));
      }
      row.clear();
      field.clear();
      any = false;
    } else {
      field.push_back(c);
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(std::move(field));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<Description> LoadDescriptions(const std::string& db_path) {
  namespace fs = std::filesystem;
  std::vector<Description> out;
  const fs::path db(db_path);
  const fs::path dir = db.parent_path() / (db.stem().string() + "_description");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".csv") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream buf;
    buf << in.rdbuf();
    std::string text = buf.str();
    if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // a UTF-8 byte order mark
    std::vector<std::vector<std::string>> rows = ParseCsv(text);
    for (size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      if (row.size() < 3) continue;
      Description d;
      d.database = "main";
      d.table = f.stem().string();
      d.column = Squeeze(row[0]);
      d.text = Squeeze(row[2]);
      std::string values = row.size() > 4 ? Squeeze(row[4]) : "";
      if (!values.empty() && values.size() <= 200)
        d.text += d.text.empty() ? values : "; " + values;
      if (!d.column.empty() && !d.text.empty()) out.push_back(std::move(d));
    }
  }
  return out;
}

}  // namespace querypilot::eval
