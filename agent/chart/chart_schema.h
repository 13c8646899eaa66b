// ChartSchema: a small JSON Schema validator, enough for Vega-Lite's own
// schema (npm's vega-lite, build/vega-lite-schema.json), which a chart a
// model proposed must pass (agent/chart/chart.h).
//
// The keywords read: $ref (a JSON pointer into the schema, "#/definitions/..."),
// type, enum, const, properties, additionalProperties, required, items,
// anyOf, allOf, oneOf, minimum and maximum; any other keyword is ignored.
// Both the nesting of checks and their number are bounded, so neither a
// schema that refers to itself nor a spec built to be slow can hang it.
//
// JsonFileCache keeps a schema file parsed between calls: Vega-Lite's is
// 1.9 MB, and every model's chart is checked against it.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agent/base/status.h"
#include "agent/base/thread_annotations.h"

namespace querypilot {

// The most checks one validation makes, and the deepest nesting of them.
inline constexpr size_t kSchemaMaxSteps = 2000000;
inline constexpr size_t kSchemaMaxDepth = 200;

// Ok when `doc` is valid under `schema`; else InvalidArgument naming the
// path in `doc` that failed ("/encoding/x/type") and why. Where anyOf or
// oneOf fails, the reason is the deepest one among its branches. Past
// `max_steps` checks or `max_depth` nesting, InvalidArgument saying so.
Status ValidateAgainstSchema(const nlohmann::json& schema, const nlohmann::json& doc,
                             size_t max_steps = kSchemaMaxSteps,
                             size_t max_depth = kSchemaMaxDepth);

// Parsed JSON files, each read again only when it changed. Thread-safe: one
// cache serves every connection of the process.
class JsonFileCache {
 public:
  // A whole file's bytes, or nothing when it cannot be read.
  using Reader = std::function<std::optional<std::string>(const std::string& path)>;

  // The most files kept; past it the one used longest ago is dropped.
  static constexpr size_t kMaxFiles = 4;

  // `read` reads a file (ReadWholeFile; a test counts its calls).
  explicit JsonFileCache(Reader read);
  JsonFileCache(const JsonFileCache&) = delete;
  JsonFileCache& operator=(const JsonFileCache&) = delete;

  // The JSON in the file at `path`, shared and never changed. The file is
  // read and parsed at the first call, and again only when its size,
  // modification time (to the nanosecond), inode or device is not what it
  // was when last read (npm replaces a file it installs anew). nullptr when
  // the file cannot be read; a discarded value (is_discarded()) when it is
  // not JSON. The parse is made with the cache's lock held, so connections
  // asking for the same file at once read it once.
  std::shared_ptr<const nlohmann::json> Get(const std::string& path) EXCLUDES(mu_);

 private:
  // What stat() says of a file, enough to tell that it changed.
  struct Stamp {
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    int64_t modified_ns = 0;
    bool operator==(const Stamp&) const = default;
  };
  struct Entry {
    Stamp stamp;
    std::shared_ptr<const nlohmann::json> value;
    uint64_t used = 0;  // `uses_` when last returned
  };

  const Reader read_;
  Mutex mu_;
  std::map<std::string, Entry> files_ GUARDED_BY(mu_);
  uint64_t uses_ GUARDED_BY(mu_) = 0;
};

// The whole file at `path`, or nothing when it cannot be opened or read.
std::optional<std::string> ReadWholeFile(const std::string& path);

}  // namespace querypilot
