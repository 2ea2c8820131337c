#!/usr/bin/env bash
# A kernel version's instantiations/*.cu may be compiled as one unit (CUTELAB_BATCH_INSTANTIATIONS),
# which is only safe while each file of a version with several holds nothing but includes,
# namespaces and explicit instantiations: a definition there could clash with its neighbour's.
set -u
root="$1"
fail=0
checked=0
while IFS= read -r dir; do
  files=("$dir"/*.cu)
  [[ ${#files[@]} -gt 1 ]] || continue
  for f in "${files[@]}"; do
    checked=$((checked + 1))
    # Lines allowed: #include, namespace open/close, `template <decl>;` (possibly wrapped), comments, blank.
    bad="$(grep -nvE '^\s*(#include |namespace [A-Za-z_:0-9]+ \{|\}|template |//|$)' "$f" |
           grep -vE '^[0-9]+:\s+[^;{}]*[;,)]\s*$' || true)"
    if [[ -n "$bad" ]]; then
      echo "FAIL: ${f#"$root"/} holds more than explicit instantiations:"
      echo "$bad" | sed 's/^/  /'
      fail=1
    fi
  done
done < <(find "$root/kernels" -type d -name instantiations | sort)
echo "checked $checked instantiation files of versions with several"
[[ $checked -gt 0 ]] || { echo "FAIL: no instantiation files found under $root/kernels"; fail=1; }
exit $fail
