#include "db/postgres_url.hpp"

#include <libpq-fe.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <optional>

#include "core/error.hpp"

namespace atvoss::db {
namespace {

constexpr std::string_view kExpectedForm = "expected postgresql://[user@]host[:port]/dbname[?param=value...]";

// The parameters a URL may set: where the server is, who logs in, and how the connection is
// secured. Anything else (server settings through options=, a password) stays out of URLs.
constexpr std::array<std::string_view, 14> kAcceptedParameters = {
    "host",    "hostaddr", "port",   "dbname",      "user",    "connect_timeout",      "application_name",
    "sslmode", "sslcert",  "sslkey", "sslrootcert", "service", "target_session_attrs", "options"};

constexpr std::array<std::string_view, 6> kSslModes = {"disable", "allow",     "prefer",
                                                       "require", "verify-ca", "verify-full"};

[[noreturn]] void refuse(std::string_view what, const std::string& why) {
  const std::string prefix = what.empty() ? "" : std::string(what) + ": ";
  throw_bad_input(prefix + "database URL " + why);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
}

// The percent-decoded text, or nullopt where a '%' is not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size()) return std::nullopt;
    const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  return out;
}

// What follows the scheme's "//".
std::string_view after_scheme(std::string_view url) { return url.substr(url.find("://") + 3); }

// The user info: what comes before the last '@' ahead of the first '/'. libpq ends it at the
// first '@'; a second '@' there is no valid host, so taking the last keeps a password
// written after it out of messages too.
std::optional<std::string_view> user_info(std::string_view rest) {
  const std::size_t at = rest.substr(0, rest.find('/')).rfind('@');
  if (at == std::string_view::npos) return std::nullopt;
  return rest.substr(0, at);
}

// Text fit to quote in a message: bytes outside printable ASCII as '?', cut to max bytes.
std::string printable(std::string_view s, std::size_t max) {
  std::string out;
  for (char c : s.substr(0, max)) out += std::isprint(static_cast<unsigned char>(c)) != 0 ? c : '?';
  return s.size() > max ? out + "..." : out;
}

// text with the value of every "password=" (up to the next '&', quote or blank) as "***":
// libpq quotes the token it stopped at, which may hold one where no parameter list began.
std::string without_password_values(std::string text) {
  static constexpr std::string_view kKey = "password=";
  for (std::size_t at = text.find(kKey); at != std::string::npos; at = text.find(kKey, at + 1)) {
    const std::size_t value = at + kKey.size();
    const std::size_t end = std::min(text.find_first_of("&\" \t\n", value), text.size());
    text.replace(value, end - value, "***");
  }
  return text;
}

// The one schema setting a URL may carry: "-c search_path=<name>[,<name>...]", with or
// without the space libpq's command-line syntax allows after -c.
bool is_search_path_option(std::string_view v) {
  if (v.starts_with("-c ")) {
    v.remove_prefix(3);
  } else if (v.starts_with("-c")) {
    v.remove_prefix(2);
  } else {
    return false;
  }
  if (!v.starts_with("search_path=")) return false;
  v.remove_prefix(12);
  return !v.empty() && std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == ',';
  });
}

// Each element of a comma-separated list passes ok (libpq takes lists of hosts and ports).
template <typename Ok>
bool each_element(std::string_view list, Ok ok) {
  if (list.empty()) return false;
  for (;;) {
    const std::size_t comma = list.find(',');
    if (!ok(list.substr(0, comma))) return false;
    if (comma == std::string_view::npos) return true;
    list.remove_prefix(comma + 1);
  }
}

bool all_of_chars(std::string_view s, const char* extra) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [extra](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || std::strchr(extra, c) != nullptr;
  });
}

// Where a server is: a host name, an IPv4 or IPv6 address (bracketed or not), or the
// absolute path of a Unix-socket directory. Nothing else: a value with blanks, quotes or '='
// would read to libpq as more settings than the one it names.
bool is_host(std::string_view h) {
  if (h.starts_with('/')) return all_of_chars(h, "/._-");
  if (h.starts_with('[') && h.ends_with(']')) h = h.substr(1, h.size() - 2);
  return h.size() <= 253 && all_of_chars(h, ".-:%");
}

bool is_number(std::string_view v) { return all_of_chars(v, "") && std::all_of(v.begin(), v.end(), ::isdigit); }

// A parameter's value where its form is known; "" when it is fine, else what is expected.
std::string_view value_problem(std::string_view key, std::string_view value) {
  if (key == "host" && !each_element(value, is_host)) {
    return "parameter 'host' must list host names, addresses or socket directories (an absolute path)";
  }
  if (key == "hostaddr" && !each_element(value, [](std::string_view a) {
        return !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
          return std::isxdigit(static_cast<unsigned char>(c)) != 0 || c == '.' || c == ':';
        });
      })) {
    return "parameter 'hostaddr' must list IP addresses";
  }
  if (key == "port" && !each_element(value, is_number)) return "parameter 'port' must list port numbers";
  if (key == "connect_timeout" && !is_number(value)) return "parameter 'connect_timeout' must be a number of seconds";
  if (key == "sslmode" && std::find(kSslModes.begin(), kSslModes.end(), value) == kSslModes.end()) {
    return "parameter 'sslmode' must be disable, allow, prefer, require, verify-ca or verify-full";
  }
  return {};
}

void check_parameter(std::string_view what, std::string_view pair) {
  const std::size_t eq = pair.find('=');
  const auto key = percent_decoded(pair.substr(0, eq));
  const auto value = percent_decoded(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1));
  if (!key || !value)
    refuse(what, "is malformed: a '%' not followed by two hex digits (" + std::string(kExpectedForm) + ")");
  if (*key == "password") {
    refuse(what,
           "carries a password; remove it from the URL and put it in PGPASSFILE (~/.pgpass), PGPASSWORD or a service "
           "file, so that it never appears on a command line or in a log");
  }
  if (std::find(kAcceptedParameters.begin(), kAcceptedParameters.end(), *key) == kAcceptedParameters.end()) {
    std::string list;
    for (std::string_view p : kAcceptedParameters) list += (list.empty() ? "" : ", ") + std::string(p);
    refuse(what, "is malformed: query parameter '" + printable(*key, 40) + "' is not accepted (accepted: " + list +
                     "; " + std::string(kExpectedForm) + ")");
  }
  if (const std::string_view problem = value_problem(*key, *value); !problem.empty()) {
    refuse(what, "is malformed: " + std::string(problem));
  }
  if (*key == "options" && !is_search_path_option(*value)) {
    refuse(what,
           "is malformed: parameter 'options' may only pick the schema, as -csearch_path=<schema> (written "
           "options=-csearch_path%3D<schema>); other server settings are not accepted");
  }
}

// libpq's own parse, last: it knows hosts, ports and IPv6 brackets. Its message may quote
// the URL, which by now carries no password and is short.
void check_with_libpq(std::string_view what, const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* opts = PQconninfoParse(url.c_str(), &err);
  if (opts != nullptr) {
    PQconninfoFree(opts);
    return;
  }
  std::string why = err != nullptr ? err : "out of memory";
  PQfreemem(err);
  while (!why.empty() && why.back() == '\n') why.pop_back();
  refuse(what,
         "is malformed: " + printable(without_password_values(why), 300) + " (" + std::string(kExpectedForm) + ")");
}

}  // namespace

void check_postgres_url(std::string_view url, std::string_view what) {
  if (url.size() > kMaxPostgresUrlBytes) {
    refuse(what, "is " + std::to_string(url.size()) + " bytes long; at most " + std::to_string(kMaxPostgresUrlBytes) +
                     " are accepted");
  }
  if (url.find('\0') != std::string_view::npos || url.find("%00") != std::string_view::npos) {
    refuse(what, "holds a NUL byte (raw or as %00), which would cut it short; remove it");
  }
  const std::string_view rest = after_scheme(url);
  if (const auto info = user_info(rest); info && info->find(':') != std::string_view::npos) {
    refuse(what,
           "carries a password; remove it from the URL and put it in PGPASSFILE (~/.pgpass), PGPASSWORD or a service "
           "file, so that it never appears on a command line or in a log");
  }
  if (const std::size_t q = rest.find('?'); q != std::string_view::npos) {
    std::string_view query = rest.substr(q + 1);
    while (!query.empty()) {
      const std::size_t amp = query.find('&');
      if (amp != 0) check_parameter(what, query.substr(0, amp));
      query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    }
  }
  check_with_libpq(what, std::string(url));
}

std::string display_database_name(std::string_view name) {
  if (!is_postgres_url(name)) return std::string(name);
  std::string out(name.substr(0, name.find("://") + 3));
  std::string_view rest = after_scheme(name);
  if (const auto info = user_info(rest)) {
    const std::size_t colon = info->find(':');
    out += std::string(info->substr(0, colon)) + (colon == std::string_view::npos ? "@" : ":***@");
    rest.remove_prefix(info->size() + 1);
  }
  out += rest;
  return printable(without_password_values(std::move(out)), 200);
}

}  // namespace atvoss::db
