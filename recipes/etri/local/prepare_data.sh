#!/usr/bin/env bash
# Links a data directory laid out as <src>/{train,enroll,test}/{xvector.scp,spk2utt,utt2spk} and
# <src>/trials into <dst>, rewriting the scp files so that their ark paths are absolute (the
# source scp files may hold paths relative to <src>).
#
# Usage: local/prepare_data.sh <src-dir> <dst-dir>

if [ $# -ne 2 ]; then
  echo "Usage: $0 <src-dir> <dst-dir>" >&2
  exit 1
fi
src=$(cd "$1" && pwd) || exit 1
dst=$2

for set in train enroll test; do
  for f in xvector.scp spk2utt utt2spk; do
    [ -s "$src/$set/$f" ] || { echo "$0: missing $src/$set/$f" >&2; exit 1; }
  done
  mkdir -p $dst/$set || exit 1
  awk -v src="$src" '{ path = $2; if (substr(path, 1, 1) != "/") path = src "/" path;
                       print $1, path }' "$src/$set/xvector.scp" > $dst/$set/xvector.scp || exit 1
  cp "$src/$set/spk2utt" "$src/$set/utt2spk" $dst/$set/ || exit 1
done
[ -s "$src/trials" ] || { echo "$0: missing $src/trials" >&2; exit 1; }
ln -sf "$src/trials" $dst/trials || exit 1
echo "$0: $(wc -l < $dst/train/xvector.scp) train, $(wc -l < $dst/enroll/xvector.scp) enroll," \
  "$(wc -l < $dst/test/xvector.scp) test vectors, $(wc -l < $dst/trials) trials in $dst"
