// TuningDatabase::open_sqlite: opening an SQLite file (check_file_header, configure,
// check_identity, then the shared upgrade of db/internal/schema.hpp). The operations on an
// open database are in db/tuning_database.cpp.
#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "core/error.hpp"
#include "core/user_paths.hpp"
#include "db/internal/rows.hpp"
#include "db/internal/schema.hpp"
#include "db/internal/sqlite.hpp"
#include "db/tuning_database.hpp"

namespace atvoss::db {

namespace {

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
}

// Cheap checks on the 100-byte SQLite header before SQLite reads the file: a file that
// is not SQLite at all, or one cut short (fewer bytes than the page count its header
// vouches for), is refused with a clear message instead of failing later, mid-query.
// Skipped while a non-empty WAL exists: then the header may legitimately run ahead of a
// checkpoint that recovery will finish. Read through the connection's own file handle
// (SqliteConnection::read_file_prefix says why).
void check_file_header(const SqliteConnection& c, const std::string& path) {
  std::error_code ec;
  unsigned char h[100] = {};
  std::int64_t size = 0;
  const std::size_t got = c.read_file_prefix(h, size);
  if (size == 0) return;  // absent or empty: SQLite creates a fresh database
  const auto wal = std::filesystem::file_size(path + "-wal", ec);
  const bool wal_pending = !ec && wal > 0;
  // Read without SQLite's locks: a file another process is creating this moment may show
  // fewer bytes, or zeros, where its header is being written. SQLite's own first read,
  // under its locks, judges such a file (garbage is refused there too, as corrupt).
  if (std::all_of(h, h + got, [](unsigned char b) { return b == 0; })) return;
  if (got < sizeof h || std::memcmp(h, "SQLite format 3", 16) != 0) {
    throw Error(ErrorKind::corrupt, path +
                                        " is not an atvoss tuning database: it is not an SQLite "
                                        "file (damaged, truncated or a different kind of file)");
  }
  const std::uint32_t raw_page = (std::uint32_t{h[16]} << 8) | h[17];
  const std::uint64_t page_size = raw_page == 1 ? 65536 : raw_page;
  const std::uint32_t pages = be32(h + 28);
  const bool count_valid = be32(h + 24) == be32(h + 92) && pages > 0;
  if (!wal_pending && count_valid && static_cast<std::uint64_t>(size) < page_size * pages) {
    throw Error(ErrorKind::corrupt, path + " is truncated: its header records " + std::to_string(pages) + " pages of " +
                                        std::to_string(page_size) + " bytes but the file has " + std::to_string(size) +
                                        " bytes; restore it from a copy");
  }
}

void configure(Connection& c, const std::string& path, bool read_only, bool sync_every_commit) {
  c.exec("PRAGMA foreign_keys = ON");
  // 64 MiB page cache (default 2 MiB): the record indexes of a million-record file stay in
  // memory, which keeps batch inserts and best-k lookups off the file system.
  c.exec("PRAGMA cache_size = -65536");
  // Read pages through a 1 GiB memory map instead of a pread() and a copy each: a best-k
  // query of a large file touches pages no connection has cached yet. Writes still go
  // through the WAL (SQLite writes via the map only if built with SQLITE_MMAP_READWRITE),
  // so durability is unchanged.
  if (!rows::is_memory(path)) c.exec("PRAGMA mmap_size = 1073741824");
  if (!read_only && !rows::is_memory(path)) {
    // journal_mode needs a brief lock when a file is new; another opener may hold it.
    c.read([&] { c.exec("PRAGMA journal_mode = WAL"); });
    // OpenOptions::sync_every_commit documents the trade-off.
    c.exec(sync_every_commit ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
    // Checkpoint every ~16 MiB of WAL instead of 4 MiB: index pages that many batches touch
    // are copied into the file once per checkpoint, so fewer checkpoints mean less writing.
    c.exec("PRAGMA wal_autocheckpoint = 4000");
  }
}

// Refuses SQLite files that belong to another application, before anything is written.
// The application id, the version and the table count are read by one statement, so from one
// snapshot: another process's first open commits all three together, and read by three
// statements a commit between them made that process's fresh tables look like another
// application's (one of four processes opening a new file at once was refused).
void check_identity(Connection& c, const std::string& path) {
  std::int64_t app = 0, version = 0, objects = 0;
  c.read([&] {
    auto s = c.prepare(
        "SELECT (SELECT application_id FROM pragma_application_id()), (SELECT user_version FROM "
        "pragma_user_version()), (SELECT count(*) FROM sqlite_schema)");
    if (s->step()) {
      app = s->column_int64(0);
      version = s->column_int64(1);
      objects = s->column_int64(2);
    }
  });
  if (app != 0 && app != kApplicationId) {
    throw_bad_input(path + " is an SQLite database of another application (application_id " + std::to_string(app) +
                    "), not an atvoss tuning database");
  }
  if (app == 0 && version == 0 && objects > 0) {
    throw_bad_input(path + " is an SQLite database without atvoss tables; refusing to add them to it");
  }
}

}  // namespace

TuningDatabase TuningDatabase::open_sqlite(const std::string& path, const OpenOptions& options) {
  const bool memory = rows::is_memory(path);
  if (!memory && (options.must_exist || options.read_only) && !std::filesystem::exists(path)) {
    throw Error(ErrorKind::not_found, "database " + path + " does not exist");
  }
  if (!memory) require_output_file(path, "database");  // a directory, or no directory to create it in
  // A FIFO or a device where the database belongs would block or feed SQLite without end.
  if (!memory && std::filesystem::exists(path)) require_input_file(path, "database");
  int flags = SQLITE_OPEN_NOMUTEX;  // one connection per thread: SQLite's own mutex is not needed
  flags |= options.read_only ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  auto conn = std::make_unique<SqliteConnection>(path, flags, options.lock_wait_ms);
  if (!memory) check_file_header(*conn, path);
  TuningDatabase db(path, std::move(conn));
  Connection& c = *db.conn_;
  // Every refusal happens before configure(), whose journal_mode switch writes the header.
  check_identity(c, db.path_);  // the first read: a garbage file fails here, as corrupt
  const auto version = c.read([&] { return stored_schema_version(c); });
  refuse_newer(db.path_, version, kSchemaVersion);
  configure(c, db.path_, options.read_only, options.sync_every_commit);
  upgrade_schema(c, db.path_, options.read_only, kSchemaVersion);
  return db;
}

}  // namespace atvoss::db
