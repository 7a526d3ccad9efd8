# Shell helpers shared by the .ci and bench scripts; `source` it.

# A TCP port free on 127.0.0.1 now.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for URL [SECONDS]: returns once URL answers (any status), fails after SECONDS (30).
wait_for() {
  python3 - "$1" "${2:-30}" <<'PY'
import sys, time, urllib.request
deadline = time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        urllib.request.urlopen(sys.argv[1], timeout=1)
        sys.exit(0)
    except Exception:
        time.sleep(0.1)
sys.exit("did not come up: " + sys.argv[1])
PY
}

# CPU seconds (user + system) process PID has used: fields 14 and 15 of /proc/PID/stat,
# counted after the command name, which may hold spaces.
cpu_seconds() {
  sed -E 's/^.*\) //' "/proc/$1/stat" | awk -v hz="$(getconf CLK_TCK)" '{print ($12 + $13) / hz}'
}

# Context switches (voluntary and forced) all threads of process PID have made so far: each
# hand-off between threads costs two on a busy core.
context_switches() {
  cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'
}

# CPU seconds a local PostgreSQL server has used so far: its postmaster, every process it runs
# now, and those that have exited (the postmaster's reaped children: a backend's time counts
# once its client disconnects). Prints nothing when the server at URL is not on this machine
# or its data directory cannot be read.
postgres_cpu_seconds() {
  local directory pid
  directory="$(psql -Atq "$1" -c 'SHOW data_directory' 2>/dev/null)" || return 0
  pid="$(head -1 "$directory/postmaster.pid" 2>/dev/null)" || return 0
  [ -r "/proc/$pid/stat" ] || return 0
  {
    sed -E 's/^.*\) //' "/proc/$pid/stat" | awk '{print $12 + $13 + $14 + $15}'
    for child in $(pgrep -P "$pid"); do
      sed -E 's/^.*\) //' "/proc/$child/stat" 2>/dev/null | awk '{print $12 + $13}'
    done
  } | awk -v hz="$(getconf CLK_TCK)" '{ n += $1 } END { print n / hz }'
}

# CPU seconds the whole machine has been busy so far (every core; not idle, not waiting for
# the disk).
machine_busy_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / { print ($2 + $3 + $4 + $7 + $8 + $9) / hz }' /proc/stat
}

# cpu_mark_before FILE SERVER and cpu_mark_after FILE SERVER, around a run: write to FILE the
# machine's and the local PostgreSQL server's CPU seconds at its start and end, a line each
# ("MACHINE <s> POSTGRES <s>"; POSTGRES empty when the server is not on this machine).
cpu_mark_before() {
  echo "MACHINE $(machine_busy_seconds) POSTGRES $(postgres_cpu_seconds "$2")" >"$1"
}
cpu_mark_after() {
  local machine
  machine="$(machine_busy_seconds)"
  # The run's backends are reaped (and counted) once their clients have gone.
  sleep 0.5
  echo "MACHINE $machine POSTGRES $(postgres_cpu_seconds "$2")" >>"$1"
}
