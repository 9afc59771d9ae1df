#include "costmodel/internal/model_envelope.hpp"

#include <cstring>

#include "core/error.hpp"
#include "costmodel/features.hpp"

namespace atvoss::costmodel {
namespace {

constexpr char kMagic[8] = {'A', 'T', 'V', 'O', 'S', 'S', 'C', 'M'};
constexpr std::size_t kPrefix = sizeof(kMagic) + 4 + 8;  // magic, header length, checksum

[[noreturn]] void corrupt(const std::string& why) { throw Error(ErrorKind::corrupt, "cost model bytes: " + why); }

std::uint64_t read_le(std::span<const std::uint8_t> b) {
  std::uint64_t v = 0;
  for (std::size_t i = b.size(); i-- > 0;) v = v << 8 | b[i];
  return v;
}

void append_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

Json read_header(std::span<const std::uint8_t> bytes, std::size_t& header_len) {
  if (bytes.size() < kPrefix || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    corrupt("not an atvoss cost model (missing ATVOSSCM magic)");
  }
  header_len = std::size_t(read_le(bytes.subspan(sizeof(kMagic), 4)));
  if (header_len > bytes.size() - kPrefix) corrupt("truncated header");
  const auto body = bytes.subspan(kPrefix);
  const std::string_view body_text(reinterpret_cast<const char*>(body.data()), body.size());
  if (read_le(bytes.subspan(sizeof(kMagic) + 4, 8)) != fnv1a64(body_text)) {
    corrupt("checksum mismatch (truncated or damaged)");
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + kPrefix), header_len);
  Json header = Json::parse(text, nullptr, false);
  if (header.is_discarded() || !header.is_object() || !header.contains("kind") || !header["kind"].is_string()) {
    corrupt("header is not a JSON object with a 'kind'");
  }
  return header;
}

}  // namespace

std::vector<std::uint8_t> wrap_model(const std::string& kind, Json header, std::span<const std::uint8_t> payload) {
  header["kind"] = kind;
  header["feature_version"] = kFeatureVersion;
  header["feature_count"] = feature_count();
  const std::string text = header.dump();
  std::string body = text;
  body.append(reinterpret_cast<const char*>(payload.data()), payload.size());
  std::vector<std::uint8_t> out(kMagic, kMagic + sizeof(kMagic));
  append_le(out, text.size(), 4);
  append_le(out, fnv1a64(body), 8);
  out.insert(out.end(), body.begin(), body.end());
  return out;
}

ModelEnvelope unwrap_model(std::span<const std::uint8_t> bytes, const std::string& kind) {
  std::size_t header_len = 0;
  ModelEnvelope env{read_header(bytes, header_len), {}};
  const std::string got = env.header["kind"].get<std::string>();
  if (got != kind) corrupt("model is of kind '" + got + "', expected '" + kind + "'");
  const Json& version = env.header.value("feature_version", Json());
  if (!version.is_number_integer() || version.get<int>() != kFeatureVersion) {
    corrupt("model was trained with feature version " + version.dump() + ", this build uses " +
            std::to_string(kFeatureVersion) + "; retrain it");
  }
  const Json& count = env.header.value("feature_count", Json());
  if (!count.is_number_unsigned() || count.get<std::size_t>() != feature_count()) {
    corrupt("feature count " + count.dump() + " does not match " + std::to_string(feature_count()));
  }
  env.payload.assign(bytes.begin() + static_cast<std::ptrdiff_t>(kPrefix + header_len), bytes.end());
  return env;
}

std::string envelope_kind(std::span<const std::uint8_t> bytes) {
  std::size_t header_len = 0;
  return read_header(bytes, header_len)["kind"].get<std::string>();
}

}  // namespace atvoss::costmodel
