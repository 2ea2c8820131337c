#pragma once
// Kernels register by name <tier>/<family>/<design>/<version>; lookup by full name, by a
// prefix of it (newest version wins), or by family (the family's default design, newest version).

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cutelab/runtime/plan.hpp"

namespace cutelab {

class Registry {
 public:
  static Registry& instance();

  void add(std::unique_ptr<KernelPlan> plan);  // throws Error on a duplicate name
  // Throws UsageError naming the query and listing close names when nothing or several match.
  [[nodiscard]] const KernelPlan& find(std::string_view query) const;
  [[nodiscard]] std::vector<const KernelPlan*> all() const;  // sorted by name
  // The family's default design ("cute/mla_decode/paged_sm90"): set by whoever owns the family.
  void set_family_default(const std::string& family, const std::string& tier_family_design);

 private:
  std::vector<std::unique_ptr<KernelPlan>> plans_;
  std::vector<std::pair<std::string, std::string>> family_defaults_;
};

namespace detail {
struct PlanRegistrar {
  explicit PlanRegistrar(std::unique_ptr<KernelPlan> plan) { Registry::instance().add(std::move(plan)); }
};
struct FamilyDefaultRegistrar {
  FamilyDefaultRegistrar(const char* family, const char* design) {
    Registry::instance().set_family_default(family, design);
  }
};
}  // namespace detail

}  // namespace cutelab

#define CUTELAB_CAT_INNER(a, b) a##b
#define CUTELAB_CAT(a, b) CUTELAB_CAT_INNER(a, b)
// In a kernel version's plan.cpp: CUTELAB_REGISTER_PLAN(RowwiseV1Plan);
#define CUTELAB_REGISTER_PLAN(PlanType)                                                 \
  static const ::cutelab::detail::PlanRegistrar CUTELAB_CAT(cutelab_registrar_, __LINE__){ \
      std::make_unique<PlanType>()}
#define CUTELAB_FAMILY_DEFAULT(family, design)                                                   \
  static const ::cutelab::detail::FamilyDefaultRegistrar CUTELAB_CAT(cutelab_family_default_, \
                                                                     __LINE__){family, design}
