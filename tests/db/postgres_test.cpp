// What only a server store has: URLs and logins, a server that restarts under a writer, an
// existing database of another application, and moving a whole database from an SQLite file
// to PostgreSQL and back (atvoss-db migrate). The behaviour both stores share is tested on
// both in tuning_database_test.cpp, record_store_test.cpp and reliability_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "db/postgres_url.hpp"
#include "db/record_store.hpp"
#include "db/tuning_database.hpp"
#include "db_test_util.hpp"
#include "pg_test_util.hpp"

namespace atvoss::db {
namespace {

using namespace atvoss::db::testing;
using ::testing::HasSubstr;
using ::testing::Not;

Error open_error(const std::string& url) {
  try {
    TuningDatabase::open(url);
  } catch (const Error& e) {
    return e;
  }
  throw std::runtime_error("opening " + url + " did not fail");
}

TEST(PostgresTest, AMalformedUrlIsBadInputNamingTheExpectedForm) {
  const Error e = open_error("postgresql://host/db?no_such_parameter=1");
  EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  EXPECT_THAT(e.what(), HasSubstr("database URL is malformed"));
  EXPECT_THAT(e.what(), HasSubstr("postgresql://[user@]host"));
}

TEST(PostgresTest, AUrlCarryingAPasswordIsRefusedWithoutRepeatingIt) {
  PgSchema s;
  std::string url = s.url();
  url.replace(url.find("atvoss@"), 7, "atvoss:hunter2secret@");
  const Error e = open_error(url);
  EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  EXPECT_THAT(e.what(), HasSubstr("PGPASSFILE"));
  EXPECT_THAT(e.what(), Not(HasSubstr("hunter2secret")));
}

// libpq quotes the whole URL, or the token it stopped at, when it cannot parse one: each
// of these malformed URLs once came back with the password in the message.
TEST(PostgresTest, AMalformedUrlCarryingAPasswordNeverEchoesIt) {
  for (const std::string url :
       {"postgresql://atv:Sup3rSecretPw@[::1/atv", "postgresql://atv:Sup3rSecretPw@[]/atv",
        "postgresql://atv:Sup3rSecretPw%zz@127.0.0.1/atv", "postgresql://atv@127.0.0.1/atv?password=Sup3rSecretPw%00",
        "postgresql://atv@127.0.0.1/atv?port=1&password=Sup3rSecretPw",
        "postgresql://x@atv:Sup3rSecretPw@127.0.0.1/atv"}) {
    const Error e = open_error(url);
    EXPECT_EQ(e.kind(), ErrorKind::bad_input) << url;
    EXPECT_THAT(e.what(), Not(HasSubstr("Sup3rSecretPw"))) << url;
    EXPECT_THAT(e.what(), Not(HasSubstr("Sup3rSecret"))) << url;
  }
}

// A message that quotes a database's name goes through display_database_name.
TEST(PostgresTest, TheDisplayedNameHidesThePasswordAndIsShortAndPrintable) {
  EXPECT_EQ(display_database_name("postgresql://atv:Sup3rSecretPw@h:5/atv"), "postgresql://atv:***@h:5/atv");
  EXPECT_EQ(display_database_name("postgres://h/atv?port=5&password=Sup3rSecretPw&user=u"),
            "postgres://h/atv?port=5&password=***&user=u");
  EXPECT_EQ(display_database_name(std::string("postgresql://h/a\0b\n", 19)), "postgresql://h/a?b?");
  EXPECT_EQ(display_database_name("tune.db"), "tune.db");
  EXPECT_LE(display_database_name("postgresql://h/" + std::string(10 << 20, 'a')).size(), 203u);
}

TEST(PostgresTest, AUrlIsParsedStrictlyBeforeAnyConnection) {
  struct Case {
    std::string url, says;
  };
  const std::vector<Case> cases = {
      // A NUL would cut the URL short where libpq reads it: "atv", host dropped without a word.
      {std::string("postgresql://atvoss@/atv\0?host=evil", 35), "NUL byte"},
      {"postgresql://atvoss@/atv?host=%00evil", "NUL byte"},
      {"postgresql://h/atv?options=-cdefault_transaction_read_only%3Doff",
       "parameter 'options' may only pick the schema"},
      {"postgresql://h/atv?options=-csearch_path%3Da%20-cwork_mem%3D1", "parameter 'options' may only pick the schema"},
      {"postgresql://h/atv?sslmode=sometimes", "parameter 'sslmode' must be disable"},
      {"postgresql://h/atv?krbsrvname=x", "query parameter 'krbsrvname' is not accepted"},
      {"postgresql://h/atv?port=%zz", "not followed by two hex digits"},
      // host= and friends are examined, not passed through: a blank or a quote would read to
      // libpq as another setting.
      {"postgresql://h/atv?host=evil%20sslmode%3Ddisable", "parameter 'host' must list host names"},
      {"postgresql://h/atv?host=%27evil%27", "parameter 'host' must list host names"},
      {"postgresql://h/atv?host=tmp/socket", "parameter 'host' must list host names"},
      {"postgresql://h/atv?hostaddr=example.com", "parameter 'hostaddr' must list IP addresses"},
      {"postgresql://h/atv?port=5432x", "parameter 'port' must list port numbers"},
      {"postgresql://h/atv?connect_timeout=-1", "parameter 'connect_timeout' must be a number"},
  };
  for (const Case& c : cases) {
    const Error e = open_error(c.url);
    EXPECT_EQ(e.kind(), ErrorKind::bad_input) << c.url;
    EXPECT_THAT(e.what(), HasSubstr(c.says)) << c.url;
  }
  // A 10 MB URL: refused by its length, and the message does not repeat it.
  const Error huge = open_error("postgresql://h/" + std::string(10 << 20, 'a'));
  EXPECT_EQ(huge.kind(), ErrorKind::bad_input);
  EXPECT_THAT(huge.what(), HasSubstr("at most 4096 are accepted"));
  EXPECT_LT(std::string_view(huge.what()).size(), 300u);
  // What the documents show is accepted: host, port, sslmode and the schema through options.
  EXPECT_NO_THROW(
      check_postgres_url("postgresql://atvoss@db:5432/atvoss?sslmode=require&options=-csearch_path%3Dteam_a"));
  EXPECT_NO_THROW(check_postgres_url(
      "postgresql:///atvoss?host=/var/run/postgresql,db-1.example.com,10.0.0.2,[::1]&port=5432,5433,5434,5435"
      "&hostaddr=127.0.0.1&connect_timeout=5"));
  PgSchema s;
  EXPECT_EQ(TuningDatabase::open(s.url()).stats().records, 0);
}

// Seeded mutations (insert, delete, replace a byte; the bytes URLs are made of, NUL and '%')
// of URLs carrying a password: every mutant passes or is refused as bad input, never
// crashes, and while the password is still a password no message repeats it. The messages
// and the displayed name stay short and printable.
TEST(PostgresTest, MutatedUrlsAreRefusedOrAcceptedNeverEchoingThePassword) {
  const std::vector<std::string> seeds = {
      "postgresql://atv:Sup3rSecretPw@[::1]:5432/atv?host=/tmp&options=-csearch_path%3Dt1",
      "postgres://atv@127.0.0.1/atv?sslmode=require&password=Sup3rSecretPw&port=1",
      "postgresql://atv:Sup3rSecretPw@h1:1,h2:2/atv?connect_timeout=2"};
  const std::string alphabet = std::string("@:/?&=%[],.-0azZ", 16) + std::string(1, '\0') + "\xff";
  std::mt19937_64 rng(20261205);
  auto pick = [&](std::size_t n) { return static_cast<std::size_t>(rng() % std::max<std::size_t>(n, 1)); };
  int accepted = 0, refused = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string url = seeds[pick(seeds.size())];
    for (int k = 0, edits = 1 + static_cast<int>(pick(3)); k < edits; ++k) {
      const std::size_t at = pick(url.size());
      const char c = alphabet[pick(alphabet.size())];
      switch (pick(3)) {
        case 0:
          url.insert(url.begin() + static_cast<std::ptrdiff_t>(at), c);
          break;
        case 1:
          url.erase(at, 1);
          break;
        default:
          url[at] = c;
      }
    }
    if (!is_postgres_url(url)) continue;  // a path then, never parsed as a URL
    const std::size_t path = url.find('/', url.find("://") + 3);
    const bool still_a_password =
        url.find(":Sup3rSecretPw@") < path || url.find("password=Sup3rSecretPw") != std::string::npos;
    const std::string shown = display_database_name(url);
    EXPECT_LE(shown.size(), 203u) << url;
    if (still_a_password) EXPECT_THAT(shown, Not(HasSubstr("Sup3rSecretPw"))) << url;
    try {
      check_postgres_url(url);
      ++accepted;
    } catch (const Error& e) {
      ++refused;
      ASSERT_EQ(e.kind(), ErrorKind::bad_input) << url;
      const std::string_view what = e.what();
      EXPECT_LT(what.size(), 1000u) << url;
      EXPECT_TRUE(std::all_of(what.begin(), what.end(), [](char ch) {
        return std::isprint(static_cast<unsigned char>(ch)) != 0;
      })) << url;
      if (still_a_password) ASSERT_THAT(e.what(), Not(HasSubstr("Sup3rSecretPw"))) << url;
    }
  }
  EXPECT_GT(accepted, 100);
  EXPECT_GT(refused, 100);
}

TEST(PostgresTest, AWrongPasswordIsAClearIoErrorAndCreatesNothing) {
  PgSchema s;
  ::setenv("PGPASSWORD", "not-the-password", 1);  // libpq prefers it to the password file
  const Error e = open_error(s.url());
  ::unsetenv("PGPASSWORD");
  EXPECT_EQ(e.kind(), ErrorKind::io);
  EXPECT_THAT(e.what(), HasSubstr("password authentication failed"));
  EXPECT_THAT(e.what(), Not(HasSubstr("not-the-password")));
  // Nothing was created in the schema: it opens as a fresh database now.
  auto db = TuningDatabase::open(s.url());
  EXPECT_EQ(db.stats().records, 0);
}

TEST(PostgresTest, AnUnreachableServerIsAnIoErrorNamingTheUrl) {
  const std::string url = "postgresql://atvoss@/atvoss?host=/nonexistent-atvoss-socket-dir&connect_timeout=2";
  const Error e = open_error(url);
  EXPECT_EQ(e.kind(), ErrorKind::io);
  EXPECT_THAT(e.what(), HasSubstr("cannot connect to database " + url));
}

TEST(PostgresTest, ANewerSchemaIsRefusedAndLeftUntouched) {
  PgSchema s;
  {
    auto db = TuningDatabase::open(s.url());
    db.records().insert(record(matmul(8, 8, 8), TargetInfo::named("npu-a"), tiles(8, 8), ok_us(3)));
  }
  pg_exec(s.url(), "UPDATE atvoss_schema SET version = 99");
  const Error e = open_error(s.url());
  EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  EXPECT_THAT(e.what(), HasSubstr("schema version 99, newer than this build"));
  pg_exec(s.url(), "UPDATE atvoss_schema SET version = " + std::to_string(TuningDatabase::kSchemaVersion));
  EXPECT_EQ(TuningDatabase::open(s.url()).stats().records, 1);
}

TEST(PostgresTest, ASchemaHoldingAnotherApplicationsTablesIsRefusedAndNotWrittenTo) {
  PgSchema s;
  pg_exec(s.url(), "CREATE TABLE invoices(id BIGINT)");
  const Error e = open_error(s.url());
  EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  EXPECT_THAT(e.what(), HasSubstr("tables of another application"));
  EXPECT_THROW(pg_exec(s.url(), "SELECT 1 FROM records"), std::runtime_error);  // no atvoss table was made
}

// Tables of another role, with no grant to atvoss's role, are missing from
// information_schema.tables; the check reads pg_class, which lists every relation.
TEST(PostgresTest, TablesAtvossCannotReadStillMakeTheSchemaAnotherApplications) {
  PgSchema s;
  std::string admin = s.base();
  admin.replace(admin.find("atvoss@"), 7, "atvoss_admin@");  // the cluster's superuser (tests/db/pg_cluster.sh)
  pg_exec(admin,
          "DO $$BEGIN CREATE ROLE atvoss_payroll; EXCEPTION WHEN duplicate_object THEN NULL; END$$; "
          "CREATE TABLE " +
              s.name() + ".payroll(id BIGINT); ALTER TABLE " + s.name() +
              ".payroll OWNER TO atvoss_payroll; REVOKE ALL ON " + s.name() + ".payroll FROM PUBLIC");
  const Error e = open_error(s.url());
  EXPECT_EQ(e.kind(), ErrorKind::bad_input);
  EXPECT_THAT(e.what(), HasSubstr("tables of another application"));
  EXPECT_THROW(pg_exec(s.url(), "SELECT 1 FROM records"), std::runtime_error);  // no atvoss table was made
}

// A claim expired at the claimant's clock + 120 s: a claimant a day fast blocked every
// other process on its schedules for a day, and a row expiring far ahead blocked them for
// good (the far-future row was held before the fix). Now: the server's clock, capped.
TEST(PostgresTest, ClaimsLastByTheServersClockAndNeverPastTheCap) {
  PgSchema s;
  auto db = TuningDatabase::open(s.url());
  const Workload w = matmul(8, 8, 8);
  const TargetInfo t = TargetInfo::named("npu-a");
  const std::vector<std::string> keys = {"k1"};
  RecordStore& records = db.records();
  EXPECT_EQ(records.claim(w, t, keys, "a", 120000), std::vector<bool>{true});
  EXPECT_EQ(records.claim(w, t, keys, "b", 120000), std::vector<bool>{false});  // a's claim is live
  // Asked for a day: held for at most the cap, counted from the server's now().
  EXPECT_EQ(records.claim(w, t, keys, "a", 86400000), std::vector<bool>{true});
  EXPECT_NO_THROW(pg_exec(s.url(),
                          "DO $$BEGIN IF (SELECT max(expires_at) FROM claims) > "
                          "(extract(epoch from now()) * 1000)::bigint + " +
                              std::to_string(kMaxClaimTtlMs) + " THEN RAISE EXCEPTION 'past the cap'; END IF; END$$"));
  // A row expiring a day ahead (written by a claimant whose clock ran a day fast) has lapsed.
  pg_exec(s.url(), "UPDATE claims SET expires_at = expires_at + 86400000");
  EXPECT_EQ(records.claim(w, t, keys, "b", 120000), std::vector<bool>{true});
  EXPECT_EQ(records.claim(w, t, keys, "a", 120000), std::vector<bool>{false});  // and b's is live
}

TEST(PostgresTest, MustExistOnAnEmptyDatabaseIsNotFound) {
  PgSchema s;
  OpenOptions o;
  o.must_exist = true;
  try {
    TuningDatabase::open(s.url(), o);
    FAIL() << "opened";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::not_found);
  }
}

// A server of its own (the shared one serves the tests running beside this one).
class OwnCluster {
 public:
  OwnCluster() : dir_("/tmp/atvoss-pg-restart-" + std::to_string(::getpid())) {
    run("start " + dir_ + " 54330");
    ::setenv("PGPASSFILE", (dir_ + "/pgpass").c_str(), 1);
  }
  ~OwnCluster() { run("stop " + dir_); }
  OwnCluster(const OwnCluster&) = delete;
  OwnCluster& operator=(const OwnCluster&) = delete;
  void restart() { run("restart " + dir_); }
  std::string url() const { return "postgresql://atvoss@/atvoss?host=" + dir_ + "&port=54330"; }

 private:
  void run(const std::string& args) {
    const std::string cmd = std::string("bash ") + ATVOSS_PG_CLUSTER + " " + args + " >/dev/null";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("pg_cluster.sh " + args + " failed");
  }
  std::string dir_;
};

TEST(PostgresTest, AWriterKeepsWorkingAcrossAServerRestart) {
  OwnCluster cluster;
  auto db = TuningDatabase::open(cluster.url());
  const TargetInfo t = TargetInfo::named("npu-a");
  db.records().insert(record(matmul(8, 8, 8), t, tiles(8, 8), ok_us(3)));
  cluster.restart();
  // The connection died with the old server; the next write reconnects and lands whole.
  db.records().insert(std::vector<Record>{record(matmul(8, 8, 8), t, tiles(16, 8), ok_us(2)),
                                          record(matmul(8, 8, 8), t, tiles(32, 8), ok_us(1))});
  EXPECT_EQ(db.stats().records, 3);
  EXPECT_EQ(db.records().best(matmul(8, 8, 8).key(), t.key, 1).front().schedule, tiles(32, 8));
}

TEST(PostgresTest, ADroppedConnectionIsReopenedAndTheNextWriteLands) {
  PgSchema s;
  const std::string app = "atvoss-drop-" + std::to_string(::getpid());
  auto db = TuningDatabase::open(s.url() + "&application_name=" + app);
  const TargetInfo t = TargetInfo::named("npu-a");
  db.records().insert(record(matmul(8, 8, 8), t, tiles(8, 8), ok_us(3)));
  pg_exec(s.base(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '" + app + "'");
  db.records().insert(record(matmul(8, 8, 8), t, tiles(16, 8), ok_us(2)));
  EXPECT_EQ(db.records().history(matmul(8, 8, 8).key(), t.key).size(), 2u);
}

TEST(PostgresTest, MigrateFromSqliteAndBackIsLosslessAndKeepsIds) {
  TempDir dir;
  PgSchema s;
  const TargetInfo t = TargetInfo::named("npu-a");
  const TargetInfo u = TargetInfo::named("npu-b");
  std::vector<Record> batch;
  for (int i = 1; i <= 40; ++i) {
    batch.push_back(
        record(matmul(64, 64, i), i % 2 ? t : u, tiles(i, 16), ok_us(100.0 / i + 0.1, {100.0 / i, 100.0 / i + 0.2})));
  }
  batch.push_back(
      record(matmul(64, 64, 1), t, tiles(7, 7), Measurement::failed(Status::compile_error, "bad \xff byte")));
  std::int64_t job = 0;
  {
    auto src = TuningDatabase::open(dir.file("a.db"));
    src.records().insert(batch);
    ModelRecord m;
    m.kind = "xgboost";
    m.feature_version = 7;
    m.blob = {0, 1, 2, 255, 0, 42};
    m.metrics = Json{{"rmse", 0.25}};
    src.models().save(t, m);
    job = src.jobs().create("resnet", Json{{"budget", 100}});
    src.jobs().save_task(job, "conv1", Json{{"best_record", 3}});
    src.jobs().update(job, "running", 0.5);
  }
  {
    auto pg = TuningDatabase::open(s.url());
    const MergeReport r = pg.copy_from(dir.file("a.db"));
    EXPECT_EQ(r.added, 41);
    EXPECT_EQ(r.models, 1);
    EXPECT_EQ(r.jobs, 1);
    EXPECT_EQ(pg.integrity_check(), "ok");
    // Ids are kept, and new rows continue after them.
    const auto id = pg.records().insert(record(matmul(1, 1, 1), t, tiles(1, 1), ok_us(1)));
    EXPECT_EQ(id, 42);
    pg.records().insert(record(matmul(1, 1, 1), t, tiles(2, 2), ok_us(1)));
  }
  auto back = TuningDatabase::open(dir.file("b.db"));
  back.copy_from(s.url());
  auto src = TuningDatabase::open(dir.file("a.db"));
  EXPECT_EQ(back.stats().records, src.stats().records + 2);
  for (int i = 1; i <= 40; ++i) {
    const Workload w = matmul(64, 64, i);
    const TargetInfo& on = i % 2 ? t : u;
    const auto a = src.records().best(w.key(), on.key, 5);
    const auto b = back.records().best(w.key(), on.key, 5);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].id, b[k].id);
      EXPECT_EQ(a[k].schedule, b[k].schedule);
      EXPECT_EQ(a[k].measurement.time_us, b[k].measurement.time_us);  // bit for bit
      EXPECT_EQ(a[k].measurement.repeats, b[k].measurement.repeats);
      EXPECT_EQ(a[k].created_at_ms, b[k].created_at_ms);
    }
  }
  const auto failed = back.records().find(matmul(64, 64, 1).key(), t.key, tiles(7, 7).key());
  ASSERT_TRUE(failed.has_value());
  EXPECT_EQ(failed->measurement.status, Status::compile_error);
  const auto model = back.models().latest(t.key, "xgboost");
  ASSERT_TRUE(model.has_value());
  EXPECT_EQ(model->blob, (std::vector<std::uint8_t>{0, 1, 2, 255, 0, 42}));
  EXPECT_EQ(model->feature_version, 7);
  const auto j = back.jobs().named("resnet");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->id, job);
  EXPECT_EQ(j->state, "running");
  EXPECT_EQ(back.jobs().tasks(job).at("conv1"), (Json{{"best_record", 3}}));
}

TEST(PostgresTest, CopyRefusesANonEmptyDestination) {
  TempDir dir;
  PgSchema s;
  TuningDatabase::open(dir.file("a.db"))
      .records()
      .insert(record(matmul(8, 8, 8), TargetInfo::named("npu-a"), tiles(8, 8), ok_us(3)));
  auto pg = TuningDatabase::open(s.url());
  pg.records().insert(record(matmul(9, 9, 9), TargetInfo::named("npu-a"), tiles(8, 8), ok_us(3)));
  try {
    pg.copy_from(dir.file("a.db"));
    FAIL() << "copied into a non-empty database";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::bad_input);
    EXPECT_THAT(e.what(), HasSubstr("not empty"));
  }
  EXPECT_EQ(pg.stats().records, 1);
}

TEST(PostgresTest, MergeReadsAServerDatabaseLikeAFile) {
  TempDir dir;
  PgSchema s;
  const TargetInfo t = TargetInfo::named("npu-a");
  TuningDatabase::open(s.url()).records().insert(record(matmul(8, 8, 8), t, tiles(8, 8), ok_us(3)));
  auto file = TuningDatabase::open(dir.file("m.db"));
  EXPECT_EQ(file.merge_from(s.url()).added, 1);
  EXPECT_EQ(file.merge_from(s.url()).added, 0);
}

TEST(PostgresTest, UrlsAreRecognisedByTheirScheme) {
  EXPECT_TRUE(is_postgres_url("postgresql://h/db"));
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("tune.db"));
  EXPECT_FALSE(is_postgres_url("./postgresql:/x.db"));
}

}  // namespace
}  // namespace atvoss::db
