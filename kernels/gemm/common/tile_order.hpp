#pragma once
// The order in which persistent GEMM kernels visit output tiles: linear tile ids are cut into
// bands of `band` tiles across the raster direction, and walked across the band first. With
// raster along N, a band is `band` tile rows (M) wide: the CTAs resident at one time then share
// `band` A panels and a few B panels, so most operand tiles come from L2, not HBM.
// Plain integer code, shared by host (tests) and device.

#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define CUTELAB_GEMM_HD __host__ __device__ __forceinline__
#else
#define CUTELAB_GEMM_HD inline
#endif

namespace cutelab::gemm {

enum class Raster : std::uint8_t { along_n, along_m };

[[nodiscard]] inline const char* raster_name(Raster r) noexcept { return r == Raster::along_n ? "n" : "m"; }

struct TileCoord {
  int m = 0;
  int n = 0;
};

struct TileOrder {
  int tiles_m = 1;  // tiles (or cluster tiles) along M
  int tiles_n = 1;
  int band = 1;     // tiles across the raster direction per band, >= 1
  Raster raster = Raster::along_n;

  [[nodiscard]] CUTELAB_GEMM_HD int num_tiles() const { return tiles_m * tiles_n; }

  // Tile coordinate of linear id t in [0, num_tiles()).
  [[nodiscard]] CUTELAB_GEMM_HD TileCoord at(int t) const {
    // "across" is the dimension cut into bands, "along" the one the raster walks.
    const int across = raster == Raster::along_n ? tiles_m : tiles_n;
    const int along = raster == Raster::along_n ? tiles_n : tiles_m;
    const int band_tiles = band * along;
    const int band_idx = t / band_tiles;
    const int in_band = t - band_idx * band_tiles;
    const int first = band_idx * band;
    const int width = (across - first) < band ? (across - first) : band;  // the last band may be narrower
    const int a = first + in_band % width;
    const int b = in_band / width;
    TileCoord c;
    if (raster == Raster::along_n) {
      c.m = a;
      c.n = b;
    } else {
      c.m = b;
      c.n = a;
    }
    return c;
  }
};

}  // namespace cutelab::gemm
