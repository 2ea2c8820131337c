#pragma once
// The one switch from a runtime config to a compile-time instantiation: a list of tile types,
// each with a static name(); dispatch() calls f(Tile{}) for the one whose name matches.

#include <string>
#include <string_view>
#include <vector>

namespace cutelab::gemm {

template <class... Tiles>
struct TileList {
  template <class F>
  static bool dispatch(std::string_view name, F&& f) {
    return ((Tiles::name() == name ? (f(Tiles{}), true) : false) || ...);
  }
  [[nodiscard]] static std::vector<std::string> names() { return {Tiles::name()...}; }
};

}  // namespace cutelab::gemm
