#!/usr/bin/env bash
# tests/fuzz/fuzz.sh: build and run the libFuzzer harnesses of the C core.
#
#   bash tests/fuzz/fuzz.sh [SECONDS] [NAME...]     (npm run fuzz -- [SECONDS])
#
# Each tests/fuzz/fuzz_NAME.c is linked with c_src under libFuzzer, ASan and
# UBSan (clang-14, -fno-sanitize-recover=all) into build/fuzz/fuzz_NAME and
# run for SECONDS (default 60) on its corpus: build/fuzz/corpus/NAME (what
# the fuzzer found, git-ignored) plus the committed seeds in
# tests/fuzz/corpus/NAME. A crash, a sanitizer report or a broken invariant
# stops that harness, keeps the input in build/fuzz/artifacts/ and makes the
# script fail. The last lines give executions and coverage per harness.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SECONDS_EACH="${1:-60}"
[ $# -gt 0 ] && shift
say() { printf '[fuzz] %s\n' "$*"; }
case "$SECONDS_EACH" in ''|*[!0-9]*) say "usage: fuzz.sh [SECONDS] [NAME...]"; exit 2 ;; esac

# clang-14 with libFuzzer (Debian: clang-14 and libclang-rt-14-dev).
if ! command -v clang-14 >/dev/null 2>&1 || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing clang-14 libclang-rt-14-dev with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 libclang-rt-14-dev >/dev/null
  else
    say "libFuzzer is missing. Install it with:"
    say "  sudo apt-get update && sudo apt-get install -y clang-14 libclang-rt-14-dev"
    exit 1
  fi
fi

if [ $# -gt 0 ]; then NAMES=("$@"); else
  NAMES=()
  for f in tests/fuzz/fuzz_*.c; do n="$(basename "$f" .c)"; NAMES+=("${n#fuzz_}"); done
fi

FLAGS=(-g -O1 -std=c11 -Wall -Wextra -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Ic_src)
mkdir -p build/fuzz/obj build/fuzz/artifacts
# The core is compiled once (-fsanitize=fuzzer-no-link), each harness linked with it.
objects=()
for c in c_src/*.c; do
  o="build/fuzz/obj/$(basename "$c" .c).o"
  if [ ! -f "$o" ] || [ -n "$(find "$c" c_src/*.h -newer "$o")" ]; then
    say "compiling $c"
    clang-14 "${FLAGS[@]/-fsanitize=fuzzer,address,undefined/-fsanitize=fuzzer-no-link,address,undefined}" -c "$c" -o "$o"
  fi
  objects+=("$o")
done

status=0
summary=()
for name in "${NAMES[@]}"; do
  src="tests/fuzz/fuzz_$name.c" bin="build/fuzz/fuzz_$name"
  [ -f "$src" ] || { say "no harness $src"; exit 2; }
  if [ ! -f "$bin" ] || [ -n "$(find "$src" tests/fuzz/*.h "${objects[@]}" -newer "$bin")" ]; then
    say "building $bin"
    clang-14 "${FLAGS[@]}" "$src" "${objects[@]}" -lm -o "$bin"
  fi
  mkdir -p "build/fuzz/corpus/$name" "tests/fuzz/corpus/$name"
  log="build/fuzz/$name.log"
  say "running fuzz_$name for $SECONDS_EACH s"
  if "$bin" -max_total_time="$SECONDS_EACH" -print_final_stats=1 -timeout=20 -rss_limit_mb=2560 \
      -artifact_prefix="build/fuzz/artifacts/$name-" "build/fuzz/corpus/$name" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)"
    cov="$(grep -a -E '^#[0-9]+.*cov: ' "$log" | tail -1 | sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+).*/cov \1 ft \2/')"
    summary+=("fuzz_$name: ${runs:-?} executions in $SECONDS_EACH s, ${cov:-no coverage line}, corpus $(ls "build/fuzz/corpus/$name" | wc -l) generated + $(ls "tests/fuzz/corpus/$name" | wc -l) seeds")
  else
    status=1
    summary+=("fuzz_$name: FAILED (log $log, input in build/fuzz/artifacts/$name-*)")
    tail -n 40 "$log" >&2
  fi
done
for line in "${summary[@]}"; do say "$line"; done
exit $status
