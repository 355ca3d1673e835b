# Puts the toolkit's commands on PATH: the console scripts of `pip install .` when they are
# there, otherwise the bin/ launchers of this checkout. (Kaldi recipes put src/*bin on PATH here.)
if ! command -v train-pauc-metric >/dev/null 2>&1; then
  export PATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin:$PATH"
fi
export LC_ALL=C
