# shellcheck shell=bash
# Runs kelt's service tool (scripts/kelt_services, Python) with the repository's venv:
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib/services.sh"   # after lib/paths.sh
#   kelt_services kafka|postgres|s3|registry ARGS...            # never returns
kelt_services() {
  local py="$KELT_VENV/bin/python"
  if [[ ! -x "$py" ]]; then
    printf '[%s] ERROR: no Python venv in %s (run: bash scripts/bootstrap.sh)\n' \
      "$1" "$KELT_VENV" >&2
    exit 1
  fi
  PYTHONPATH="$KELT_ROOT/scripts${PYTHONPATH:+:$PYTHONPATH}" exec "$py" -m kelt_services "$@"
}
