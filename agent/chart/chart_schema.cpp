#include "agent/chart/chart_schema.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>

namespace querypilot {
namespace {

using nlohmann::json;

struct SchemaFailure {
  std::string path;  // in the document, as a JSON pointer ("" = the whole)
  std::string reason;
  size_t depth = 0;  // the document depth of `path`, to pick the deepest
};

// Why the validation stopped before it decided.
struct SchemaExhausted {
  std::string reason;
};

std::string Shown(const json& v) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string RefDecoded(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    auto hex = [](char c) -> int {
      if (c >= '0' && c <= '9') return c - '0';
      if (c >= 'a' && c <= 'f') return c - 'a' + 10;
      if (c >= 'A' && c <= 'F') return c - 'A' + 10;
      return -1;
    };
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out += static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2]));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

bool IsOfType(const json& doc, std::string_view type) {
  if (type == "object") return doc.is_object();
  if (type == "array") return doc.is_array();
  if (type == "string") return doc.is_string();
  if (type == "boolean") return doc.is_boolean();
  if (type == "null") return doc.is_null();
  if (type == "number") return doc.is_number();
  if (type == "integer") {
    if (doc.is_number_integer()) return true;
    if (!doc.is_number_float()) return false;
    const double d = doc.get<double>();
    return std::isfinite(d) && std::floor(d) == d;
  }
  return true;  // a type this validator does not know constrains nothing
}

std::string PointerKey(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

class SchemaValidator {
 public:
  SchemaValidator(const json& root, size_t max_steps, size_t max_depth)
      : root_(root), max_steps_(max_steps), max_depth_(max_depth) {}

  // Nothing when `doc` is valid under `schema`.
  std::optional<SchemaFailure> Check(const json& schema, const json& doc, const std::string& path,
                                     size_t doc_depth, size_t depth) {
    if (++steps_ > max_steps_) {
      throw SchemaExhausted{fmt::format("the check took more than {} steps", max_steps_)};
    }
    if (depth > max_depth_) {
      throw SchemaExhausted{fmt::format("the schema nests deeper than {} levels at {}", max_depth_,
                                        path.empty() ? "/" : path)};
    }
    auto fail = [&](std::string reason) {
      return SchemaFailure{path, std::move(reason), doc_depth};
    };
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return std::nullopt;
      return fail("nothing is allowed here");
    }
    if (!schema.is_object()) return std::nullopt;

    if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
      const json* target = Resolve(ref->get<std::string>());
      if (!target) return fail("the schema refers to " + ref->get<std::string>() + ", not in it");
      if (auto f = Check(*target, doc, path, doc_depth, depth + 1)) return f;
    }
    if (auto type = schema.find("type"); type != schema.end()) {
      bool ok = false;
      if (type->is_string()) {
        ok = IsOfType(doc, type->get<std::string>());
      } else if (type->is_array()) {
        for (const json& t : *type)
          ok = ok || (t.is_string() && IsOfType(doc, t.get<std::string>()));
      } else {
        ok = true;
      }
      if (!ok) return fail(fmt::format("{} is not of type {}", Shown(doc), Shown(*type)));
    }
    if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
      bool found = false;
      for (const json& v : *e) found = found || v == doc;
      if (!found) return fail(fmt::format("{} is not one of {}", Shown(doc), Shown(*e)));
    }
    if (auto c = schema.find("const"); c != schema.end() && *c != doc) {
      return fail(fmt::format("{} is not {}", Shown(doc), Shown(*c)));
    }
    if (doc.is_number()) {
      const double d = doc.get<double>();
      if (auto m = schema.find("minimum");
          m != schema.end() && m->is_number() && d < m->get<double>())
        return fail(fmt::format("{} is less than the minimum {}", Shown(doc), Shown(*m)));
      if (auto m = schema.find("maximum");
          m != schema.end() && m->is_number() && d > m->get<double>())
        return fail(fmt::format("{} is more than the maximum {}", Shown(doc), Shown(*m)));
    }
    if (doc.is_object()) {
      if (auto req = schema.find("required"); req != schema.end() && req->is_array()) {
        for (const json& k : *req) {
          if (k.is_string() && !doc.contains(k.get<std::string>()))
            return fail(fmt::format("the property '{}' is required", k.get<std::string>()));
        }
      }
      const auto props = schema.find("properties");
      const auto extra = schema.find("additionalProperties");
      for (const auto& [key, value] : doc.items()) {
        const std::string sub = path + "/" + PointerKey(key);
        if (props != schema.end() && props->is_object()) {
          if (auto p = props->find(key); p != props->end()) {
            if (auto f = Check(*p, value, sub, doc_depth + 1, depth + 1)) return f;
            continue;
          }
        }
        if (extra != schema.end()) {
          if (extra->is_boolean() && !extra->get<bool>())
            return fail(fmt::format("the property '{}' is not allowed here", key));
          if (extra->is_object()) {
            if (auto f = Check(*extra, value, sub, doc_depth + 1, depth + 1)) return f;
          }
        }
      }
    }
    if (doc.is_array()) {
      if (auto items = schema.find("items"); items != schema.end()) {
        for (size_t i = 0; i < doc.size(); ++i) {
          const json* item_schema = &*items;
          if (items->is_array()) {
            if (i >= items->size()) break;
            item_schema = &(*items)[i];
          }
          if (auto f = Check(*item_schema, doc[i], fmt::format("{}/{}", path, i), doc_depth + 1,
                             depth + 1))
            return f;
        }
      }
    }
    if (auto all = schema.find("allOf"); all != schema.end() && all->is_array()) {
      for (const json& s : *all) {
        if (auto f = Check(s, doc, path, doc_depth, depth + 1)) return f;
      }
    }
    if (auto any = schema.find("anyOf"); any != schema.end() && any->is_array()) {
      std::optional<SchemaFailure> deepest;
      bool passed = false;
      for (const json& s : *any) {
        auto f = Check(s, doc, path, doc_depth, depth + 1);
        if (!f) {
          passed = true;
          break;
        }
        if (!deepest || f->depth > deepest->depth) deepest = std::move(f);
      }
      if (!passed) return deepest ? deepest : fail("anyOf lists no form");
    }
    if (auto one = schema.find("oneOf"); one != schema.end() && one->is_array()) {
      std::optional<SchemaFailure> deepest;
      size_t passed = 0;
      for (const json& s : *one) {
        auto f = Check(s, doc, path, doc_depth, depth + 1);
        if (!f) {
          ++passed;
        } else if (!deepest || f->depth > deepest->depth) {
          deepest = std::move(f);
        }
      }
      if (passed > 1)
        return fail(fmt::format("{} matches {} forms where one is allowed", Shown(doc), passed));
      if (passed == 0) return deepest ? deepest : fail("oneOf lists no form");
    }
    return std::nullopt;
  }

 private:
  const json* Resolve(const std::string& ref) {
    if (ref.empty() || ref[0] != '#') return nullptr;
    try {
      const json::json_pointer pointer(RefDecoded(std::string_view(ref).substr(1)));
      if (!root_.contains(pointer)) return nullptr;
      return &root_.at(pointer);
    } catch (const json::exception&) {
      return nullptr;
    }
  }

  const json& root_;
  size_t max_steps_;
  size_t max_depth_;
  size_t steps_ = 0;
};

}  // namespace

Status ValidateAgainstSchema(const json& schema, const json& doc, size_t max_steps,
                             size_t max_depth) {
  SchemaValidator v(schema, max_steps, max_depth);
  try {
    std::optional<SchemaFailure> f = v.Check(schema, doc, "", 0, 0);
    if (!f) return Status::Ok();
    return Status::InvalidArgument(
        fmt::format("at {}: {}", f->path.empty() ? "/" : f->path, f->reason));
  } catch (const SchemaExhausted& e) {
    return Status::InvalidArgument("the specification could not be checked: " + e.reason);
  }
}

JsonFileCache::JsonFileCache(Reader read) : read_(std::move(read)) {}

std::shared_ptr<const json> JsonFileCache::Get(const std::string& path) {
  MutexLock lock(&mu_);
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    files_.erase(path);
    return nullptr;
  }
  const Stamp stamp{st.st_dev, st.st_ino, st.st_size,
                    static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec};
  ++uses_;
  if (auto it = files_.find(path); it != files_.end() && it->second.stamp == stamp) {
    it->second.used = uses_;
    return it->second.value;
  }
  // Stamped before the read: a file changed during it is read again at the
  // next call.
  std::optional<std::string> text = read_(path);
  if (!text) {
    files_.erase(path);
    return nullptr;
  }
  auto value = std::make_shared<const json>(json::parse(*text, nullptr, false));
  if (!files_.contains(path) && files_.size() >= kMaxFiles) {
    auto oldest = files_.begin();
    for (auto it = files_.begin(); it != files_.end(); ++it) {
      if (it->second.used < oldest->second.used) oldest = it;
    }
    files_.erase(oldest);
  }
  files_[path] = Entry{stamp, value, uses_};
  return value;
}

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  if (!in.good() && !in.eof()) return std::nullopt;
  return s.str();
}

}  // namespace querypilot
