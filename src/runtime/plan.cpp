#include "cutelab/runtime/plan.hpp"

#include <charconv>

namespace cutelab {

std::string KernelId::full() const { return concat(tier, '/', family, '/', design, '/', version); }

int KernelId::version_number() const {
  if (version.size() < 2 || version[0] != 'v') return 0;
  int n = 0;
  const auto [ptr, ec] = std::from_chars(version.data() + 1, version.data() + version.size(), n);
  if (ec != std::errc() || ptr != version.data() + version.size() || n < 0) return 0;
  return n;
}

std::optional<KernelId> KernelId::parse(std::string_view full) {
  std::string_view parts[4];
  for (int i = 0; i < 4; ++i) {
    const std::size_t slash = full.find('/');
    if ((slash == std::string_view::npos) != (i == 3)) return std::nullopt;  // exactly 3 slashes
    parts[i] = full.substr(0, slash);
    if (parts[i].empty()) return std::nullopt;
    if (i < 3) full.remove_prefix(slash + 1);
  }
  return KernelId{std::string(parts[0]), std::string(parts[1]), std::string(parts[2]), std::string(parts[3])};
}

void Workspace::poison(cudaStream_t stream) {
  for (const OutputSpec& o : outputs()) fill_poison(o.view, stream);
}

}  // namespace cutelab
