// The PostgreSQL side of the db tests: the URL of the throwaway cluster that ctest starts
// (tests/db/pg_cluster.sh, fixture "atvoss_pg"), and a fresh schema per test, so tests
// that share the one server never see each other's rows.
#pragma once

#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace atvoss::db::testing {

// The cluster's base URL; points libpq at its password file. Throws (failing the test,
// never skipping it) when the build did not configure a test cluster.
inline std::string pg_base_url() {
#if defined(ATVOSS_TEST_PG_URL) && defined(ATVOSS_TEST_PGPASSFILE)
  ::setenv("PGPASSFILE", ATVOSS_TEST_PGPASSFILE, 0);
  return ATVOSS_TEST_PG_URL;
#else
  throw std::runtime_error("this test binary was built without a PostgreSQL test cluster");
#endif
}

// Runs one statement on the cluster as the test role; throws with the server's message.
inline void pg_exec(const std::string& url, const std::string& sql) {
  PGconn* c = PQconnectdb(url.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    const std::string why = PQerrorMessage(c);
    PQfinish(c);
    throw std::runtime_error("cannot reach the test cluster at " + url +
                             " (run the test through ctest, which "
                             "starts it): " +
                             why);
  }
  PQsetNoticeProcessor(
      c, [](void*, const char*) {}, nullptr);
  PGresult* r = PQexec(c, sql.c_str());
  const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
  const std::string why = PQresultErrorMessage(r);
  PQclear(r);
  PQfinish(c);
  if (!ok) throw std::runtime_error(sql + ": " + why);
}

// A schema of its own on the test cluster, dropped with everything in it at the end.
class PgSchema {
 public:
  PgSchema() : base_(pg_base_url()) {
    static std::atomic<int> n{0};
    name_ = "t" + std::to_string(::getpid()) + "_" + std::to_string(n++);
    pg_exec(base_, "DROP SCHEMA IF EXISTS " + name_ + " CASCADE; CREATE SCHEMA " + name_);
  }
  ~PgSchema() {
    try {
      pg_exec(base_, "DROP SCHEMA IF EXISTS " + name_ + " CASCADE");
    } catch (...) {  // a test that stopped the server; the cluster goes at the fixture's end
    }
  }
  PgSchema(const PgSchema&) = delete;
  PgSchema& operator=(const PgSchema&) = delete;
  // The URL whose tables live in this schema (libpq's options parameter sets search_path).
  std::string url() const { return base_ + "&options=-csearch_path%3D" + name_; }
  const std::string& name() const { return name_; }
  const std::string& base() const { return base_; }

 private:
  std::string base_;
  std::string name_;
};

}  // namespace atvoss::db::testing
