// Helpers shared by the farm_*_test.cpp integration tests: start the real atvoss-farm and
// atvoss-worker programs as child processes on 127.0.0.1, wait for them with bounded
// loops, and always kill them (RAII) so a failing test leaves no process behind.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <utility>  // Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "core/error.hpp"
#include "core/json.hpp"
#include "rpc/channel.hpp"
#include "rpc/farm_client.hpp"
#include "rpc/frame.hpp"
#include "rpc/protocol.hpp"
#include "simulator/presets.hpp"
#include "simulator/simulator.hpp"

extern char** environ;

namespace atvoss::farm_test {

using namespace std::chrono_literals;

inline std::string bin(const std::string& name) { return std::string(ATVOSS_BIN_DIR) + "/" + name; }

// A child process, SIGKILLed and reaped on destruction if still running.
class Child {
 public:
  Child() = default;
  Child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {}) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string entry(*e);
      if (!env.count(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
    }
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> args, envp;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0].c_str(), nullptr, nullptr, args.data(), envp.data()) != 0) {
      throw std::runtime_error("cannot start " + argv[0]);
    }
  }
  Child(Child&& o) noexcept : pid_(std::exchange(o.pid_, -1)) {}
  Child& operator=(Child&& o) noexcept {
    if (this != &o) {
      kill_now();
      pid_ = std::exchange(o.pid_, -1);
    }
    return *this;
  }
  ~Child() { kill_now(); }

  void signal(int sig) const {
    if (pid_ > 0) ::kill(pid_, sig);
  }
  // Exit status (or 128 + signal) once it exits within timeout; nullopt if still running.
  std::optional<int> wait_for(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (pid_ > 0) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::this_thread::sleep_for(10ms);
    }
    return std::nullopt;
  }
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  bool running() const { return pid_ > 0; }

 private:
  pid_t pid_ = -1;
};

// A scratch directory removed at the end of the test.
class TempDir {
 public:
  TempDir() {
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path() /
            ("atvoss_farm_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct Farm {
  Child process;
  std::uint16_t port = 0;
  std::uint16_t http_port = 0;
};

// Starts atvoss-farm (port 0 unless given) and waits up to 10 s for its port file.
inline Farm start_farm(const TempDir& dir, std::vector<std::string> extra = {},
                       const std::map<std::string, std::string>& env = {}, std::uint16_t port = 0) {
  const std::string port_file = dir.file("farm.port." + std::to_string(std::rand()));
  std::vector<std::string> argv{bin("atvoss-farm"), "--port",  std::to_string(port),
                                "--port-file",      port_file, "--quiet"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  Farm farm{Child(argv, env)};
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(port_file);
    std::string text;
    if (in && std::getline(in, text) && !text.empty()) {
      const Json j = Json::parse(text);
      farm.port = j.at("port").get<std::uint16_t>();
      farm.http_port = j.at("http_port").get<std::uint16_t>();
      return farm;
    }
    if (farm.process.wait_for(0ms)) throw std::runtime_error("atvoss-farm exited at start-up");
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error("atvoss-farm did not report its port within 10 s");
}

inline Child start_worker(std::uint16_t port, int slots, std::vector<std::string> extra = {},
                          const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv{
      bin("atvoss-worker"),  "--farm", "127.0.0.1:" + std::to_string(port), "--target", "ascend910", "--slots",
      std::to_string(slots), "--quiet"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Child(argv, env);
}

// Asks the farm for its stats over the query role.
inline Json farm_stats(std::uint16_t port, const std::optional<std::string>& token = std::nullopt) {
  rpc::ChannelOptions o;
  o.role = rpc::Role::query;
  if (token) o.token = *token;  // not a copy of the optional: GCC 12 calls that maybe-uninitialized
  auto c = rpc::Channel::open(rpc::Endpoint{"127.0.0.1", port}, o);
  c->send(Json{{"type", "stats"}});
  for (int i = 0; i < 50; ++i) {
    if (auto m = c->receive(100ms); m && m->at("type") == "stats") return m->at("stats");
  }
  throw std::runtime_error("no stats from the farm");
}

// Waits (bounded) until pred(stats) holds, asking the farm again every 20 ms, and returns
// those stats; throws (failing the test there) on timeout. Tests act on a state of the farm
// this way instead of after a fixed sleep that a loaded machine may not honour.
template <typename Pred>
inline Json wait_for_stats(std::uint16_t port, Pred pred, const std::string& what,
                           std::chrono::milliseconds timeout = 15s,
                           const std::optional<std::string>& token = std::nullopt) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      Json stats = farm_stats(port, token);
      if (pred(stats)) return stats;
    } catch (const std::exception&) {
      // not up yet
    }
    std::this_thread::sleep_for(20ms);
  }
  throw std::runtime_error("farm never reached: " + what);
}

// Waits (bounded) until the farm lists n workers.
inline void wait_for_workers(std::uint16_t port, std::size_t n, std::chrono::milliseconds timeout = 15s,
                             std::optional<std::string> token = std::nullopt) {
  // A worker is listed from its login, with no targets until its register message arrives
  // (a host worker calibrates the machine in between): count only the registered ones.
  const auto registered = [n](const Json& s) {
    std::size_t k = 0;
    for (const Json& w : s.at("workers")) k += w.at("targets").empty() ? 0 : 1;
    return k >= n;
  };
  wait_for_stats(port, registered, std::to_string(n) + " workers registered", timeout, token);
}

// Tasks the worker named name holds now (0 when it is not listed).
inline int in_flight_of(const Json& stats, const std::string& name) {
  for (const Json& w : stats.at("workers")) {
    if (w.at("name") == name) return w.at("in_flight").get<int>();
  }
  return 0;
}

// A farm (atvoss-farm with default flags) and its worker processes, all registered.
// Members are destroyed in reverse order: the workers are killed before the farm.
struct Cluster {
  Farm farm;
  std::vector<Child> workers;
};

// Starts a farm in dir and n workers of `slots` slots each, named w0, w1, ... (worker_extra
// appended to every worker's flags), then waits until the farm lists all n.
inline Cluster start_cluster(const TempDir& dir, int n, int slots, const std::vector<std::string>& worker_extra = {}) {
  Cluster c{start_farm(dir), {}};
  for (int i = 0; i < n; ++i) {
    std::vector<std::string> extra = worker_extra;
    extra.insert(extra.end(), {"--name", "w" + std::to_string(i)});
    c.workers.push_back(start_worker(c.farm.port, slots, extra));
  }
  wait_for_workers(c.farm.port, static_cast<std::size_t>(n));
  return c;
}

// count distinct valid matmul schedules on ascend910, from a fixed seed.
inline std::vector<rpc::FarmRequest> requests(std::size_t count, std::uint64_t seed, int repeat = 1) {
  const Target target = simulator::preset("ascend910");
  const Workload workload =
      Workload::from_json(Json{{"op", "matmul"}, {"dims", {{"M", 1024}, {"N", 1024}, {"K", 1024}}}});
  const ScheduleSpace space = simulator::space_for(workload, target);
  std::mt19937_64 rng(seed);
  std::map<std::string, rpc::FarmRequest> unique;
  for (int tries = 0; unique.size() < count && tries < 100000; ++tries) {
    const auto point = space.random_valid_point(rng);
    if (!point) continue;
    const Schedule s = space.schedule_at(*point);
    unique.emplace(s.key(), rpc::FarmRequest{target.key(), workload.to_json(), s.to_json(), repeat, seed});
  }
  std::vector<rpc::FarmRequest> out;
  for (auto& [key, r] : unique) out.push_back(std::move(r));
  return out;
}

struct HttpReply {
  int status = 0;
  std::string body;
};

// One HTTP/1.1 request with Connection: close; reads until the server closes (bounded).
inline HttpReply http(std::uint16_t port, const std::string& method, const std::string& target,
                      const std::optional<std::string>& token, const std::string& body = "") {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
  std::string request = method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (token) request += "Authorization: Bearer " + *token + "\r\n";
  if (!body.empty())
    request += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  request += "\r\n" + body;
  asio::write(s, asio::buffer(request));
  std::string response;
  boost::system::error_code ec;
  std::array<char, 4096> buf{};
  for (int i = 0; i < 10000; ++i) {
    const std::size_t n = s.read_some(asio::buffer(buf), ec);
    if (ec) break;
    response.append(buf.data(), n);
  }
  HttpReply reply;
  if (response.size() > 12) reply.status = std::stoi(response.substr(9, 3));
  const std::size_t split = response.find("\r\n\r\n");
  if (split != std::string::npos) reply.body = response.substr(split + 4);
  return reply;
}

inline std::string url_encode(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.') {
      out.push_back(static_cast<char>(c));
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A scripted farm on a loopback socket: one worker connects, and the test says what the
// farm sends and reads what the worker answers, as only a faulty or hostile farm (or the
// client behind it) would. Every wait is bounded (30 s).
class ScriptedFarm {
 public:
  ScriptedFarm() : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}), socket_(io_) {
    acceptor_.non_blocking(true);
  }
  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
  void accept() {
    boost::system::error_code ec;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (acceptor_.accept(socket_, ec), ec == boost::asio::error::would_block) {
      if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("the worker did not connect");
      std::this_thread::sleep_for(10ms);
    }
    if (ec) throw std::runtime_error("accept: " + ec.message());
    socket_.non_blocking(true);
  }
  // Accepts the worker and logs it in without a token; returns its register message.
  Json login_worker() {
    accept();
    send(Json{{"type", "hello"}, {"version", rpc::kProtocolVersion}, {"nonce", std::string(64, 'a')}, {"auth", false}});
    if (receive("login").at("role") != "worker") throw std::runtime_error("not a worker's login");
    send(Json{{"type", "welcome"}, {"version", rpc::kProtocolVersion}, {"session", 1}, {"heartbeat_ms", 1000}});
    return receive("register");
  }
  // Hands the worker one task and returns the measurement it sends back.
  Measurement measure(int id, const std::string& target, const Json& workload, const Json& schedule) {
    const Json body =
        rpc::encode_body(Json{{"workload", workload}, {"schedule", schedule}, {"repeat", 1}, {"seed", 3}});
    send(Json{{"type", "tasks"}, {"tasks", Json::array({Json{{"id", id}, {"target", target}, {"request", body}}})}});
    const Json result = receive("results").at("results").at(0);
    if (result.at("id") != id) throw std::runtime_error("a result for another task");
    return Measurement::from_json(rpc::decode_body(result.at("measurement"), "measurement"));
  }
  void send(const Json& m) {
    socket_.non_blocking(false);
    boost::asio::write(socket_, boost::asio::buffer(rpc::encode_frame(m)));
    socket_.non_blocking(true);
  }
  // The next message of the given type (others, such as heartbeats, are skipped).
  Json receive(const std::string& type) {
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
      while (auto m = decoder_.next()) {
        if (m->at("type") == type) return *m;
      }
      std::array<char, 4096> buf{};
      boost::system::error_code ec;
      const std::size_t n = socket_.read_some(boost::asio::buffer(buf), ec);
      if (ec == boost::asio::error::would_block) {
        if (std::chrono::steady_clock::now() > deadline) throw std::runtime_error("no '" + type + "' in 30 s");
        std::this_thread::sleep_for(10ms);
        continue;
      }
      if (ec) throw std::runtime_error("the worker hung up: " + ec.message());
      decoder_.feed(buf.data(), n);
    }
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::ip::tcp::socket socket_;
  rpc::FrameDecoder decoder_;
};

// A loopback port nobody listens on now (for a server told its port on the command line).
inline std::uint16_t free_port() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// Polls (bounded, 10 s) until an HTTP query server on port answers /v1/stats.
inline HttpReply wait_for_http(std::uint16_t port, const std::string& token) {
  for (int i = 0; i < 200; ++i) {
    try {
      return http(port, "GET", "/v1/stats", token);
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  throw std::runtime_error("the query server did not answer within 10 s");
}

}  // namespace atvoss::farm_test
