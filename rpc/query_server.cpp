// QueryServer: one coroutine per HTTP connection (keep-alive loop), request routing in
// respond(), token check in authorised(). run_query_server (query_database.cpp) wires a database to it.
#include "rpc/query_server.hpp"

#include <array>
#include <atomic>
#include <chrono>
#include <optional>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "core/error.hpp"
#include "rpc/auth.hpp"
#include "rpc/internal/admission_gate.hpp"
#include "rpc/internal/input_bounds.hpp"
#include "rpc/log.hpp"
#include "rpc/metrics.hpp"

namespace atvoss::rpc {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::size_t kMaxBodyBytes = 1 << 20;   // queries are small; larger gets 413
constexpr std::uint32_t kMaxHeaderBytes = 8192;  // request line and fields; larger gets 431
constexpr std::chrono::milliseconds kAcceptBackoff{100};

using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// JSON text for a response. Strings may hold a peer's bytes (a worker's name, the text of
// a parse error quoting the input) that are not UTF-8; dump() would throw on those, so
// they are replaced (U+FFFD) instead of failing the whole answer.
std::string dump_for_peer(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n"; }

Response make_response(unsigned version, bool keep_alive, http::status status, std::string body,
                       std::string_view content_type = "application/json") {
  Response res{status, version};
  res.set(http::field::server, "atvoss");
  res.set(http::field::content_type, beast::string_view(content_type.data(), content_type.size()));
  res.keep_alive(keep_alive);
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

Response make_response(const Request& req, http::status status, std::string body,
                       std::string_view content_type = "application/json") {
  return make_response(req.version(), req.keep_alive(), status, std::move(body), content_type);
}

Response json_error(const Request& req, http::status status, const std::string& message) {
  return make_response(req, status, dump_for_peer(Json{{"error", message}}));
}

// An error answer after which the connection closes (Connection: close).
Response closing_error(unsigned version, http::status status, const std::string& message) {
  return make_response(version, false, status, dump_for_peer(Json{{"error", message}}));
}

// The answer to a request Beast could not parse, or nullopt where no answer can reach
// the peer (it closed, or timed out). The connection is closed after it: the parser's
// position in the stream is unknown.
std::optional<Response> answer_parse_error(const boost::system::error_code& ec) {
  // Only the parser's own errors describe a bad request; timeouts and resets are not.
  if (ec.category() != http::make_error_code(http::error::end_of_stream).category() ||
      ec == http::error::end_of_stream || ec == http::error::partial_message) {
    return std::nullopt;
  }
  http::status status = http::status::bad_request;
  if (ec == http::error::body_limit) status = http::status::payload_too_large;
  if (ec == http::error::header_limit) status = http::status::request_header_fields_too_large;
  const std::string message =
      "bad HTTP request: " + ec.message() +
      (status == http::status::payload_too_large ? " (at most " + std::to_string(kMaxBodyBytes) + " bytes of body)"
       : status == http::status::request_header_fields_too_large
           ? " (at most " + std::to_string(kMaxHeaderBytes) + " bytes of header)"
           : "");
  return closing_error(11, status, message);
}

// True if text is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
      cp = c & 0x1fu;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      cp = c & 0x0fu;
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      cp = c & 0x07u;
    } else
      return false;
    if (i + n >= text.size()) return false;  // truncated sequence
    for (std::size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0u) != 0x80u) return false;
      cp = (cp << 6) | (cc & 0x3fu);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

// Splits "a=1&b=2" into decoded pairs.
std::vector<std::pair<std::string, std::string>> parse_query(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    const std::size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    const std::size_t eq = part.find('=');
    out.emplace_back(url_decode(part.substr(0, eq)),
                     eq == std::string_view::npos ? std::string() : url_decode(part.substr(eq + 1)));
    // Decoded values end up in JSON (and in error messages): refuse bytes that are not text.
    if (!valid_utf8(out.back().first) || !valid_utf8(out.back().second)) {
      throw_bad_input("query parameter '" + (valid_utf8(out.back().first) ? out.back().first : std::string("?")) +
                      "': not valid UTF-8 after percent-decoding");
    }
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return out;
}

}  // namespace

std::string url_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '+') {
      out.push_back(' ');
    } else if (c == '%') {
      auto hex = [&](char h) -> int {
        if (h >= '0' && h <= '9') return h - '0';
        if (h >= 'a' && h <= 'f') return h - 'a' + 10;
        if (h >= 'A' && h <= 'F') return h - 'A' + 10;
        return -1;
      };
      const int hi = i + 2 < text.size() ? hex(text[i + 1]) : -1;
      const int lo = i + 2 < text.size() ? hex(text[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        throw_bad_input("query string: bad percent escape at byte " + std::to_string(i));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else {
      out.push_back(c);
    }
  }
  return out;
}

struct QueryServer::Impl : std::enable_shared_from_this<QueryServer::Impl> {
  Impl(asio::io_context& io, std::optional<std::string> t, QueryHandlers h, QueryServerLimits l)
      : acceptor(io),
        token(std::move(t)),
        handlers(std::move(h)),
        limits(l),
        gate(AdmissionLimits{l.max_waiting, l.max_waiting_per_address}) {
    if (limits.max_served == 0) throw_bad_input("query server limits: max_served must be at least 1");
  }

  asio::awaitable<void> accept_loop();
  asio::awaitable<void> serve(std::shared_ptr<beast::tcp_stream> stream, std::string address);
  // Reads one request, the header within the waiting or idle deadline; nullopt when the
  // connection is to close (a refusal, if any, was sent). Checks the token after the header,
  // before a body is read, and moves the connection from the waiting places to the served.
  asio::awaitable<std::optional<Request>> read_request(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                                       std::uint64_t ticket, bool& served);
  bool authorised(const Request& req) const;
  Response respond(const Request& req);
  Response route(const Request& req);  // respond() without the HEAD rule
  Response best(const Request& req, Json query);

  tcp::acceptor acceptor;
  std::optional<std::string> token;
  QueryHandlers handlers;
  QueryServerLimits limits;
  AdmissionGate gate;  // connections before their first authorised header
  std::atomic<std::uint64_t> requests{0};
  std::atomic<std::size_t> served{0};                                     // connections past the token check
  asio::awaitable<void> refuse(beast::tcp_stream& stream, Response res);  // answer, then drain
  // A read that failed: the parser's answer where the peer can still get one.
  asio::awaitable<void> refuse_unreadable(beast::tcp_stream& stream, const boost::system::error_code& ec);
  asio::awaitable<void> drain(beast::tcp_stream& stream);
};

bool QueryServer::Impl::authorised(const Request& req) const {
  if (!token) return true;  // loopback-only was checked at accept
  const auto it = req.find(http::field::authorization);
  if (it == req.end()) return false;
  const std::string_view value(it->value().data(), it->value().size());
  constexpr std::string_view kBearer = "Bearer ";
  if (value.substr(0, kBearer.size()) != kBearer) return false;
  return tokens_equal(*token, value.substr(kBearer.size()));
}

Response QueryServer::Impl::best(const Request& req, Json query) {
  if (!handlers.best) return json_error(req, http::status::not_found, "this server has no tuning database");
  try {
    return make_response(req, http::status::ok, dump_for_peer(handlers.best(query)));
  } catch (const Error& e) {
    const auto status = e.kind() == ErrorKind::not_found   ? http::status::not_found
                        : e.kind() == ErrorKind::bad_input ? http::status::bad_request
                                                           : http::status::internal_server_error;
    return json_error(req, status, e.what());
  }
}

Response QueryServer::Impl::respond(const Request& req) {
  Response res = route(req);
  if (req.method() == http::verb::head) {
    // HEAD: the headers GET would send, Content-Length included, and no body.
    const std::size_t length = res.body().size();
    res.body().clear();
    res.content_length(length);
  }
  return res;
}

Response QueryServer::Impl::route(const Request& req) {
  ++requests;
  const std::string_view target(req.target().data(), req.target().size());
  const std::size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query = question == std::string_view::npos ? "" : target.substr(question + 1);
  // HEAD is answered as GET (respond() drops the body).
  const bool get = req.method() == http::verb::get || req.method() == http::verb::head;
  try {
    if (path == "/metrics" && get) {
      return make_response(req, http::status::ok, handlers.metrics(), "text/plain; version=0.0.4");
    }
    if (path == "/v1/stats" && get) {
      return make_response(req, http::status::ok, dump_for_peer(handlers.stats()));
    }
    if (path == "/v1/best" && get) {
      Json request = Json::object();
      for (const auto& [key, value] : parse_query(query)) {
        if (key == "target") request["target"] = value;
        if (key == "workload") request["workload"] = parse_json_bounded(value, "query parameter 'workload'");
      }
      if (!request.contains("target") || !request.contains("workload")) {
        return json_error(req, http::status::bad_request,
                          "/v1/best needs ?target=<name or key>&workload=<url-encoded JSON>");
      }
      return best(req, std::move(request));
    }
    if (path == "/v1/best" && req.method() == http::verb::post) {
      return best(req, parse_json_bounded(req.body(), "/v1/best request body"));
    }
    if (path == "/metrics" || path == "/v1/stats" || path == "/v1/best") {
      return json_error(req, http::status::method_not_allowed,
                        "read-only endpoint: use GET or HEAD (or POST for /v1/best)");
    }
    return json_error(req, http::status::not_found, "unknown path; try /v1/best, /v1/stats or /metrics");
  } catch (const Error& e) {
    return json_error(req, e.is_bad_input() ? http::status::bad_request : http::status::internal_server_error,
                      e.what());
  } catch (const std::exception& e) {
    // A bug or a handler's library error: the peer still gets a status line, not a reset.
    log_line("query", std::string("request failed: ") + e.what());
    return json_error(req, http::status::internal_server_error, "internal error");
  }
}

// (Answers are built outside the coroutines: g++ 12 cannot compile a braced JSON literal
// inside one.)
Response unauthorised_answer(const Request& req) {
  Response res = closing_error(req.version(), http::status::unauthorized, "missing or wrong bearer token");
  res.set(http::field::www_authenticate, "Bearer");
  return res;
}

Response busy_answer(const Request& req) {
  Response res =
      closing_error(req.version(), http::status::service_unavailable, "too many open connections; retry shortly");
  res.set(http::field::retry_after, "1");
  return res;
}

asio::awaitable<std::optional<Request>> QueryServer::Impl::read_request(beast::tcp_stream& stream,
                                                                        beast::flat_buffer& buffer,
                                                                        std::uint64_t ticket, bool& is_served) {
  boost::system::error_code ec;
  http::request_parser<http::string_body> parser;
  parser.header_limit(kMaxHeaderBytes);
  parser.body_limit(kMaxBodyBytes);
  stream.expires_after(is_served ? limits.idle_timeout : limits.header_timeout);
  co_await http::async_read_header(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_await refuse_unreadable(stream, ec);
    co_return std::nullopt;
  }
  if (!authorised(parser.get())) {
    ++requests;
    co_await refuse(stream, unauthorised_answer(parser.get()));
    co_return std::nullopt;
  }
  if (!is_served) {
    if (!gate.pass(ticket)) co_return std::nullopt;  // evicted while its header arrived
    if (++served > limits.max_served) {
      --served;
      co_await refuse(stream, busy_answer(parser.get()));
      co_return std::nullopt;
    }
    is_served = true;
  }
  stream.expires_after(limits.idle_timeout);
  co_await http::async_read(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
  if (ec) {
    co_await refuse_unreadable(stream, ec);
    co_return std::nullopt;
  }
  co_return parser.release();
}

asio::awaitable<void> QueryServer::Impl::serve(std::shared_ptr<beast::tcp_stream> stream, std::string address) {
  auto self = shared_from_this();
  // Eviction closes the socket on the connection's own strand; the read in progress ends.
  const std::uint64_t ticket = gate.admit(address, [weak = std::weak_ptr(stream)] {
    if (auto s = weak.lock()) {
      asio::post(s->get_executor(), [weak] {
        if (auto open = weak.lock()) open->close();
      });
    }
  });
  bool is_served = false;
  beast::flat_buffer buffer;
  boost::system::error_code ec;
  for (;;) {
    std::optional<Request> req = co_await read_request(*stream, buffer, ticket, is_served);
    if (!req) break;
    Response res = respond(*req);
    const bool keep_alive = res.keep_alive();
    co_await http::async_write(*stream, res, asio::redirect_error(asio::use_awaitable, ec));
    if (ec || !keep_alive) break;
  }
  if (is_served) {
    --served;
  } else {
    gate.leave(ticket);
  }
  stream->socket().shutdown(tcp::socket::shutdown_send, ec);
}

asio::awaitable<void> QueryServer::Impl::refuse_unreadable(beast::tcp_stream& stream,
                                                           const boost::system::error_code& ec) {
  if (std::optional<Response> refusal = answer_parse_error(ec)) co_await refuse(stream, std::move(*refusal));
}

asio::awaitable<void> QueryServer::Impl::refuse(beast::tcp_stream& stream, Response res) {
  boost::system::error_code ec;
  co_await http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
  if (!ec) co_await drain(stream);
}

asio::awaitable<void> QueryServer::Impl::drain(beast::tcp_stream& stream) {
  // After refusing a request the peer may still be sending its body; closing with unread
  // bytes makes the kernel send a reset, which can destroy our answer in the peer's
  // buffer. Half-close, then read and discard for a bounded time and amount.
  boost::system::error_code ec;
  stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  stream.expires_after(std::chrono::seconds(2));
  std::array<char, 16384> sink{};
  for (std::size_t total = 0; total < 4 * kMaxBodyBytes;) {
    const std::size_t n =
        co_await stream.async_read_some(asio::buffer(sink), asio::redirect_error(asio::use_awaitable, ec));
    if (ec) break;
    total += n;
  }
}

asio::awaitable<void> QueryServer::Impl::accept_loop() {
  auto self = shared_from_this();
  asio::steady_timer backoff(acceptor.get_executor());
  for (;;) {
    boost::system::error_code ec;
    // Each connection runs on a strand of its own: an eviction closes it from another thread.
    tcp::socket socket = co_await acceptor.async_accept(asio::make_strand(acceptor.get_executor()),
                                                        asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (!acceptor.is_open()) co_return;
      // E.g. EMFILE: the connection stays in the backlog and an immediate retry fails
      // again at once; wait instead of spinning a core.
      log_line("query", "accept failed (" + ec.message() + "); retrying shortly");
      backoff.expires_after(kAcceptBackoff);
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    const auto remote = socket.remote_endpoint(ec);
    if (ec) continue;
    if (!token && !is_loopback_address(remote.address().to_string())) {
      // Same rule as the farm: without a token only loopback peers are served.
      static const std::string kForbidden = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      socket.non_blocking(true, ec);  // never let one peer stall the accept loop
      socket.write_some(asio::buffer(kForbidden), ec);
      continue;
    }
    auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
    asio::co_spawn(stream->get_executor(), serve(stream, remote.address().to_string()),
                   [](std::exception_ptr e) { log_if_exception("query", e); });
  }
}

QueryServer::QueryServer(asio::io_context& io, const std::string& host, std::uint16_t port,
                         std::optional<std::string> token, QueryHandlers handlers, QueryServerLimits limits)
    : impl_(std::make_shared<Impl>(io, std::move(token), std::move(handlers), limits)) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(host, ec);
  if (ec) throw_bad_input("--http-host " + host + ": not an IP address");
  if (impl_->token) require_usable_token(*impl_->token, "query server token");
  if (!impl_->token && !address.is_loopback()) {
    throw_bad_input("--http-host " + host + ": a non-loopback address needs a token");
  }
  const tcp::endpoint endpoint(address, port);
  impl_->acceptor.open(endpoint.protocol());
  impl_->acceptor.set_option(tcp::acceptor::reuse_address(true));
  impl_->acceptor.bind(endpoint, ec);
  if (ec) throw Error(ErrorKind::io, "cannot bind HTTP " + host + ":" + std::to_string(port) + ": " + ec.message());
  impl_->acceptor.listen();
  asio::co_spawn(io, impl_->accept_loop(), [](std::exception_ptr e) { log_if_exception("query", e); });
}

QueryServer::~QueryServer() = default;

std::uint16_t QueryServer::port() const {
  boost::system::error_code ec;
  const auto endpoint = impl_->acceptor.local_endpoint(ec);
  return ec ? 0 : endpoint.port();
}

void QueryServer::stop() {
  asio::post(impl_->acceptor.get_executor(), [impl = impl_] {
    boost::system::error_code ignored;
    impl->acceptor.close(ignored);
  });
}

}  // namespace atvoss::rpc
