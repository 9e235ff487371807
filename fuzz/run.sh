#!/usr/bin/env bash
# Builds a fuzzer (libFuzzer + AddressSanitizer + UBSan) and runs it for a bounded time.
#   fuzz/run.sh [SECONDS] [decoder|sface]    default 60 seconds, decoder; FACEGATE_TEST_IMAGES points at the seed photos
#   decoder: the image decoder alone (fe_image_probe / fe_image_decode, EXIF), thousands of runs a second;
#   sface:   the SFace engine's entry points (fe_engine_analyze, fe_engine_embed_box) end to end: decode, YuNet,
#            alignment, quality, SFace; needs the models (FACEGATE_MODEL_DIR, default .run/models), tens of runs a second.
# Seeds: the test photos plus small generated JPEG/PNG variants (progressive, grey, CMYK, EXIF
# orientation, 16-bit, palette, grey+alpha, interlaced). Crashes land in fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${1:-60}"
target="${2:-decoder}"
images="${FACEGATE_TEST_IMAGES:-../.run/testdata}"
export FACEGATE_MODEL_DIR="${FACEGATE_MODEL_DIR:-$PWD/../.run/models}"
cxx="${CXX:-clang++}"
mkdir -p build "corpus/$target" seeds artifacts

linker=()
if "$cxx" -fuse-ld=lld -x c++ -o /dev/null - <<<'int main(){}' 2>/dev/null; then linker=(-fuse-ld=lld); fi
flags=(-std=c++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined "${linker[@]}" -I ../Shared/CLibraries/CFaceEngine/include)
case "$target" in
decoder)
    "$cxx" "${flags[@]}" decoder_fuzzer.cpp ../Shared/CLibraries/CFaceEngine/image_decoder.cpp -ljpeg -lpng -lz -o build/decoder_fuzzer
    ;;
sface)
    # The whole engine (both models' code, as the matcher links it); OpenCV and dlib themselves are not instrumented.
    "$cxx" "${flags[@]}" -I/usr/include/opencv4 sface_fuzzer.cpp ../Shared/CLibraries/CFaceEngine/*.cpp \
        -ldlib -lopenblas -llapack -lopencv_dnn -lopencv_imgproc -lopencv_core -ljpeg -lpng -lz -o build/sface_fuzzer
    ;;
*)
    echo "fuzz/run.sh: unknown fuzzer '$target' (decoder or sface)" >&2
    exit 2
    ;;
esac

if [ -z "$(ls -A seeds)" ]; then
    cp "$images"/*.jpg "$images"/*.png seeds/
    small=seeds/small.jpg
    convert "$images/obama.jpg" -resize 96x96 -quality 80 "$small"
    convert "$small" -interlace JPEG seeds/progressive.jpg
    convert "$small" -colorspace Gray seeds/grey.jpg
    convert "$small" -colorspace CMYK seeds/cmyk.jpg
    convert "$small" -sampling-factor 4:2:0 -quality 30 seeds/subsampled.jpg
    convert "$small" -orient RightTop seeds/exif6.jpg
    convert "$small" -orient LeftBottom seeds/exif8.jpg
    convert "$small" -depth 16 PNG48:seeds/rgb16.png
    convert "$small" PNG8:seeds/palette.png
    convert "$small" -colorspace Gray -depth 8 -define png:color-type=0 seeds/grey.png
    convert "$small" -colorspace Gray -alpha on -define png:color-type=4 seeds/grey-alpha.png
    convert "$small" -alpha on PNG32:seeds/rgba.png
    convert "$small" -interlace PNG seeds/interlaced.png
    convert "$small" -colorspace Gray -depth 1 -define png:color-type=0 -define png:bit-depth=1 seeds/bilevel.png
fi

# Every seed once, whole (the photos are up to 900 KB) ...
"./build/${target}_fuzzer" -runs=0 seeds/*
# ... then mutations, capped at 64 KB per input so that runs stay fast; longer seeds are cut, which still reaches
# their headers, EXIF and first rows (and, for a small seed, its face).
ASAN_OPTIONS=detect_leaks=1 "./build/${target}_fuzzer" "corpus/$target" seeds -max_len=65536 \
    -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -artifact_prefix="artifacts/$target-" -print_final_stats=1
