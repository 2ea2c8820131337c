#!/usr/bin/env bash
# scripts/variant-lib: refuses what it cannot build with a clear message, and builds a library whose one
# kernel version was compiled with the given options and which exports what the tree's library exports;
# with --only, a library of the named targets alone.
# (--no-build: the test uses the tree ctest runs in and never builds it.)
# Usage: variant_lib_test.sh <repo root> <build dir> <kernel target> <the target's common target>
set -u
root="$1" build="$2" target="$3" common="$4"
tool="$root/scripts/variant-lib"
out="$build/variant-lib-test"
fail=0
expect_error() {  # description, expected message, args...
  local what=$1 message=$2
  shift 2
  local text
  text="$("$tool" --no-build "$@" 2>&1)"
  local status=$?
  if [[ $status -ne 0 && "$text" == *"$message"* ]]; then echo "ok: $what"
  else echo "FAIL: $what: exit $status, output: $text"; fail=1; fi
}
expect_error "an unknown target is refused" "no kernel target 'no_such_kernel'" --build-dir "$build" --target no_such_kernel --out "$out" -- -DX=1
expect_error "no options is refused" "no nvcc options given" --build-dir "$build" --target "$target" --out "$out"
expect_error "a tree that is not built is refused" "is not a configured Ninja tree" --build-dir "$out/none" --target "$target" --out "$out" -- -DX=1

rm -rf "$out"
if ! "$tool" --no-build --build-dir "$build" --target "$target" --out "$out" -- -DCUTELAB_VARIANT_LIB_TEST=1; then
  echo "FAIL: the variant build failed"; exit 1
fi
grep -q "^compile: .*-DCUTELAB_VARIANT_LIB_TEST=1" "$out/VARIANT.txt" && echo "ok: the unit was compiled with the option" \
  || { echo "FAIL: VARIANT.txt has no compile with the option"; fail=1; }
symbols() { nm -D --defined-only "$1" | awk '{print $NF}' | sort; }
if [[ -s "$out/libcutelab_kernels.so" ]] && diff <(symbols "$build/lib/libcutelab_kernels.so") <(symbols "$out/libcutelab_kernels.so") >/dev/null; then
  echo "ok: the variant exports what the tree's library exports"
else
  echo "FAIL: the variant library is missing or exports other symbols"; fail=1
fi
[[ -f "$out/libcutelab_runtime.so" ]] && echo "ok: the runtime library beside it" || { echo "FAIL: no runtime library in $out"; fail=1; }

# --only: a library of the named targets alone (here the tree's objects: no options), whose registry holds the
# target's kernels and nothing else; a missing dependency fails the link, an unknown target is refused.
expect_error "an unknown --only target is refused" "--only no_such_target: no such target" --build-dir "$build" --target "$target" --out "$out-only" --only no_such_target
expect_error "a subset missing a dependency fails at the link" "the undefined symbols above name a target to add" --build-dir "$build" --target "$target" --out "$out-only" --only mla_decode_split
rm -rf "$out-only"
if ! "$tool" --no-build --build-dir "$build" --target "$target" --out "$out-only" --only "$common"; then
  echo "FAIL: the --only build failed"; exit 1
fi
names="$(LD_LIBRARY_PATH="$out-only" "$build/bin/cutelab" list --names 2>&1)"
all="$(LD_LIBRARY_PATH="$build/lib" "$build/bin/cutelab" list --names 2>&1)"
if [[ -n "$names" && "$(wc -l <<< "$names")" -lt "$(wc -l <<< "$all")" ]] \
   && [[ -z "$(comm -23 <(sort <<< "$names") <(sort <<< "$all"))" ]] && ! grep -q "/mla_decode/" <<< "$names"; then
  echo "ok: the --only library registers only its targets' kernels ($(tr '\n' ' ' <<< "$names"))"
else
  echo "FAIL: the --only library lists: $names"; fail=1
fi
exit $fail
