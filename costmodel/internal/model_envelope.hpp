// Model envelope: the byte format of a saved cost model. Every kind stores
//   "ATVOSSCM" (8 bytes) | header length (4 bytes, LE) | FNV-1a 64 of the rest (8 bytes, LE)
//   | JSON header | payload
// where the header names the kind, the feature version and feature count the model was
// trained with, and kind-specific fields; the payload is kind-specific (XGBoost: its UBJ
// model bytes). Checking the header first means a model of another kind or feature
// layout is refused with a clear error instead of predicting garbage; the checksum
// catches damaged bytes before they reach XGBoost's parser, which trusts its input.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/json.hpp"

namespace atvoss::costmodel {

struct ModelEnvelope {
  Json header;  // always has "kind", "feature_version", "feature_count"
  std::vector<std::uint8_t> payload;
};

// Adds kind and the current feature version/count to header and serialises.
std::vector<std::uint8_t> wrap_model(const std::string& kind, Json header, std::span<const std::uint8_t> payload);

// corrupt error if the bytes are truncated, not an envelope, of another kind, or of
// another feature version or count.
ModelEnvelope unwrap_model(std::span<const std::uint8_t> bytes, const std::string& kind);

// Reads the kind without validating the rest; corrupt error if not an envelope.
std::string envelope_kind(std::span<const std::uint8_t> bytes);

}  // namespace atvoss::costmodel
