#pragma once
// Helpers shared by the MLA decode host tests: argument views at fake (aligned) addresses, a
// valid argument set, and the message an argument or problem is refused with.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cutelab/core/error.hpp"
#include "cutelab/runtime/problem.hpp"
#include "cutelab/runtime/tensor.hpp"
#include "mla_decode/common/args.hpp"
#include "mla_decode/common/problem.hpp"

namespace cutelab::mla::host_test {

inline void* fake_ptr(std::uintptr_t addr) { return reinterpret_cast<void*>(addr); }

inline TensorView view(std::uintptr_t addr, DType dtype, std::vector<std::int64_t> shape) {
  TensorView t;
  t.data = fake_ptr(addr);
  t.dtype = dtype;
  t.stride = contiguous_strides(shape);
  t.shape = std::move(shape);
  return t;
}

// b = 2, s_q = 2, h_q = 16, h_kv = 2, 10 pages, 4 table columns; every pointer 256-byte aligned.
inline MlaDecodeArgs good_args(DType dt = DType::bf16) {
  MlaDecodeArgs a;
  a.q = view(0x100000, dt, {2, 2, 16, 576});
  a.kv_cache = view(0x200000, dt, {10, 64, 2, 576});
  a.block_table = view(0x300000, DType::i32, {2, 4});
  a.seqlens = view(0x400000, DType::i32, {2});
  a.out = view(0x500000, dt, {2, 2, 16, 512});
  a.lse = view(0x600000, DType::f32, {2, 16, 2});
  return a;
}

// validate_args' message (unchecked mode), or "(accepted)".
inline std::string rejection(const MlaDecodeArgs& a, KvFormats formats = {}) {
  try {
    (void)validate_args(a, /*checked=*/false, nullptr, formats);
  } catch (const UsageError& e) {
    return e.message();
  }
  return "(accepted)";
}

inline Problem parse(std::map<std::string, std::string> flags) {
  return make_problem(MlaDecodeProblem::family(), flags);
}

inline std::string problem_rejection(std::map<std::string, std::string> flags) {
  try {
    (void)MlaDecodeProblem::from(parse(std::move(flags)));
  } catch (const UsageError& e) {
    return e.message();
  }
  return "(accepted)";
}

}  // namespace cutelab::mla::host_test
