#include "host/kernel_object.hpp"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

#include "core/error.hpp"
#include "core/utf8.hpp"

namespace atvoss::host {
namespace {

// Reads n bytes at offset, or false (a short file).
bool read_at(int fd, void* out, std::size_t n, std::uint64_t offset) {
  return ::pread(fd, out, n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n);
}

// Whether [offset, offset + count * size) lies inside a file of `file` bytes, without overflow.
bool inside(std::uint64_t offset, std::uint64_t count, std::uint64_t size, std::uint64_t file) {
  if (offset > file) return false;
  return size == 0 || count <= (file - offset) / size;
}

std::string check_elf(int fd, std::uint64_t file) {
  Elf64_Ehdr h{};
  if (!read_at(fd, &h, sizeof h, 0) || std::memcmp(h.e_ident, ELFMAG, SELFMAG) != 0 ||
      h.e_ident[EI_CLASS] != ELFCLASS64) {
    return "it is not a 64-bit ELF object";
  }
  if (h.e_phentsize != sizeof(Elf64_Phdr) || !inside(h.e_phoff, h.e_phnum, sizeof(Elf64_Phdr), file)) {
    return "its program headers reach past its end (a truncated file?)";
  }
  if (h.e_shnum > 0 && !inside(h.e_shoff, h.e_shnum, h.e_shentsize, file)) {
    return "its section headers reach past its end (a truncated file?)";
  }
  for (unsigned i = 0; i < h.e_phnum; ++i) {
    Elf64_Phdr p{};
    if (!read_at(fd, &p, sizeof p, h.e_phoff + std::uint64_t{i} * sizeof p)) return "it cannot be read";
    if (p.p_type == PT_LOAD && !inside(p.p_offset, 1, p.p_filesz, file)) {
      return "a segment it maps reaches past its end (a truncated file?)";
    }
  }
  return "";
}

}  // namespace

std::string workload_symbol_text(const Workload& w) {
  std::string out = std::string("extern \"C\" { extern const char ") + kWorkloadSymbol + "[]; }\nconst char " +
                    kWorkloadSymbol + "[] = {";
  for (const char c : w.key()) out += std::to_string(static_cast<int>(static_cast<unsigned char>(c))) + ",";
  return out + "0};\n";
}

std::string elf_incompleteness(const std::string& path) {
  // O_NONBLOCK: a FIFO planted at path must not block the open (it is refused below).
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "it cannot be opened";
  struct stat st {};
  std::string why = ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)
                        ? "it is not a regular file"
                        : check_elf(fd, static_cast<std::uint64_t>(st.st_size));
  ::close(fd);
  return why;
}

KernelObject open_kernel_object(const std::string& path, const Workload& w, std::string_view what) {
  const std::string where(what);
  if (const std::string why = elf_incompleteness(path); !why.empty()) {
    throw_bad_input(where + ": not a loadable kernel object: " + why);
  }
  KernelObject k;
  k.handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (k.handle == nullptr) throw_bad_input(where + ": not a loadable kernel object: " + ::dlerror());
  const auto refuse = [&](const std::string& why) {
    ::dlclose(k.handle);
    throw_bad_input(where + ": " + why);
  };
  k.fn = reinterpret_cast<KernelFn>(::dlsym(k.handle, kKernelSymbol));
  if (k.fn == nullptr) refuse(path + " has no symbol " + kKernelSymbol + "; expected an atvoss kernel");
  const auto* key = static_cast<const char*>(::dlsym(k.handle, kWorkloadSymbol));
  if (key == nullptr) {
    refuse(path + " has no symbol " + kWorkloadSymbol +
           ", so the workload it was built for is unknown; build it again with this atvoss");
  }
  if (w.key() != key) {
    const std::string built(key, ::strnlen(key, 300));
    refuse("the kernel was built for workload '" + escape_invalid_utf8(built) + "', not for " + w.label() + " ('" +
           w.key() + "'); its shapes are compiled in");
  }
  return k;
}

}  // namespace atvoss::host
