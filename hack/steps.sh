# Sourced by the scripts of hack/: messages prefixed with $PREFIX; need_pkg,
# which installs a missing command from Debian's packages; and step, which
# runs a long command quietly with a line at least every 30 s, so a first
# build (tens of minutes) never looks stuck. step needs $LOGS.
log() { printf '%s: %s\n' "$PREFIX" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PREFIX" "$*" >&2; exit 1; }

# need_pkg COMMAND WHY PACKAGE...: install PACKAGE... from Debian's packages
# when COMMAND is not on PATH (as root; otherwise say what to install).
need_pkg() {
  local cmd=$1 why=$2
  shift 2
  command -v "$cmd" >/dev/null 2>&1 && return
  [ "$(id -u)" -eq 0 ] || die "$cmd is missing (apt-get install $*): $why"
  log "installing $* from Debian's packages"
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null) \
    || die "apt-get install $* failed"
}

# since START: the time passed since $SECONDS was START, as 4m05s.
since() { local d=$((SECONDS - $1)); printf '%dm%02ds' $((d / 60)) $((d % 60)); }

# progress LOGFILE: how far a step is. For a Go build, from its -v output
# (a line per package compiled: an import path alone on its line) and its
# "go: downloading" lines; for anything else, its last line.
progress() {
  local dl built last
  dl=$(grep -c '^go: downloading ' "$1" 2>/dev/null) || true
  built=$(grep -cE '^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~+-]+)*$' "$1" 2>/dev/null) || true
  if [ "${built:-0}" -gt 0 ]; then
    last=$(grep -E '^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~+-]+)*$' "$1" | tail -n 1)
    printf '%s packages compiled (last %s)' "$built" "$last"
  elif [ "${dl:-0}" -gt 0 ]; then
    printf '%s modules downloaded' "$dl"
  elif last=$(tail -n 1 "$1" 2>/dev/null | tr -cd '[:print:]' | cut -c1-100) && [ -n "$last" ]; then
    printf 'last output: %s' "$last"
  else
    printf 'still working'
  fi
}

# step NAME COMMAND...: run a long step with its output in $LOGS/NAME.log, a
# line every 30 s while it runs, and its time when done. On failure the log's
# end is shown.
step() {
  local name=$1; shift
  local logf=$LOGS/$name.log t0=$SECONDS next=$((SECONDS + 30)) pid rc=0
  mkdir -p "$LOGS"
  log "$name: started (output in $logf)"
  "$@" >"$logf" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      log "$name: $(since "$t0"), $(progress "$logf")"
      next=$((SECONDS + 30))
    fi
  done
  wait "$pid" || rc=$?
  if [ "$rc" -ne 0 ]; then
    tail -n 20 "$logf" >&2
    die "$name failed after $(since "$t0") (exit $rc; full output in $logf)"
  fi
  log "$name: done in $(since "$t0")"
}

