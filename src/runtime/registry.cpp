#include "cutelab/runtime/registry.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "text.hpp"

namespace cutelab {
namespace {

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> parts;
  while (!s.empty()) {
    const std::size_t slash = s.find('/');
    parts.emplace_back(s.substr(0, slash));
    if (slash == std::string_view::npos) break;
    s.remove_prefix(slash + 1);
  }
  return parts;
}

bool starts_with(const std::vector<std::string>& path, const std::vector<std::string>& prefix) {
  return prefix.size() <= path.size() && std::equal(prefix.begin(), prefix.end(), path.begin());
}

std::string design_of(const KernelId& id) { return concat(id.tier, '/', id.family, '/', id.design); }

using detail::join;
using detail::lower;

const KernelPlan* newest(const std::vector<const KernelPlan*>& plans) {
  const KernelPlan* best = nullptr;
  for (const KernelPlan* p : plans) {
    if (!best) { best = p; continue; }
    const KernelId a = p->id(), b = best->id();
    if (a.version_number() > b.version_number() ||
        (a.version_number() == b.version_number() && a.full() > b.full()))
      best = p;
  }
  return best;
}

}  // namespace

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

void Registry::add(std::unique_ptr<KernelPlan> plan) {
  if (!plan) throw Error("Registry::add: null plan");
  const KernelId id = plan->id();
  const std::string name = id.full();
  if (!KernelId::parse(name) || id.version_number() == 0)
    throw Error(concat("kernel name '", name, "' is not of the form <tier>/<family>/<design>/v<N>"));
  for (const auto& p : plans_)
    if (p->id().full() == name) throw Error(concat("kernel '", name, "' is registered twice"));
  plans_.push_back(std::move(plan));
}

void Registry::set_family_default(const std::string& family, const std::string& tier_family_design) {
  const std::vector<std::string> parts = split(tier_family_design);
  if (parts.size() != 3 || parts[1] != family)
    throw Error(concat("default design for family '", family, "' must be <tier>/", family,
                       "/<design>, got '", tier_family_design, "'"));
  for (auto& [f, d] : family_defaults_) {
    if (f != family) continue;
    if (d != tier_family_design)
      throw Error(concat("family '", family, "' has two default designs: ", d, " and ", tier_family_design));
    return;
  }
  family_defaults_.emplace_back(family, tier_family_design);
}

std::vector<const KernelPlan*> Registry::all() const {
  std::vector<const KernelPlan*> out;
  for (const auto& p : plans_) out.push_back(p.get());
  std::sort(out.begin(), out.end(),
            [](const KernelPlan* a, const KernelPlan* b) { return a->id().full() < b->id().full(); });
  return out;
}

const KernelPlan& Registry::find(std::string_view query_view) const {
  std::string query(query_view);
  while (!query.empty() && query.back() == '/') query.pop_back();
  if (query.empty()) throw UsageError("empty kernel name");
  if (plans_.empty())
    throw UsageError(concat("no kernel matches '", query, "': no kernels are registered (is the kernel library built?)"));

  for (const auto& p : plans_)
    if (p->id().full() == query) return *p;

  // A prefix of the path components: "cute/gemm/wgmma_tma_sm90"; else the same without the
  // tier ("gemm", "gemm/wgmma_tma_sm90"); else a design name ("wgmma_tma_sm90").
  const std::vector<std::string> q = split(query);
  std::vector<const KernelPlan*> matches;
  const auto collect = [&](auto path_of) {
    for (const auto& p : plans_)
      if (starts_with(path_of(p->id()), q)) matches.push_back(p.get());
  };
  collect([](const KernelId& id) { return std::vector<std::string>{id.tier, id.family, id.design, id.version}; });
  if (matches.empty()) collect([](const KernelId& id) { return std::vector<std::string>{id.family, id.design, id.version}; });
  if (matches.empty()) collect([](const KernelId& id) { return std::vector<std::string>{id.design, id.version}; });

  if (matches.empty()) {
    std::vector<std::string> close;
    for (const auto& p : plans_) {
      const std::string name = lower(p->id().full());
      for (const std::string& part : q)
        if (!part.empty() && name.find(lower(part)) != std::string::npos) {
          close.push_back(p->id().full());
          break;
        }
    }
    if (close.empty())
      for (const KernelPlan* p : all()) close.push_back(p->id().full());
    std::sort(close.begin(), close.end());
    if (close.size() > 12) close.resize(12);
    throw UsageError(concat("no kernel matches '", query, "'; known kernels include: ", join(close)));
  }

  std::set<std::string> designs, families;
  for (const KernelPlan* p : matches) {
    designs.insert(design_of(p->id()));
    families.insert(p->id().family);
  }
  if (designs.size() == 1) return *newest(matches);

  // Several designs: the family's default design decides, when the query names one family.
  if (families.size() == 1) {
    for (const auto& [family, design] : family_defaults_) {
      if (family != *families.begin() || !designs.count(design)) continue;
      std::vector<const KernelPlan*> of_default;
      for (const KernelPlan* p : matches)
        if (design_of(p->id()) == design) of_default.push_back(p);
      return *newest(of_default);
    }
  }
  std::vector<std::string> names;
  for (const std::string& d : designs) {
    std::vector<const KernelPlan*> of_design;
    for (const KernelPlan* p : matches)
      if (design_of(p->id()) == d) of_design.push_back(p);
    names.push_back(newest(of_design)->id().full());
  }
  throw UsageError(concat("kernel name '", query, "' is ambiguous: it matches ", join(names), "; name one of them"));
}

}  // namespace cutelab
