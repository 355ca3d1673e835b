# Puts the toolkit's commands on PATH: this checkout's bin/ launchers first, so the recipe runs
# the code beside it (an older `pip install` elsewhere must not shadow it); without a bin/ (an
# installed copy of the recipe), the console scripts of `pip install .`. (Kaldi recipes put
# src/*bin on PATH here.)
__bin="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/bin"
if [ -x "$__bin/train-pauc-metric" ]; then
  export PATH="$__bin:$PATH"
fi
unset __bin
export LC_ALL=C
