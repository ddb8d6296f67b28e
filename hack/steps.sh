# Sourced by the scripts of hack/: messages prefixed with $PREFIX; need_pkg,
# which installs a missing command from Debian's packages; step, which runs
# a long command quietly with a line at least every 30 s, so a first build
# (tens of minutes) never looks stuck; plan, which asks a go command what it
# will compile, so a step can say how far along it is ("412 of 1536 packages
# compiled"); and cache_lock, the lock on the cache folder that every script
# building into it or starting from it holds. step needs $LOGS.
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

# proc_stat PID: the fields of /proc/PID/stat after the command's name, so
# that field N of proc(5) is ${N-2}; nothing when there is no such process.
proc_stat() {
  local stat
  { read -r stat </proc/"$1"/stat; } 2>/dev/null || return 0
  echo "${stat##*) }"
}

# child_cpu PID: the CPU time, in clock ticks, of the children of the shell
# PID that ended and were waited for (cutime and cstime). PID is the
# caller's $BASHPID, read outside $(...), which runs in a subshell of its own.
child_cpu() {
  # shellcheck disable=SC2046 # the fields, split on spaces
  set -- $(proc_stat "$1")
  echo $((${14} + ${15}))
}

# cpu_minutes TICKS: as "3.4 CPU-minutes".
cpu_minutes() {
  local hz tenths
  hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
  tenths=$(($1 * 10 / (hz * 60)))
  printf '%d.%d CPU-minutes' $((tenths / 10)) $((tenths % 10))
}

# A line a go command prints with -v for each package it compiles: an import
# path alone on its line.
PKG_LINE='^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~+-]+)*$'

# How often a step says how far it is, in seconds: under 30 so that, with a
# loaded machine's delays, no gap in the output reaches 30 s.
STEP_EVERY=${STEP_EVERY:-25}

# PLAN_COMPILES and PLAN_VETS: what the next step's go command will compile
# and vet, as plan found it; empty when unknown. That step empties them.
PLAN_COMPILES=
PLAN_VETS=

# progress LOGFILE: how far a step is. For a go command run with -x, the
# compiles (and vet runs) it started, of the totals plan found; with -v, the
# packages it compiled (an import path alone on its line); else its "go:
# downloading" lines; for anything else, its last line.
progress() {
  local dl built last vets of=
  if [ -n "${PLANNING:-}" ]; then
    dl=$(grep -c '^go: downloading ' "$1" 2>/dev/null) || true
    printf 'listing what to compile: %s modules downloaded' "${dl:-0}"
    return
  fi
  built=$(grep -c '/compile -o ' "$1" 2>/dev/null) || true
  if [ "${built:-0}" -gt 0 ]; then
    last=$(grep '/compile -o ' "$1" | tail -n 1 | sed -n 's/.* -p \([^ ]*\).*/\1/p')
  else
    built=$(grep -cE "$PKG_LINE" "$1" 2>/dev/null) || true
    [ "${built:-0}" -gt 0 ] && last=$(grep -E "$PKG_LINE" "$1" | tail -n 1)
  fi
  vets=$(grep -cE '/vet .*vet\.cfg$' "$1" 2>/dev/null) || true
  if [ -n "$PLAN_COMPILES" ] && [ "${built:-0}" -le "$PLAN_COMPILES" ]; then of=" of $PLAN_COMPILES"; fi
  if [ "${built:-0}" -gt 0 ] || [ -n "$of" ]; then
    printf '%s%s packages compiled' "${built:-0}" "$of"
    if [ -n "$PLAN_VETS" ] && [ "$PLAN_VETS" -gt 0 ]; then printf ', %s of %s vetted' "${vets:-0}" "$PLAN_VETS"; fi
    [ -z "$last" ] || printf ' (last %s)' "$last"
    return
  fi
  dl=$(grep -c '^go: downloading ' "$1" 2>/dev/null) || true
  if [ "${dl:-0}" -gt 0 ]; then
    printf '%s modules downloaded' "$dl"
  elif last=$(tail -n 1 "$1" 2>/dev/null | tr -cd '[:print:]' | cut -c1-100) && [ -n "$last" ]; then
    printf 'last output: %s' "$last"
  else
    printf 'still working'
  fi
}

# step [--show] [--keep-going] NAME COMMAND...: run a long step with its
# output in $LOGS/NAME.log, a line every $STEP_EVERY seconds while it runs,
# and its time and CPU time when done. With --show the output is also
# printed as it comes, and the progress line only comes when the command
# has printed nothing for that long. On failure the log's end is shown
# (without -v's package lines) and the script stops; with --keep-going the
# step's exit status is returned instead, the log not shown.
step() {
  local show='' keep=''
  while :; do
    case "$1" in
      --show) show=1; shift ;;
      --keep-going) keep=1; shift ;;
      *) break ;;
    esac
  done
  local name=$1; shift
  local logf=$LOGS/$name.log t0=$SECONDS next=$((SECONDS + STEP_EVERY)) pid rc=0 cpu0 shown=0 size me=$BASHPID
  mkdir -p "$LOGS"
  log "$name: started (output in $logf)"
  cpu0=$(child_cpu "$me")
  : >"$logf"
  "$@" >"$logf" 2>&1 &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ -n "$show" ] && size=$(stat -c %s "$logf") && [ "$size" -gt "$shown" ]; then
      tail -c "+$((shown + 1))" "$logf" | head -c "$((size - shown))"
      shown=$size
      next=$((SECONDS + STEP_EVERY))
    fi
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      log "$name: $(since "$t0"), $(progress "$logf")"
      next=$((SECONDS + STEP_EVERY))
    fi
  done
  wait "$pid" || rc=$?
  PLAN_COMPILES='' PLAN_VETS=''
  if [ -n "$show" ]; then tail -c "+$((shown + 1))" "$logf"; fi
  if [ "$rc" -ne 0 ]; then
    if [ -n "$keep" ]; then
      log "$name: failed after $(since "$t0") (exit $rc; full output in $logf)"
      return "$rc"
    fi
    [ -n "$show" ] || grep -vE "$PKG_LINE" "$logf" | tail -n 20 >&2
    die "$name failed after $(since "$t0") (exit $rc; full output in $logf)"
  fi
  log "$name: done in $(since "$t0") ($(cpu_minutes $(($(child_cpu "$me") - cpu0))))"
}

# plan NAME GO-COMMAND...: run a go command given -n (it prints what it
# would run and runs nothing) as a step, and set PLAN_COMPILES and PLAN_VETS
# to the compiles and vet runs it lists, for the next step (only) to count
# against.
# Cached packages are not listed. It downloads the modules the command
# needs, so the step after it does not.
plan() {
  local name=$1; shift
  PLAN_COMPILES='' PLAN_VETS=''
  PLANNING=1 step "$name" "$@" || return
  PLAN_COMPILES=$(grep -c '/compile -o ' "$LOGS/$name.log") || true
  PLAN_VETS=$(grep -cE '/vet .*vet\.cfg$' "$LOGS/$name.log") || true
}

# The lock on the cache: every script that builds into $CACHE or starts
# processes from it holds it while it does, so two of them (make demo and
# make test, two checkouts) never build into the same folders at once nor
# start two environments over one run folder; the second waits, saying who
# holds it. It is the open file $CACHE/lock, locked with flock through file
# descriptor 9, which servers left running must not inherit (start them
# with 9>&-). KUSIONPR_LOCK_EVERY (seconds, 30) is how often a waiting
# script says it still waits.
LOCK_EVERY=${KUSIONPR_LOCK_EVERY:-30}

# cache_lock WHAT: take the lock on $CACHE for WHAT (a command, said to
# whoever waits), waiting for it with a line every 30 s. Held until the
# script ends. A script run by one that holds it (KUSIONPR_CACHE_LOCKED
# names the same file) does not take it again.
cache_lock() {
  local file=$CACHE/lock t0=$SECONDS
  [ "${KUSIONPR_CACHE_LOCKED:-}" = "$file" ] && return
  need_pkg flock "it keeps two scripts from building into $CACHE at once" util-linux
  mkdir -p "$CACHE"
  exec 9>>"$file"
  # A second's grace: a holder about to let go is not worth a line, and one
  # that just took it has written who it is by then.
  if ! flock -w 1 9; then
    log "waiting for the lock on $CACHE, $(lock_holder "$file")"
    until flock -w "$LOCK_EVERY" 9; do
      log "still waiting for the lock on $CACHE after $(since "$t0"), $(lock_holder "$file")"
    done
    log "got the lock on $CACHE after $(since "$t0")"
  fi
  # Who holds it, for whoever waits next (the lock is on the open file,
  # whatever it holds).
  printf '%s %s\n' "$$" "$(lock_description "$1")" >"$file"
  export KUSIONPR_CACHE_LOCKED=$file
}

# lock_description WHAT: WHAT, this process, what ran it, where, since when.
lock_description() {
  local parent
  parent=$(ps -o args= -p "$PPID" 2>/dev/null | cut -c1-80) || true
  printf '%s (pid %s%s) in %s since %s' "$1" "$$" "${parent:+, run by \`$parent\`}" "$PWD" "$(date '+%H:%M:%S')"
}

# lock_holder FILE: who holds the lock, as the holder wrote it, when that
# process still runs (else it has not written its line yet).
lock_holder() {
  local pid='' what=''
  { read -r pid what <"$1"; } 2>/dev/null || true
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    printf 'held by %s' "$what"
  else
    printf 'held by a process that has not said who it is'
  fi
}
