// gelu_affine v1's config as reports show it: defined here, not in config.hpp, so that the
// kernel units (which include config.hpp) do not parse nlohmann/json; the host tests link this file.

#include "cute/elementwise/gelu_affine/gelu_affine_v1/config.hpp"

#include <nlohmann/json.hpp>

namespace cutelab::elementwise::gelu_affine_v1 {

nlohmann::json Config::to_json() const {
  return {
      {"threads", threads}, {"vecs_per_thread", vecs}, {"tile_elems", tile_elems()}, {"grid", grid_name()}};
}

}  // namespace cutelab::elementwise::gelu_affine_v1
