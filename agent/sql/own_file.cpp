#include "agent/sql/own_file.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "agent/base/sqlite.h"
#include "agent/base/thread_annotations.h"
#include "agent/sql/database_list.h"
#include "agent/sql/statement.h"

namespace querypilot {
namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// URI text with %HH escapes decoded, as SQLite decodes it: a '%' not followed
// by two hex digits stays as it is; %00 would cut the name short, so it is an
// error here.
Result<std::string> DecodeUriPart(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && HexDigit(s[i + 1]) >= 0 && HexDigit(s[i + 2]) >= 0) {
      const char c = static_cast<char>(HexDigit(s[i + 1]) * 16 + HexDigit(s[i + 2]));
      if (c == '\0') return Status::InvalidArgument("the URI holds %00");
      out.push_back(c);
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

// A file as the operating system knows it: its canonical name (symlinks,
// "." and ".." resolved) and, when it exists, its device and inode.
struct FileIdentity {
  std::string canonical;
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;

  bool Same(const FileIdentity& o) const {
    return canonical == o.canonical || (exists && o.exists && dev == o.dev && ino == o.ino);
  }
};

std::optional<std::string> RealPath(const std::string& path) {
  char* r = realpath(path.c_str(), nullptr);
  if (!r) return std::nullopt;
  std::string out(r);
  free(r);
  return out;
}

// The identity of `path` (absolute or relative to the working folder). None
// when it cannot be established: its folder does not exist, or it is a
// symlink that points nowhere (writing through it would create a file
// elsewhere, perhaps beside the user's database).
std::optional<FileIdentity> IdentityOf(const std::string& path) {
  FileIdentity id;
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    std::optional<std::string> real = RealPath(path);
    if (!real || stat(real->c_str(), &st) != 0) return std::nullopt;  // a dangling symlink
    id.canonical = *real;
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    return id;
  }
  const size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "."
                             : slash == 0               ? "/"
                                                        : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") return std::nullopt;
  std::optional<std::string> real_folder = RealPath(folder);
  if (!real_folder) return std::nullopt;
  id.canonical = (*real_folder == "/" ? "" : *real_folder) + "/" + base;
  return id;
}

constexpr const char* kCompanions[] = {"", "-journal", "-wal", "-shm"};

struct NamedIdentity {
  std::string label;  // "" for the file itself, else its companion's suffix
  FileIdentity id;
};

// The file and its journal, WAL and shared-memory files. None when the
// file's own identity cannot be established.
std::optional<std::vector<NamedIdentity>> FamilyOf(const std::string& path) {
  std::vector<NamedIdentity> out;
  for (const char* suffix : kCompanions) {
    std::optional<FileIdentity> id = IdentityOf(path + suffix);
    if (!id) {
      if (*suffix == '\0') return std::nullopt;
      continue;  // a companion that is a dangling symlink is not ours to judge
    }
    out.push_back({suffix, std::move(*id)});
  }
  return out;
}

struct HostDatabase {
  std::string name;
  std::string file;
};

// Every database of the connection that is a file, with SQLite's own full
// name for it (sqlite3_db_filename). None when the list cannot be read (a
// host authorizer that denies the pragma, for one).
std::optional<std::vector<HostDatabase>> HostDatabases(sqlite3* host) {
  std::optional<std::vector<DatabaseInfo>> list = ListDatabases(host);
  if (!list) return std::nullopt;
  std::vector<HostDatabase> out;
  for (const DatabaseInfo& d : *list) {
    const char* file = sqlite3_db_filename(host, d.name.c_str());
    if (file && *file) out.push_back({d.name, file});
  }
  return out;
}

// The registered host connections and the databases each last listed.
// Process-wide by what it is for: an own-file check on one connection
// compares with the files of every other connection in the process, which
// no session can see. Each entry is added and removed by the
// HostConnectionRegistration its session holds.
struct Registered {
  uint64_t token = 0;
  std::vector<HostDatabase> databases;
};
struct Registry {
  Mutex mu;
  uint64_t next_token GUARDED_BY(mu) = 1;
  std::map<sqlite3*, Registered> connections GUARDED_BY(mu);
};
// Process-wide because the own-file checks compare a file with every host
// connection of the process, whichever session holds it.
Registry& Connections() {
  static auto* registry =
      new Registry();  // never destroyed: sessions may end after static destructors
  return *registry;
}

// Records what `host` lists now, if it is registered; returns the databases
// every other registered connection listed last.
std::vector<HostDatabase> PublishAndListOthers(sqlite3* host,
                                               const std::vector<HostDatabase>& mine) {
  Registry& r = Connections();
  MutexLock lock(&r.mu);
  std::vector<HostDatabase> others;
  for (auto& [db, entry] : r.connections) {
    if (db == host) {
      entry.databases = mine;
    } else {
      others.insert(others.end(), entry.databases.begin(), entry.databases.end());
    }
  }
  return others;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) return path;
  return std::string(cwd) + "/" + path;
}

// The comparison both checks make, on a resolved file name.
Status CompareWithHost(sqlite3* host, const std::string& given, const std::string& path,
                       std::string_view setting) {
  std::optional<std::vector<NamedIdentity>> own = FamilyOf(Absolute(path));
  if (!own) {
    return Status::InvalidArgument(fmt::format(
        "{} \"{}\": cannot tell which file that is (its folder does not exist, or it is a link to "
        "nowhere), so it cannot be shown to be none of this connection's databases",
        setting, given));
  }
  std::optional<std::vector<HostDatabase>> databases = HostDatabases(host);
  if (!databases) {
    return Status::InvalidArgument(
        fmt::format("{} \"{}\": cannot list this connection's databases to compare it with them",
                    setting, given));
  }
  const size_t this_connection = databases->size();
  std::vector<HostDatabase> all = *databases;
  std::vector<HostDatabase> others = PublishAndListOthers(host, *databases);
  all.insert(all.end(), others.begin(), others.end());
  for (size_t i = 0; i < all.size(); ++i) {
    const HostDatabase& d = all[i];
    std::optional<std::vector<NamedIdentity>> theirs = FamilyOf(d.file);
    if (!theirs) continue;  // a database whose folder is gone has no file to collide with
    const std::string whose =
        fmt::format("the database \"{}\"{} ({})", d.name,
                    i < this_connection ? "" : " of another connection in this process", d.file);
    for (const NamedIdentity& a : *own) {
      for (const NamedIdentity& b : *theirs) {
        if (!a.id.Same(b.id)) continue;
        std::string what;
        if (a.label.empty() && b.label.empty()) {
          what = "it is " + whose;
        } else if (a.label.empty()) {
          what = fmt::format("it is the {} file of {}", b.label.substr(1), whose);
        } else {
          what = fmt::format("its {} file would be {} of {}", a.label.substr(1),
                             b.label.empty() ? "the file" : "the " + b.label.substr(1) + " file",
                             whose);
        }
        return Status::InvalidArgument(fmt::format(
            "{} must be a file of its own, never a database of this connection{}: \"{}\" {}",
            setting, i < this_connection ? "" : " or of another in this process", given, what));
      }
    }
  }
  return Status::Ok();
}

bool ComparableVfs(std::string_view vfs) {
  // The unix VFSes keep a database at its path on disk; others (memdb, a
  // host's own) may keep it anywhere, or nowhere.
  return vfs.empty() || vfs == "unix" || vfs == "unix-excl" || vfs == "unix-dotfile" ||
         vfs == "unix-none";
}

}  // namespace

Result<SqliteFilename> ParseSqliteFilename(std::string_view name) {
  SqliteFilename out;
  if (name == ":memory:") {
    out.memory = true;
    return out;
  }
  if (name.substr(0, 5) != "file:") {
    out.path = std::string(name);
    return out;
  }
  std::string_view rest = name.substr(5);
  if (rest.substr(0, 2) == "//") {
    // An authority: SQLite takes none but "" and "localhost".
    const size_t end = rest.find('/', 2);
    std::string_view authority =
        rest.substr(2, end == std::string_view::npos ? std::string_view::npos : end - 2);
    if (!authority.empty() && authority != "localhost") {
      return Status::InvalidArgument(fmt::format("invalid uri authority: {}", authority));
    }
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  }
  const size_t fragment = rest.find('#');
  if (fragment != std::string_view::npos) rest = rest.substr(0, fragment);
  const size_t query = rest.find('?');
  Result<std::string> path = DecodeUriPart(rest.substr(0, query));
  if (!path.ok()) return path.status();
  out.path = std::move(path).value();
  if (query != std::string_view::npos) {
    std::string_view params = rest.substr(query + 1);
    while (!params.empty()) {
      const size_t amp = params.find('&');
      std::string_view pair = params.substr(0, amp);
      params = amp == std::string_view::npos ? std::string_view() : params.substr(amp + 1);
      const size_t eq = pair.find('=');
      Result<std::string> key = DecodeUriPart(pair.substr(0, eq));
      Result<std::string> value =
          DecodeUriPart(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1));
      if (!key.ok()) return key.status();
      if (!value.ok()) return value.status();
      if (*key == "vfs") out.vfs = *value;
      if (*key == "mode") out.mode = *value;
    }
  }
  // SQLite opens "file::memory:" as it opens ":memory:".
  if (out.mode == "memory" || out.path == ":memory:") out.memory = true;
  return out;
}

int OwnFileOpenFlags() {
  return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX | SQLITE_OPEN_URI;
}

Status CheckOwnFile(sqlite3* host, std::string_view name, std::string_view setting) {
  const std::string given(name);
  Result<SqliteFilename> parsed = ParseSqliteFilename(name);
  if (!parsed.ok()) {
    return Status::InvalidArgument(fmt::format("{} \"{}\" is not a file name SQLite can open: {}",
                                               setting, given, parsed.status().message()));
  }
  if (parsed->memory || parsed->path.empty()) {
    return Status::InvalidArgument(fmt::format(
        "{} \"{}\" must name a file on disk, not a memory or temporary database", setting, given));
  }
  if (!ComparableVfs(parsed->vfs)) {
    return Status::InvalidArgument(
        fmt::format("{} \"{}\": the VFS \"{}\" may keep its files anywhere, so it cannot be shown "
                    "to be none of this "
                    "connection's databases; use a plain file name",
                    setting, given, parsed->vfs));
  }
  return CompareWithHost(host, given, parsed->path, setting);
}

HostConnectionRegistration::HostConnectionRegistration(sqlite3* db) : db_(db) {
  // Its main file, known without a statement; the rest once it lists them.
  std::vector<HostDatabase> main;
  const char* file = sqlite3_db_filename(db, "main");
  if (file && *file) main.push_back({"main", file});
  Registry& r = Connections();
  MutexLock lock(&r.mu);
  token_ = r.next_token++;
  r.connections[db] = {token_, std::move(main)};
}

HostConnectionRegistration::~HostConnectionRegistration() {
  Registry& r = Connections();
  MutexLock lock(&r.mu);
  auto it = r.connections.find(db_);
  if (it != r.connections.end() && it->second.token == token_) r.connections.erase(it);
}

void RecordConnectionDatabases(sqlite3* host) {
  if (std::optional<std::vector<HostDatabase>> databases = HostDatabases(host)) {
    PublishAndListOthers(host, *databases);
  }
}

Status CheckOwnConnection(sqlite3* host, sqlite3* own, std::string_view setting) {
  const char* file = sqlite3_db_filename(own, "main");
  if (!file || !*file) {
    return Status::InvalidArgument(
        fmt::format("{} must name a file on disk, not a memory or temporary database", setting));
  }
  return CompareWithHost(host, file, file, setting);
}

Result<std::string> OwnFolder(const std::string& given, bool create) {
  std::string dir = given;
  // "dir/" would name what a link "dir" points at.
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) return Status::InvalidArgument("no folder named");
  if (create) {
    // The folder and its missing parents, private to the user. A parent
    // that is there is the user's to have made as they like (a link
    // included); the folder itself is checked below.
    for (size_t slash = 0; slash != std::string::npos;) {
      slash = dir.find('/', slash + 1);
      const std::string part = dir.substr(0, slash);
      struct stat st {};
      if (::lstat(part.c_str(), &st) == 0) continue;
      if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
        return Status::InvalidArgument(
            fmt::format("the folder \"{}\" cannot be made: {}", part, std::strerror(errno)));
      }
    }
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    return Status::InvalidArgument(
        fmt::format("the folder \"{}\" cannot be read: {}", dir, std::strerror(errno)));
  }
  std::string problem;
  if (S_ISLNK(st.st_mode)) {
    problem = "is a symbolic link";
  } else if (!S_ISDIR(st.st_mode)) {
    problem = "is not a folder";
  } else if (st.st_uid != ::geteuid()) {
    problem = "belongs to another user";
  } else if ((st.st_mode & 077) != 0) {
    problem =
        fmt::format("is open to others (mode {:o}; QueryPilot makes it 700)", st.st_mode & 0777);
  }
  if (!problem.empty()) {
    return Status::InvalidArgument(
        fmt::format("the folder \"{}\" {}, so it is not one QueryPilot made: it keeps and removes "
                    "files only in a folder of its own; remove \"{}\" (QueryPilot makes it "
                    "anew) or set another folder",
                    dir, problem, dir));
  }
  std::optional<std::string> real = RealPath(dir);
  if (!real) {
    return Status::InvalidArgument(
        fmt::format("the folder \"{}\" cannot be resolved: {}", dir, std::strerror(errno)));
  }
  return *real;
}

std::string CacheFolder(std::string_view part) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return fmt::format("{}/querypilot/{}", xdg, part);
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return fmt::format("{}/.cache/querypilot/{}", home, part);
  return "";
}

Result<std::string> DatabaseFileKey(const std::string& file) {
  std::optional<std::string> canonical = RealPath(file);
  if (!canonical) {
    return Status::InvalidArgument(
        fmt::format("the database file \"{}\" cannot be resolved", file));
  }
  struct stat st {};
  if (::stat(canonical->c_str(), &st) != 0) {
    return Status::InvalidArgument(fmt::format("the database file \"{}\" cannot be read", file));
  }
  // FNV-1a over the identity: a file renamed, or replaced by another, is
  // another name.
  uint64_t hash = 1469598103934665603ULL;
  const std::string identity = fmt::format(
      "{}\n{}\n{}", *canonical, static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino));
  for (unsigned char c : identity) hash = (hash ^ c) * 1099511628211ULL;
  std::string base = canonical->substr(canonical->rfind('/') + 1);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_') c = '_';
  }
  return fmt::format("{}-{:016x}", base.substr(0, 64), hash);
}

std::optional<PlainFile> OwnPlainFile(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_nlink != 1 ||
      st.st_uid != ::geteuid()) {
    return std::nullopt;
  }
  return PlainFile{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)};
}

Result<std::string> ClearOwnFileName(const std::string& path) {
  std::vector<std::string> removed;
  for (const char* suffix : kCompanions) {
    const std::string name = path + suffix;
    struct stat st {};
    if (::lstat(name.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;
      return Status::InvalidArgument(
          fmt::format("\"{}\" cannot be read: {}", name, std::strerror(errno)));
    }
    if (OwnPlainFile(name)) continue;
    const std::string what = S_ISLNK(st.st_mode)                       ? "a symbolic link"
                             : S_ISREG(st.st_mode) && st.st_nlink != 1 ? "a file with other names"
                             : S_ISREG(st.st_mode)                     ? "another user's file"
                             : S_ISDIR(st.st_mode)                     ? "a folder"
                                                                       : "not a plain file";
    if (::unlink(name.c_str()) != 0) {
      return Status::InvalidArgument(
          fmt::format("\"{}\" is {} and cannot be removed: {}", name, what, std::strerror(errno)));
    }
    removed.push_back(fmt::format("\"{}\" was {}", name, what));
  }
  if (removed.empty()) return std::string();
  return fmt::format("{}: removed (the name only; what it named is untouched)",
                     fmt::join(removed, ", "));
}

bool RemoveOwnFile(const std::string& path) {
  bool ok = true;
  for (const char* suffix : kCompanions) {
    const std::string name = path + suffix;
    if (::unlink(name.c_str()) != 0 && errno != ENOENT && *suffix == '\0') ok = false;
  }
  return ok;
}

}  // namespace querypilot
