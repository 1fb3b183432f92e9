#!/usr/bin/env bash
# build.sh: set up, build and run attention-lab.
#
#   bash build.sh            build what changed (wasm SIMD and scalar, the kernels'
#                            test wasm, native tests, the page's C listings)
#   bash build.sh --serve    ... then serve web/ on 127.0.0.1 (npm start)
#   bash build.sh --test     ... then run every test (npm test)
#   bash build.sh --bench-page  ... then time edits on the lesson page (npm run bench:page)
#
# On a fresh Debian 12 machine it installs what is missing when run as root
# (apt: emscripten node-acorn gcc, plus chromium-headless-shell and clang-14
# with libclang-rt-14-dev (libFuzzer) for the tests, chromium for the page
# benchmark; then npm ci),
# and otherwise stops naming exactly what to install.
#
# Outputs (all git-ignored):
#   web/wasm/attention-simd.wasm     -msimd128, wasm_simd128.h kernels
#   web/wasm/attention-scalar.wasm   the same sources without SIMD
#   web/generated/c-source.js        the C of attn_sdpa's passes and of each
#                                    bug, as the page shows it (web/c-source.mjs)
#   build/native/test_*              one binary per tests/c/test_*.c, each
#                                    linked with c_src under ASan/UBSan
#   build/wasm-test/kernels-*.wasm   c_src/kernels.c + tests/c/kernel_exports.c,
#                                    SIMD and scalar, for tests/kernels.test.mjs
#   build/emcache/                   Emscripten's cache, seeded from Debian's
#   build/fuzz/                      libFuzzer harnesses, their corpus and logs
#                                    (built by tests/fuzz/fuzz.sh, npm run fuzz)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$ROOT"
MODE="${1:-build}"

say() { printf '[attention-lab] %s\n' "$*"; }

# ---------------------------------------------------------------------------
# Set-up: system packages and node_modules
# ---------------------------------------------------------------------------

need_apt=()
command -v emcc >/dev/null 2>&1 || need_apt+=(emscripten)
[ -d /usr/share/nodejs/acorn ] || need_apt+=(node-acorn)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
# The tests drive chromium-headless-shell; the page benchmark, the browser itself.
if [ "$MODE" = "--test" ] && [ ! -x /usr/bin/chromium-headless-shell ]; then need_apt+=(chromium-headless-shell); fi
if [ "$MODE" = "--bench-page" ] && [ ! -x /usr/bin/chromium ]; then need_apt+=(chromium); fi
# libFuzzer for tests/fuzz (tests/fuzz/fuzz.sh builds the harnesses).
if [ "$MODE" = "--test" ] && { ! command -v clang-14 >/dev/null 2>&1 ||
    ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; }; then
  need_apt+=(clang-14 libclang-rt-14-dev)
fi
# NumPy for Debian's python3: the tests run the lesson's NumPy scripts against the core.
if [ "$MODE" = "--test" ] && ! /usr/bin/python3 -c 'import numpy' >/dev/null 2>&1; then need_apt+=(python3-numpy); fi
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    say "installing ${need_apt[*]} with apt-get"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}" >/dev/null
  else
    say "missing system packages. Install them with:"
    say "  sudo apt-get update && sudo apt-get install -y ${need_apt[*]}"
    exit 1
  fi
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  say "Node.js 20 or newer and npm are needed (Debian 12's own nodejs is 18: install Node 20 from NodeSource or with nvm)"
  exit 1
fi
if ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  say "Node.js $(node --version) is too old: 20 or newer is needed (the tests use node --test options of Node 20)"
  exit 1
fi
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm dev dependencies (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi

# ---------------------------------------------------------------------------
# Build, only what is older than its sources
# ---------------------------------------------------------------------------

SOURCES=(c_src/*.c c_src/*.h build.sh emscripten.cfg)
stale() { # stale OUTPUT [EXTRA_SOURCES...]: true when OUTPUT is missing or older
  local out="$1"; shift
  [ -f "$out" ] || return 0
  [ -n "$(find "${SOURCES[@]}" "$@" -newer "$out" 2>/dev/null)" ]
}

export ATTENTION_LAB_ROOT="$ROOT"
export EM_CONFIG="$ROOT/emscripten.cfg"
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
mkdir -p build/native build/wasm-test web/wasm
if [ ! -d build/emcache ]; then
  # Debian ships the system libraries prebuilt; a copy in the build folder
  # keeps every write inside the repo and saves minutes on a fresh clone.
  cp -r /usr/share/emscripten/cache build/emcache
  rm -f build/emcache/cache.lock
fi

# Never -ffast-math: softmax relies on -INFINITY and NaN semantics.
EMFLAGS=(-O3 -std=c11 -Wall -Wextra -sSTANDALONE_WASM --no-entry
  -sALLOW_MEMORY_GROWTH=1 -sINITIAL_MEMORY=16MB -sMAXIMUM_MEMORY=2GB -sABORTING_MALLOC=0)
# Every C file of the core, by glob: a new one cannot be left out of a build.
C_FILES=(c_src/*.c)

# Each output is built by its own job, as many at a time as there are cores;
# a job that fails stops the script once the others have finished.
MAX_JOBS="$(nproc 2>/dev/null || echo 2)"
running=0
failed=0
job() { # job CMD...: run CMD in the background
  if [ "$running" -ge "$MAX_JOBS" ]; then wait -n || failed=1; running=$((running - 1)); fi
  "$@" &
  running=$((running + 1))
}
wait_jobs() {
  while [ "$running" -gt 0 ]; do wait -n || failed=1; running=$((running - 1)); done
  if [ "$failed" != 0 ]; then say "a build step failed (its error is above)"; exit 1; fi
}

if stale web/wasm/attention-simd.wasm; then
  say "building web/wasm/attention-simd.wasm"
  job emcc "${EMFLAGS[@]}" -msimd128 "${C_FILES[@]}" -o web/wasm/attention-simd.wasm
fi
if stale web/wasm/attention-scalar.wasm; then
  say "building web/wasm/attention-scalar.wasm"
  job emcc "${EMFLAGS[@]}" "${C_FILES[@]}" -o web/wasm/attention-scalar.wasm
fi
# Native C tests: each tests/c/test_NAME.c is its own program, linked with the
# core into build/native/test_NAME (scalar code only: gcc, no wasm SIMD).
NATIVE_FLAGS=(-std=c11 -O1 -g -Wall -Wextra -Werror -fsanitize=address,undefined -fno-sanitize-recover=all
  -fno-omit-frame-pointer -Ic_src)
for test_c in tests/c/test_*.c; do
  bin="build/native/$(basename "$test_c" .c)"
  if stale "$bin" "$test_c" tests/c/*.h; then
    say "building $bin (gcc, ASan + UBSan)"
    job gcc "${NATIVE_FLAGS[@]}" "${C_FILES[@]}" "$test_c" -lm -o "$bin"
  fi
done

KERNEL_TEST=(c_src/kernels.c tests/c/kernel_exports.c)
if stale build/wasm-test/kernels-simd.wasm tests/c/kernel_exports.c || stale build/wasm-test/kernels-scalar.wasm tests/c/kernel_exports.c; then
  say "building build/wasm-test/kernels-{simd,scalar}.wasm"
  job emcc "${EMFLAGS[@]}" -msimd128 -Ic_src "${KERNEL_TEST[@]}" -o build/wasm-test/kernels-simd.wasm
  job emcc "${EMFLAGS[@]}" -Ic_src "${KERNEL_TEST[@]}" -o build/wasm-test/kernels-scalar.wasm
fi

# The C of attn_sdpa's passes, as the lesson page shows it (web/generated/).
if stale web/generated/c-source.js c_src/attention.c c_src/kernels.c c_src/mha.c web/c-source.mjs web/attention.js; then
  say "writing web/generated/c-source.js"
  job node web/c-source.mjs
fi
wait_jobs

# ---------------------------------------------------------------------------
# Modes
# ---------------------------------------------------------------------------

case "$MODE" in
  build) ;;
  --serve) exec node web/serve.mjs "${@:2}" ;;
  # Two test files at a time. On a 2-core machine that the browser tests
  # keep busy, two are quicker than four: 860 and 826 s of tests against
  # 907 s at four (four spend more CPU on the same work). On a faster
  # machine, whose browser tests mostly wait (idle callbacks, timers,
  # training in the page), fewer files leave the cores idle longer. Two once
  # crashed Chromium's renderer in tests/screen-reader.test.mjs, each time
  # in an axe run that followed a read of the accessibility tree; since
  # axNode turns that tree off again, two full runs at two had no crash.
  --test) exec node --test --test-concurrency=2 --test-reporter=spec tests/*.test.mjs ;;
  --bench-page) exec node tests/bench/page.mjs ;;
  *) say "unknown option $MODE (use --serve, --test or --bench-page)"; exit 2 ;;
esac
