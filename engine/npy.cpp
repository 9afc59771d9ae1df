#include "engine/npy.hpp"

#include <cctype>
#include <cstdint>
#include <cstring>
#include <map>
#include <regex>
#include <set>

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

// Element types as NPY files write them: NumPy's name (NpyArray::dtype), the ONNX element type
// an output of that type has (TensorInfo::dtype), the descr, the item size, and the
// conversions to and from the engine's floats.
struct NpyType {
  const char* numpy;
  const char* onnx;
  const char* descr;
  std::size_t bytes;
  float (*load)(const char*);
  void (*store)(float, char*);
};

template <typename T>
float load_as_float(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return static_cast<float>(v);
}

template <typename T>
void store_from_float(float f, char* p) {
  const auto v = static_cast<T>(f);
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
constexpr NpyType npy_type(const char* numpy, const char* onnx, const char* descr) {
  return {numpy, onnx, descr, sizeof(T), &load_as_float<T>, &store_from_float<T>};
}

// Float32 first: what an output of any other type is written as.
constexpr NpyType kTypes[] = {
    npy_type<float>("float32", "float", "<f4"),         npy_type<std::int64_t>("int64", "int64", "<i8"),
    npy_type<std::int32_t>("int32", "int32", "<i4"),    npy_type<std::int16_t>("int16", "int16", "<i2"),
    npy_type<std::int8_t>("int8", "int8", "|i1"),       npy_type<std::uint64_t>("uint64", "uint64", "<u8"),
    npy_type<std::uint32_t>("uint32", "uint32", "<u4"), npy_type<std::uint16_t>("uint16", "uint16", "<u2"),
    npy_type<std::uint8_t>("uint8", "uint8", "|u1"),    npy_type<bool>("bool", "bool", "|b1")};

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
  // Integer and bool arrays (token ids, masks, a uint8 image) are read into floats, as the engine
  // holds them.
  NpyArray a;
  const NpyType* type = nullptr;
  for (const auto& t : kTypes) {
    if (header.find("'descr': '" + std::string(t.descr) + "'") != std::string::npos) type = &t;
  }
  if (!type) {
    refuse(path,
           "dtype must be float32 ('<f4'), an integer type ('<i8', '<i4', '<i2', '|i1', '<u8', '<u4', '<u2', "
           "'|u1') or bool ('|b1')");
  }
  a.dtype = type->numpy;
  const std::size_t item = type->bytes;
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
  for (std::size_t i = 0; i < std::size_t(n); ++i) a.data[i] = type->load(src + i * item);
  return a;
}

void write_npy(const std::string& path, const std::vector<std::int64_t>& shape, const float* data,
               const std::string& dtype) {
  std::string dims;
  std::int64_t n = 1;
  for (auto d : shape) {
    dims += std::to_string(d) + ", ";
    n *= d;
  }
  dims.resize(dims.size() - (shape.size() > 1 ? 2 : shape.size()));  // "(1, 3)", but "(5,)" and "()"
  const NpyType* as = &kTypes[0];
  for (const auto& t : kTypes) {
    if (dtype == t.onnx) as = &t;
  }
  std::string bytes(std::size_t(n) * as->bytes, '\0');
  for (std::int64_t i = 0; i < n; ++i) as->store(data[i], bytes.data() + std::size_t(i) * as->bytes);
  std::string header = "{'descr': '" + std::string(as->descr) + "', 'fortran_order': False, 'shape': (" + dims + "), }";
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

std::vector<std::string> npy_file_names(const std::vector<std::string>& tensor_names) {
  std::vector<std::string> files;
  std::set<std::string> taken;
  for (const auto& name : tensor_names) {
    std::string f = name.empty() ? "output" : name;
    for (char& ch : f) {
      const bool safe = std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_' || ch == '-';
      if (!safe) ch = '_';
    }
    if (f[0] == '.') f[0] = '_';
    std::string unique = f;
    for (int k = 2; taken.count(unique); ++k) unique = f + "_" + std::to_string(k);
    taken.insert(unique);
    files.push_back(unique);
  }
  return files;
}

}  // namespace atvoss::engine
