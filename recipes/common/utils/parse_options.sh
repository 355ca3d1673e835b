# Kaldi-style option parsing for recipe scripts (the behaviour of Kaldi's utils/parse_options.sh).
# Source it after the variables that hold the defaults:
#
#   stage=0
#   nj=1
#   . utils/parse_options.sh || exit 1
#
# Every --name value or --name=value at the front of "$@" sets the shell variable name (with -
# turned into _), which must already exist; a variable whose default is true or false only
# accepts true or false. --config FILE sources FILE; --help prints $help_message and exits 0.
# The options are removed from "$@"; parsing stops at the first argument that is not an option,
# or after a lone --.

__po_script=$(basename "$0")
while true; do
  [ -z "${1:-}" ] && break
  case "$1" in
    --)
      shift
      break
      ;;
    --help|-h)
      if [ -n "${help_message:-}" ]; then
        printf '%s\n' "$help_message"
      else
        echo "$__po_script: no help message; the options are the variables set before parsing"
      fi
      exit 0
      ;;
    --*=*)
      __po_name=${1%%=*}
      __po_value=${1#*=}
      shift
      ;;
    --*)
      if [ $# -lt 2 ]; then
        echo "$__po_script: option $1 needs a value" >&2
        exit 1
      fi
      __po_name=$1
      __po_value=$2
      shift 2
      ;;
    *)
      break
      ;;
  esac
  __po_var=$(echo "${__po_name#--}" | tr '-' '_')
  case "$__po_var" in
    ''|[0-9]*|*[!A-Za-z0-9_]*)
      echo "$__po_script: invalid option $__po_name" >&2
      exit 1
      ;;
  esac
  if [ "$__po_var" = config ]; then
    if [ ! -r "$__po_value" ]; then
      echo "$__po_script: cannot read config file $__po_value" >&2
      exit 1
    fi
    . "$__po_value" || exit 1
    continue
  fi
  if [ -z "${!__po_var+set}" ]; then
    echo "$__po_script: invalid option $__po_name (no variable $__po_var to set)" >&2
    exit 1
  fi
  __po_old=${!__po_var}
  if [ "$__po_old" = true ] || [ "$__po_old" = false ]; then
    if [ "$__po_value" != true ] && [ "$__po_value" != false ]; then
      echo "$__po_script: expected \"true\" or \"false\" for $__po_name, got \"$__po_value\"" >&2
      exit 1
    fi
  fi
  printf -v "$__po_var" '%s' "$__po_value"
done
unset __po_script __po_name __po_value __po_var __po_old
true
