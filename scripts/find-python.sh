# shellcheck shell=bash
# Sourced by scripts/compat.sh and scripts/sanity.sh.
# find_python X.Y: print the path of a working pythonX.Y (on PATH, in /usr/bin or /usr/local/bin, or one of
# pyenv's versions, whether or not pyenv has it activated); print nothing when there is none.
find_python() {
  local want=$1 candidate
  local -a candidates=("python$want" "/usr/bin/python$want" "/usr/local/bin/python$want")
  for candidate in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want"; do
    candidates+=("$candidate")
  done
  for candidate in "${candidates[@]}"; do
    if command -v "$candidate" >/dev/null 2>&1 &&
      "$candidate" -c "import sys, venv; sys.exit(sys.version_info[:2] != tuple(map(int, '$want'.split('.'))))" \
        >/dev/null 2>&1; then
      "$candidate" -c 'import sys; print(sys.executable)'
      return 0
    fi
  done
  return 0
}
