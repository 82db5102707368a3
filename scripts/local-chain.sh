# What the private chains' scripts (scripts/monero-local.sh, scripts/litecoin-local.sh) share,
# sourced by each after it set `dir` (its state directory) and `script_name` (what its messages
# start with): messages, reading JSON answers, installing the chain's Debian package, stopping a
# process, and running one command at a time. Not a command of its own.

say() { echo "$script_name: $*" >&2; }
fail() {
  say "$*"
  exit 1
}

# have COMMAND...: every COMMAND is on the PATH
have() {
  local command
  for command in "$@"; do command -v "$command" >/dev/null 2>&1 || return 1; done
}

# install_packages HINT PACKAGE...: installs Debian's PACKAGEs (apt-get update first; as root, or
# through sudo -n); exit 4 when they cannot be had (the test setup tells that apart). HINT says
# what to install where there is no apt-get.
install_packages() {
  local hint="$1"
  shift
  local missing=("$@") sudo=()
  if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo=(sudo -n)
    else
      say "${missing[*]} missing, and installing needs root (apt-get install ${missing[*]})"
      exit 4
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "${missing[*]} missing and there is no apt-get here: install $hint"
    exit 4
  fi
  say "installing ${missing[*]} (apt-get)"
  if ! "${sudo[@]}" apt-get update -qq >"$dir/apt.log" 2>&1 ||
    ! "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >>"$dir/apt.log" 2>&1; then
    tail -n 20 "$dir/apt.log" >&2
    say "could not install ${missing[*]} (see $dir/apt.log)"
    exit 4
  fi
}

# json EXPRESSION: evaluates EXPRESSION on the JSON read from stdin (bound to `j`); prints strings
# and numbers bare, nothing for undefined. Exits 1 when stdin is not JSON.
json() {
  node -e '
    let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
      let j; try { j = JSON.parse(s); } catch { process.exit(1); }
      const v = (0, eval)(`(j) => (${process.argv[1]})`)(j);
      if (v !== undefined && v !== null) process.stdout.write(typeof v === "object" ? JSON.stringify(v) : String(v));
    });' "$1"
}

# still_running PID: a process this script just started has not exited. kill -0 and not the
# program's name: right after the fork the process is still `nohup` (or bash), not yet the daemon,
# and a zombie (exited, not yet reaped) counts as exited.
still_running() {
  kill -0 "$1" 2>/dev/null && [[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" != Z ]]
}

# await_exit NAME PID TRIES TERM_AT: once NAME (PID, its pid in $dir/NAME.pid) was asked to stop,
# waits for it a quarter of a second at a time, TRIES times, sending TERM at try TERM_AT, then
# KILL; forgets its pid file.
await_exit() {
  local name="$1" pid="$2" tries="$3" term_at="$4" i
  for i in $(seq 1 "$tries"); do
    kill -0 "$pid" 2>/dev/null || break
    ((i == term_at)) && kill -TERM "$pid" 2>/dev/null
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "$name (pid $pid) still running after $((tries / 4)) s: killing it"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/$name.pid"
  say "$name stopped"
}

# run_command COMMAND: start, stop, status, env (print_env) or reset, with the script's functions
# of those names.
run_command() {
  mkdir -p "$dir"
  # One start or stop at a time per state directory (two test projects may ask at once).
  exec 9>"$dir/.lock"
  flock 9

  case "${1:-}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    env) print_env ;;
    reset)
      stop
      exec 9>&-
      rm -rf "$dir"
      say "deleted $dir"
      ;;
    *)
      echo "usage: $0 start|stop|status|env|reset" >&2
      exit 2
      ;;
  esac
}
