// Digest: sha256 of a text as 64 lowercase hex digits (OpenSSL), the one hash the host
// module keys things by: the machine fingerprint and the compile cache.
#pragma once

#include <string>
#include <string_view>

namespace atvoss::host {

std::string sha256_hex(std::string_view text);

}  // namespace atvoss::host
