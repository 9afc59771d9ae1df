#include "engine/npy.hpp"

#include <cstdint>
#include <cstring>
#include <map>
#include <regex>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/user_paths.hpp"

namespace atvoss::engine {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicBytes = 6;
// A header longer than this is no array header: refused before anything is read from it.
constexpr std::size_t kMaxHeader = 1 << 16;

[[noreturn]] void refuse(const std::string& path, const std::string& why) {
  throw_bad_input("npy '" + path + "': " + why);
}

std::vector<std::int64_t> shape_of(const std::string& header, const std::string& path) {
  static const std::regex shape_re(R"('shape'\s*:\s*\(([^)]*)\))");
  std::smatch m;
  if (!std::regex_search(header, m, shape_re)) refuse(path, "header has no 'shape'");
  std::vector<std::int64_t> shape;
  static const std::regex dim_re(R"(\d+)");
  const std::string dims = m[1];
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), dim_re); it != std::sregex_iterator(); ++it) {
    if (it->str().size() > 12) refuse(path, "a dim of the shape is too large");
    shape.push_back(std::stoll(it->str()));
  }
  return shape;
}

template <typename T>
T load(const char* data, std::size_t i) {
  T v;
  std::memcpy(&v, data + i * sizeof(T), sizeof(T));
  return v;
}

float element_at(const char* data, std::size_t i, const std::string& dtype) {
  if (dtype == "float32") return load<float>(data, i);
  if (dtype == "int64") return float(load<std::int64_t>(data, i));
  if (dtype == "int32") return float(load<std::int32_t>(data, i));
  return data[i] != 0 ? 1.0f : 0.0f;
}

}  // namespace

NpyArray read_npy(const std::string& path) {
  require_input_file(path, "npy");
  const std::string bytes = read_input_file(path, "npy");
  if (bytes.size() < kMagicBytes + 4 || bytes.compare(0, kMagicBytes, kMagic) != 0) refuse(path, "not an NPY file");
  const int major = static_cast<unsigned char>(bytes[6]);
  std::size_t header_len = 0, at = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (std::size_t(static_cast<unsigned char>(bytes[9])) << 8);
    at = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) refuse(path, "truncated header");
    for (int i = 0; i < 4; ++i) header_len |= std::size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    at = 12;
  } else {
    refuse(path, "NPY version " + std::to_string(major) + " (1 to 3 read)");
  }
  if (header_len > kMaxHeader || at + header_len > bytes.size()) refuse(path, "truncated or oversized header");
  const std::string header = bytes.substr(at, header_len);
  // Integer and bool arrays (token ids, masks) are read into floats, as the engine holds them.
  static const std::map<std::string, std::pair<std::string, std::size_t>> kTypes = {
      {"'<f4'", {"float32", 4}}, {"'<i8'", {"int64", 8}}, {"'<i4'", {"int32", 4}}, {"'|b1'", {"bool", 1}}};
  NpyArray a;
  std::size_t item = 0;
  for (const auto& [descr, type] : kTypes) {
    if (header.find("'descr': " + descr) != std::string::npos) a.dtype = type.first, item = type.second;
  }
  if (!item) refuse(path, "dtype must be float32 ('<f4'), int64 ('<i8'), int32 ('<i4') or bool ('|b1')");
  if (header.find("'fortran_order': False") == std::string::npos) refuse(path, "must be in C order");
  a.shape = shape_of(header, path);
  std::int64_t n = 1;
  for (auto d : a.shape) {
    if (d > 0 && n > (std::int64_t(1) << 40) / d) refuse(path, "shape too large");
    n *= d;
  }
  const std::size_t data_at = at + header_len;
  if (bytes.size() - data_at != std::size_t(n) * item) {
    refuse(path, "holds " + std::to_string(bytes.size() - data_at) + " data bytes, its shape " +
                     std::to_string(n * std::int64_t(item)));
  }
  a.data.resize(std::size_t(n));
  const char* src = bytes.data() + data_at;
  for (std::size_t i = 0; i < std::size_t(n); ++i) a.data[i] = element_at(src, i, a.dtype);
  return a;
}

namespace {

template <typename T>
void convert(const float* data, std::int64_t n, char* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const auto v = static_cast<T>(data[i]);
    std::memcpy(out + std::size_t(i) * sizeof(T), &v, sizeof(T));
  }
}

struct Written {
  const char* descr;
  std::size_t bytes;
  void (*convert)(const float*, std::int64_t, char*);
};

// The NPY descr of an ONNX element type as TensorInfo names it, and its conversion from floats;
// float32 for "float" and any type not listed.
Written written_as(const std::string& dtype) {
  static const std::map<std::string, Written> types = {{"int64", {"<i8", 8, &convert<std::int64_t>}},
                                                       {"int32", {"<i4", 4, &convert<std::int32_t>}},
                                                       {"int16", {"<i2", 2, &convert<std::int16_t>}},
                                                       {"int8", {"|i1", 1, &convert<std::int8_t>}},
                                                       {"uint64", {"<u8", 8, &convert<std::uint64_t>}},
                                                       {"uint32", {"<u4", 4, &convert<std::uint32_t>}},
                                                       {"uint16", {"<u2", 2, &convert<std::uint16_t>}},
                                                       {"uint8", {"|u1", 1, &convert<std::uint8_t>}},
                                                       {"bool", {"|b1", 1, &convert<bool>}}};
  const auto it = types.find(dtype);
  return it != types.end() ? it->second : Written{"<f4", 4, &convert<float>};
}

}  // namespace

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const float* data,
               const std::string& dtype) {
  std::string dims;
  std::int64_t n = 1;
  for (auto d : shape) {
    dims += std::to_string(d) + ", ";
    n *= d;
  }
  dims.resize(dims.size() - (shape.size() > 1 ? 2 : shape.size()));  // "(1, 3)", but "(5,)" and "()"
  const Written as = written_as(dtype);
  std::string bytes(std::size_t(n) * as.bytes, '\0');
  as.convert(data, n, bytes.data());
  std::string header = "{'descr': '" + std::string(as.descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic, version, length, header: padded with spaces to a multiple of 64, ending in '\n'.
  const std::size_t total = (kMagicBytes + 4 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - kMagicBytes - 4 - header.size() - 1, ' ');
  header += '\n';
  write_file_atomically(path, "npy", [&](std::ostream& out) {
    out.write(kMagic, kMagicBytes);
    const char version[2] = {1, 0};
    out.write(version, 2);
    const char len[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
    out.write(len, 2);
    out << header;
    out.write(bytes.data(), std::streamsize(bytes.size()));
  });
}

}  // namespace atvoss::engine
