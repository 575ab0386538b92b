# Shared by scripts/recall, scripts/test and scripts/lint: create or refresh a virtualenv.
# usage: ensure_venv DIR STAMP_SOURCE pip-install-args...
ensure_venv() {
  local venv="$1" source="$2"; shift 2
  local py="${PYTHON:-python3}"
  if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "project-history-recall needs Python 3.11 or newer (set PYTHON=/path/to/python3.11)" >&2
    exit 2
  fi
  if [ ! -f "$venv/.installed" ] || [ "$source" -nt "$venv/.installed" ]; then
    # pip runs quietly (its output is a wall of text), so say what the silence is and how long it lasts.
    echo "setting up $venv (once; pip works quietly for a minute or two)…" >&2
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
    touch "$venv/.installed"
  fi
}
