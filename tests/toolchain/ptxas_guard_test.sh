#!/usr/bin/env bash
# cmake/ptxas-guard must fail a compile whose output reports serialized wgmma, pass a clean one
# through with its status, and keep the compiler's own failures.
set -u
guard="$1"
fail=0
check() {  # expected-status description command...
  local want=$1 what=$2
  shift 2
  "$guard" "$@" >/dev/null 2>&1
  local got=$?
  if [[ $got -ne $want ]]; then echo "FAIL: $what: exit $got, expected $want"; fail=1; else echo "ok: $what"; fi
}
serialized='ptxas info    : (C7520) Potential Performance Loss: wgmma.mma_async instructions are serialized due to ...'
check 1 "serialized wgmma fails the build" bash -c "echo '$serialized' >&2"
check 0 "a clean compile passes" bash -c "echo 'ptxas info    : Used 254 registers' >&2"
check 3 "the compiler's own status is kept" bash -c "exit 3"
exit $fail
