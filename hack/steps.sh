# Sourced by hack/testenv.sh and hack/demo.sh: messages prefixed with $PREFIX,
# and step, which runs a long command quietly with a line at least every 30 s,
# so a first build (tens of minutes) never looks stuck. Needs $LOGS.
log() { printf '%s: %s\n' "$PREFIX" "$*" >&2; }
die() { printf '%s: error: %s\n' "$PREFIX" "$*" >&2; exit 1; }

# since START: the time passed since $SECONDS was START, as 4m05s.
since() { local d=$((SECONDS - $1)); printf '%dm%02ds' $((d / 60)) $((d % 60)); }

# progress LOGFILE: how far a Go build is, from its -v output and "go: downloading" lines.
progress() {
  local dl built last
  dl=$(grep -c '^go: downloading ' "$1" 2>/dev/null) || true
  built=$(grep -cv '^go: \|^#\|^\s' "$1" 2>/dev/null) || true
  if [ "${built:-0}" -gt 0 ]; then
    last=$(grep -v '^go: \|^#\|^\s' "$1" | tail -n 1)
    printf '%s packages compiled (last %s)' "$built" "$last"
  elif [ "${dl:-0}" -gt 0 ]; then
    printf '%s modules downloaded' "$dl"
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

