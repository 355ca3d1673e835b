#!/usr/bin/env bash
# Links the sets of a data directory laid out as <src>/<set>/{xvector.scp,spk2utt,utt2spk} into
# <dst>/<set>, rewriting the scp files so that their ark paths are absolute (the source scp files
# may hold paths relative to their folder), and links the trial list to <dst>/trials.
#
# Usage: steps/prepare_data.sh [--trials REL] <src-dir> <dst-dir> <set> [<set>...]
#  e.g.: steps/prepare_data.sh /data/etri data train enroll test           (ETRI: <src>/trials)
#        steps/prepare_data.sh --trials eval/trials /data/timit data train eval
# --trials: the trial list, relative to <src-dir> (default: trials)

trials=trials
. "$(dirname "$(readlink -f "$0")")/../utils/parse_options.sh" || exit 1
if [ $# -lt 3 ]; then
  echo "Usage: $0 [--trials REL] <src-dir> <dst-dir> <set> [<set>...]" >&2
  exit 1
fi
src=$(cd "$1" && pwd) || exit 1
dst=$2
shift 2

counts=
for set in "$@"; do
  for f in xvector.scp spk2utt utt2spk; do
    [ -s "$src/$set/$f" ] || { echo "$0: missing $src/$set/$f" >&2; exit 1; }
  done
  mkdir -p $dst/$set || exit 1
  # Relative ark paths are resolved against <src-dir>/<set> when the first one names a file
  # there (Kaldi's layout of a moved data dir, as in TIMIT), otherwise against <src-dir> (ETRI).
  first=$(awk 'NR == 1 { p = $2; sub(/:[0-9]+$/, "", p); print p }' "$src/$set/xvector.scp")
  base=$src
  [ -f "$src/$set/$first" ] && base=$src/$set
  awk -v base="$base" '{ path = $2; if (substr(path, 1, 1) != "/") path = base "/" path;
                         print $1, path }' "$src/$set/xvector.scp" > $dst/$set/xvector.scp || exit 1
  cp "$src/$set/spk2utt" "$src/$set/utt2spk" $dst/$set/ || exit 1
  counts+="${counts:+, }$(wc -l < $dst/$set/xvector.scp) $set"
done
[ -s "$src/$trials" ] || { echo "$0: missing $src/$trials" >&2; exit 1; }
ln -sf "$src/$trials" $dst/trials || exit 1
echo "$0: ${counts} vectors, $(wc -l < $dst/trials) trials in $dst"
